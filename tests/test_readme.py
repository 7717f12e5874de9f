"""The README is a front door: what bridgebench is and the two commands come first, in few words, and the
commands it names exist. Dated figures live in docs/results.md and the studies' READMEs."""

from __future__ import annotations

import re

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
WORDS_BEFORE_THE_SECOND_COMMAND = 200


def test_the_quick_start_reaches_its_second_command_in_at_most_200_words() -> None:
    blocks = [m.start() for m in re.finditer(r"^```sh$", README, re.MULTILINE)]
    assert len(blocks) >= 2
    before = README[:blocks[1]]
    prose = re.sub(r"```sh\n.*?```", " ", before, flags=re.DOTALL)  # the first command is not prose
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # a link's target is not a word a reader reads
    words = re.findall(r"[\w'.%/-]+", prose)
    assert len(words) <= WORDS_BEFORE_THE_SECOND_COMMAND, len(words)
    commands = re.findall(r"^```sh\n(.*?)\n```", README, re.MULTILINE | re.DOTALL)
    assert commands[:2] == ["bash scripts/install.sh && .venv/bin/bridgebench run lua-vms", "bash scripts/test.sh"]
    assert (REPO / ".ci" / "run").read_text().strip().endswith("bash scripts/test.sh")


def test_a_figure_before_the_commands_table_links_to_where_it_was_measured() -> None:
    head = README[:README.index("## Commands")]
    for sentence in re.split(r"(?<=[.:])\s", head):
        if re.search(r"\b\d+ (minutes|min|s)\b", sentence):
            assert "](docs/results.md" in sentence, sentence
    assert (REPO / "docs" / "results.md").is_file() and (REPO / "docs" / "report-top.png").is_file()


def test_every_script_the_docs_name_exists() -> None:
    """The figures in the docs name the script behind them (evidence/…, scripts/…): each is there."""
    docs = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "studies").glob("*/README.md")]
    script = r"\b((?:studies/[\w-]+/)?(?:evidence|scripts)/[\w/.-]+\.(?:py|sh))\b"  # a study's own: its folder
    named = {m for doc in docs for m in re.findall(script, doc.read_text(encoding="utf-8"))}
    assert named and not sorted(path for path in named if not (REPO / path).is_file())
