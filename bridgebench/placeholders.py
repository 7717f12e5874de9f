"""Placeholders in study commands: {study}, {build}, {probes}, {benchmark}, {benchmark_file}, {param},
{iterations}, {batch}. Only these names are replaced, so shell braces and awk programs pass through untouched."""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
KNOWN = ("study", "build", "probes", "root", "benchmark", "benchmark_file", "param", "iterations", "batch")


class PlaceholderError(ValueError):
    pass


def expand(template: str, values: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        if name in KNOWN:
            raise PlaceholderError(f"{{{name}}} cannot be used here (only {', '.join(sorted(values))})")
        return match.group(0)

    return _PLACEHOLDER.sub(replace, template)


def expand_all(templates: tuple[str, ...] | list[str], values: dict[str, str]) -> list[str]:
    return [expand(t, values) for t in templates]
