"""Which answer is right when no study says: the one most runs gave, if no other answer ties with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def majority(answers: Iterable[str]) -> str | None:
    """The most common answer; None when there is none or two answers tie for the most."""
    counts = Counter(answers)
    if not counts:
        return None
    (top, n), *rest = counts.most_common()
    return top if not rest or rest[0][1] < n else None
