"""The HTML kit: one self-contained page (inline CSS, no script, nothing fetched) in the reports' style, and
its tables. Each kind's HTML report (timing/report/html.py, loadtest/report.py) is a page of this kit."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from bridgebench.report.svg import escape

PLOT_W, PLOT_H = 420, 190  # one run-sequence plot, in CSS pixels (the stylesheet sizes its figures)

CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d1d1d;
       margin: 0 auto; padding: 0 24px 48px; max-width: 1500px; }
h1 { font-size: 22px; margin: 20px 0 4px; } h2 { font-size: 18px; margin: 32px 0 8px;
       border-bottom: 1px solid #ccc; padding-bottom: 2px; } h3 { font-size: 15px; margin: 20px 0 6px; }
.budget { color: #555; margin: 4px 0 10px; }
.headline { font-weight: bold; font-size: 1.1em; margin: 4px 0 6px; }
.warning { background: #fff4d6; border-left: 4px solid #d99a00; padding: 6px 10px; margin: 6px 0 10px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid #d4d4d4; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 6px 0; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
.legend span { display: inline-block; padding: 1px 8px; margin: 0 6px 4px 0; border: 1px solid #ccc;
       border-radius: 3px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; }
.grid { display: flex; flex-wrap: wrap; gap: 10px 14px; }
figure { margin: 0; } figcaption { font-size: 12.5px; margin-bottom: 1px; }
svg { display: block; max-width: 100%; height: auto; font-family: inherit; }
svg text { font-size: 10.5px; fill: #333; }
details { margin: 8px 0 14px; } summary { cursor: pointer; font-weight: 600; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 6px; margin: 2px 0; max-height: 14em;
      overflow: auto; white-space: pre-wrap; font-size: 12px; }
.muted { color: #666; }
.note { color: #555; font-size: 13px; }
""" + f"figure.run {{ width: {PLOT_W}px; }}\n"


def page(title: str, body: str) -> str:
    """A self-contained HTML document in the reports' style."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}</style></head><body>{body}</body></html>\n")


# --- pieces of the page ------------------------------------------------------------------------------
def table(columns: Iterable[str], rows: Iterable[Sequence[str]], *, raw: bool = False,
           row_style: Callable[[int], str] | None = None, numeric: Iterable[int] = ()) -> str:
    """An HTML table; cells are escaped unless raw (then they are already HTML)."""
    nums = set(numeric)
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = []
    for k, row in enumerate(rows):
        style = f' style="{row_style(k)}"' if row_style else ""
        cells = "".join(f'<td{" class=num" if i in nums else ""}>{c if raw else escape(c)}</td>'
                        for i, c in enumerate(row))
        body.append(f"<tr{style}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
