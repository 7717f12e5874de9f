"""Writes the agreement corpus (bodies/*.json and cases.json) from valid.json: the valid request, then
one invalid request per constraint kind of the spec. Run it after changing valid.json or the cases:
    python3 make_corpus.py"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
VALID = json.loads((HERE / "valid.json").read_text())
HEADERS = {"Content-Type": "application/json", "X-Request-Id": "req-1"}


def changed(**edits: Any) -> dict[str, Any]:
    body = copy.deepcopy(VALID)
    for dotted, value in edits.items():
        *parents, last = dotted.split("__")
        node = body
        for p in parents:
            node = node[p]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return body


DELETE = object()

# name -> body (a JSON value, or raw text for what is not JSON)
BODIES: dict[str, Any] = {
    "valid": VALID,
    "required-missing": changed(email=DELETE),
    "type-string": changed(name=42),
    "type-integer": changed(age="36"),
    "integer-fraction": changed(age=36.5),
    "minimum": changed(age=-1),
    "maximum": changed(age=151),
    "number-maximum": changed(score=100.5),
    "type-boolean": changed(active="yes"),
    "min-length": changed(name=""),
    "max-length": changed(name="x" * 65),
    "pattern": changed(email="ada@example"),
    "enum": changed(role="owner"),
    "max-items": changed(tags=[f"t{i}" for i in range(11)]),
    "unique-items": changed(tags=["math", "math"]),
    "items-type": changed(tags=["math", 7]),
    "additional-properties": changed(nickname="Ada"),
    "nested-required": changed(address__city=DELETE),
    "nested-pattern": changed(address__zip="1234"),
    "nested-additional": changed(address__country="UK"),
    "additional-properties-schema": changed(metadata__since=1843),
    "max-properties": changed(metadata={f"k{i}": "v" for i in range(9)}),
    "type-object": changed(address="London"),
    "not-an-object": [VALID],
    "not-json": "{\"name\": ",
}
# Requests whose body is valid but whose path, query or headers are not: only whole-request validators judge them.
REQUESTS = {
    "path-minimum": {"path": "/users/0"},
    "path-type": {"path": "/users/abc"},
    "query-maximum": {"query": "limit=101"},
    "query-minimum": {"query": "limit=0"},
    "query-type": {"query": "limit=ten"},
    "header-missing": {"headers": {"Content-Type": "application/json"}},
}


def main() -> None:
    folder = HERE / "bodies"
    folder.mkdir(exist_ok=True)
    cases = []
    for name, body in BODIES.items():
        text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
        (folder / f"{name}.json").write_text(text)
        cases.append({"name": name, "scope": "body", "valid": name == "valid", "method": "POST",
                      "path": "/users/42", "query": "limit=10", "headers": HEADERS, "body_file": f"bodies/{name}.json"})
    for name, change in REQUESTS.items():
        cases.append({"name": name, "scope": "request", "valid": False, "method": "POST", "path": "/users/42",
                      "query": "limit=10", "headers": HEADERS, "body_file": "bodies/valid.json", **change})
    (HERE / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")


if __name__ == "__main__":
    main()
