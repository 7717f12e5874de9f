"""The markdown kit: a table and a report's headline, as every kind's markdown report writes them."""

from __future__ import annotations


def table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return [line(columns), "|" + "---|" * len(columns), *(line(r) for r in rows), ""]


def headline(lines: list[str]) -> list[str]:
    """A report's opening answer: the first line in bold, the others as a list (every kind's report)."""
    if not lines:
        return []
    return [f"**{lines[0]}**", "", *([*(f"- {line}" for line in lines[1:]), ""] if lines[1:] else [])]
