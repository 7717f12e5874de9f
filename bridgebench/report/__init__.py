"""The kits both kinds' reports are made with: numbers in words and units (fmt.py), tables on a terminal
(terminal.py), markdown tables (markdown.py), an HTML page and its tables (html.py) and SVG figures (svg.py).
Each kind's report lies with the kind: timing/report/ and loadtest/report.py."""

TERMINAL = "terminal"  # the report format that is not a file: rich, on the terminal
