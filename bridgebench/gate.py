"""A CI gate over a diff's verdicts (`bridgebench diff A B --fail-on slower`): which verdicts fail the job,
and the one line that says why it failed. The verdicts are the differ's, in the headline's words."""

from __future__ import annotations

from collections.abc import Iterable

from bridgebench.timing.diff_rules import VERDICTS, Comparison


class GateError(ValueError):
    """A --fail-on or --margin the gate cannot take; one line, ready to print."""


def verdicts(values: Iterable[str]) -> tuple[str, ...]:
    """The verdicts named by --fail-on (given more than once, or comma-separated), checked."""
    named = tuple(dict.fromkeys(w.strip().lower() for v in values for w in v.split(",") if w.strip()))
    unknown = [w for w in named if w not in VERDICTS]
    if unknown or not named:
        raise GateError(f"--fail-on {','.join(unknown) or '(nothing)'}: expected verdicts among "
                        f"{', '.join(VERDICTS)}")
    return named


def fraction(text: str) -> float:
    """2% or 0.02 as 0.02; ValueError for anything else."""
    value = text.strip()
    return float(value[:-1]) / 100 if value.endswith("%") else float(value)


def share(text: str, option: str = "--margin") -> float:
    """2% or 0.02 as 0.02: a share above 0 and below 1."""
    try:
        number = fraction(text)
    except ValueError:
        raise GateError(f"{option} {text!r}: expected a share such as 2% or 0.02") from None
    if not 0 < number < 1:
        raise GateError(f"{option} {text!r}: expected a share above 0 and below 1")
    return number


def failing(comparisons: Iterable[Comparison], fail_on: tuple[str, ...]) -> str | None:
    """One line naming the benchmarks whose verdict fails the gate, or None when none does."""
    hits: dict[str, list[str]] = {}
    for c in comparisons:
        if c.verdict in fail_on:
            hits.setdefault(c.verdict, []).append(c.benchmark if c.a.split(":")[-1] == c.b.split(":")[-1]
                                                  else f"{c.benchmark} ({c.b})")
    if not hits:
        return None
    parts = [f"{verdict} on {len(names)} ({', '.join(names[:8])}{', …' if len(names) > 8 else ''})"
             for verdict, names in hits.items()]
    return f"gate failed (--fail-on {','.join(fail_on)}): " + "; ".join(parts)
