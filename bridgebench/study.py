"""Load and validate a study file (studies/<name>/study.toml).

Standard library only: the installer reads the Debian packages a study needs before the venv exists.
Every error names the file, the line where it can be found, the key and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridgebench.instructions import METRICS, SECONDS

# How the members of a lock-step block take their turns (timing/lockstep.run_block), named here so that a study
# file's budget can choose one: SEPARATE, one member's whole turn after another's; INTERLEAVED, the baseline and
# its twins one iteration each in a drawn order, the others alone; TWINS, those at the same time (every member then
# timed by its CPU time); TOGETHER, every member at the same time, timed so.
SEPARATE, INTERLEAVED, TOGETHER, TWINS = "separate", "interleaved", "together", "twins"
TURNS = (SEPARATE, INTERLEAVED, TOGETHER, TWINS)

REPO_ROOT = Path(__file__).resolve().parents[1]
# A checkout's probes, or an installed bridgebench's (pyproject's data-files put them under the environment).
PROBES_DIR = next((d for d in (REPO_ROOT / "probes", Path(sys.prefix) / "share" / "bridgebench" / "probes")
                   if d.is_dir()), REPO_ROOT / "probes")
STUDIES_DIR = REPO_ROOT / "studies"


class StudyError(Exception):
    """A study file that cannot be used; the message is one line, ready to print."""


@dataclass(frozen=True)
class Budget:
    process_executions: int  # with an adaptive budget, the first rounds every cell gets
    iterations: int
    timeout_s: float
    # Adaptive (all three or none): more rounds for the cells whose steady-state 99% CI half-width is above
    # until_ci of their estimate or whose class changed since the last round, up to max_process_executions
    # per cell, and until max_time_s of process executions have run.
    until_ci: float | None = None
    max_process_executions: int | None = None
    max_time_s: float | None = None
    # With a baseline: a cell settles when its ratio to the baseline is decided (question.py), not by its CI,
    # judged at the look points of look_growth (options.look_points; 1: every round); a ratio decided faster or
    # slower runs on until its CI is also within ±decided_within (None: once decided).
    until_decided: bool = False
    look_growth: float = 1.0
    decided_within: float | None = None
    # The executions after a cell's first ones make this share of its iterations (None: all of them).
    later_share: float | None = None
    # …or its benchmark's warm-up (from its first executions, classified) and this many more (None: all).
    later_steady: int | None = None
    # When the time left cannot decide every open ratio, blocks go first to those nearest an answer
    # (campaign/nearest.py).
    nearest_first: bool = False
    # Adaptive, lock-step blocks taking separate or interleaved turns: in the later blocks every turn lasts about
    # this long, in as many iterations as take it (None: the fewest-sized member takes one iteration a turn;
    # lockstep.turns and timed_turns).
    turn_s: float | None = None
    # A fixed budget whose ratios rest on blocks (or executions) that reach a steady state: a benchmark whose
    # ratio rests on fewer than process_executions of them, where both sides have some, runs more blocks, at
    # most as many again (campaign/replace.py).
    replace_dropped: bool = False
    # Iterations sized per cell: as many as take about execution_s (from a short run at the real size after
    # the answer check), at least min_iterations, at most iterations.
    execution_s: float | None = None
    min_iterations: int | None = None
    # The mechanisms a campaign of this budget runs when the command line names none (None: every probe).
    mechanisms: tuple[str, ...] | None = None
    metric: str = SECONDS  # what an iteration measures: wall time, or instructions (instructions.py)
    execution_ir: float | None = None  # counted: iterations sized to about this many instructions an execution
    # Benchmarks at their count_param (True) or their param (False); None: count_param where instructions are
    # counted (callgrind is many times slower), param where time is (timing.options_for).
    count_sizes: bool | None = None
    # How its lock-step blocks take turns (TURNS; None: separate), inherited as mechanisms are; `run --turns`
    # overrides it, and a campaign that is not in lock-step blocks (counted, or `--pairing sequential`) has none.
    turns: str | None = None


@dataclass(frozen=True)
class Mechanism:
    name: str
    label: str
    run: tuple[str, ...]  # a probe, timed in iterations; empty for a server
    build: tuple[str, ...] = ()
    build_inputs: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    debian: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    version: tuple[str, ...] = ()
    # Where a budget sizes iterations to a time: never fewer than this for this mechanism (a JIT, whose
    # warm-up the classification must see: 50, methodology §4).
    min_iterations: int | None = None
    # A server, measured under load (bridgebench/loadtest): its command ({port} is chosen free), the path whose
    # HTTP answer says it is ready, how long to wait for that, and the CPUs it is pinned to (taskset -c).
    serve: tuple[str, ...] = ()
    ready: str = "/"
    ready_timeout_s: float = 30.0
    cpus: str | None = None
    # The same program as this mechanism under another name (its table is the twin's, plus its own keys):
    # an A/A pair, whose true ratio is 1, for measuring how often the intervals are wrong.
    twin_of: str | None = None
    # A build of the baseline's VM (a fork, a copy, a change): in lock-step blocks taking turns as twins (TWINS) it
    # takes its turns at the same time as the baseline, every other member alone. A twin_of the baseline is one.
    twin: bool = False

    @property
    def is_server(self) -> bool:
        return bool(self.serve)


@dataclass(frozen=True)
class Request:
    """One kind of request a load sends, `weight` in every sum of the weights."""

    name: str
    weight: int
    method: str
    path: str
    headers: dict[str, str]
    body_file: str | None
    expect_status: int | None  # the answer check: the status every server must give it (None: the majority)
    # ...except these servers, which must give this status instead (a server that does not validate gives
    # 200 to an invalid request)
    expect_status_of: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadBudget:
    process_executions: int  # of each phase and server, the server started afresh for each
    warmup_s: float  # sent, not recorded
    duration_s: float  # recorded; the run ends at warmup + duration (a hard bound)


@dataclass(frozen=True)
class Load:
    """How the study's servers are loaded: a closed-loop saturation phase, then constant rates at
    `fractions` of each server's measured saturation, and (when `overload` is set) one above it."""

    requests: tuple[Request, ...]
    connections: int
    fractions: tuple[float, ...]
    overload: float | None  # a target rate this many times the saturation (the method of wrk2 at 50 000/s)
    driver_cpus: str | None
    budgets: dict[str, LoadBudget]
    # The cheapest server the study can run (an nginx `return 204`): measured at saturation only, it is the
    # most this driver can send here, and every other figure is shown as a share of it.
    ceiling: str | None = None
    # Where a server answers what it counted itself (JSON, loadtest/totals.py), asked settle_s after each run.
    totals: str | None = None
    settle_s: float = 0.5


@dataclass(frozen=True)
class Benchmark:
    name: str
    param: str
    check_param: str
    file: str
    expect: str | None = None
    # The mechanisms that run this benchmark (None: all). A benchmark some mechanisms cannot do (an
    # operation only one language has) or should not (too slow at this size) leaves them out.
    mechanisms: tuple[str, ...] | None = None
    # The parameter of a campaign that counts instructions (callgrind runs a program many times slower
    # than it runs alone), and of a timed one at the counted sizes (to compare the two); None: `param`.
    count_param: str | None = None

    def param_for(self, count_sizes: bool) -> str:
        return self.count_param if count_sizes and self.count_param is not None else self.param


@dataclass(frozen=True)
class Study:
    name: str
    path: Path
    title: str
    seed: str | None
    baseline: str | None
    budgets: dict[str, Budget]
    mechanisms: dict[str, Mechanism]
    benchmarks: dict[str, Benchmark]
    raw: dict[str, Any]
    load: Load | None = None
    # Added to every mechanism's environment when counted (run --metric instructions): valgrind runs a
    # program tens of times slower, so a wall-clock deadline of the study's must be widened there.
    count_env: dict[str, str] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def argument(self) -> str:
        """How a command names this study: its name under studies/, else the path to its folder."""
        return self.name if self.dir.resolve() == (STUDIES_DIR / self.name).resolve() else str(self.dir)

    @property
    def servers(self) -> list[str]:
        return [m for m, mech in self.mechanisms.items() if mech.is_server]

    @property
    def twins(self) -> frozenset[str]:
        """The baseline's twins: the mechanisms that say `twin`, and the baseline's `twin_of`s."""
        return frozenset(m for m, mech in self.mechanisms.items()
                         if mech.twin or (self.baseline is not None and mech.twin_of == self.baseline))

    def runs(self, benchmark: str, mechanism: str) -> bool:
        """Whether the mechanism runs the benchmark (the benchmark's `mechanisms`, else every mechanism
        that is not a server: servers are measured under load, not in iterations)."""
        chosen = self.benchmarks[benchmark].mechanisms
        if chosen is None:
            return not self.mechanisms[mechanism].is_server
        return mechanism in chosen

    def cells(self, benchmarks: tuple[str, ...] | list[str], mechanisms: tuple[str, ...] | list[str]
              ) -> list[tuple[str, str]]:
        """The benchmark × mechanism pairs a campaign of these benchmarks and mechanisms measures."""
        return [(b, m) for b in benchmarks for m in mechanisms if self.runs(b, m)]

    def config_hash(self) -> str:
        """Identifies what a campaign measured: resuming refuses a study that has changed since."""
        blob = json.dumps(self.raw, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def files_hash(self) -> str:
        """The study's own files (benchmarks, sources, scripts; not what builds and runs write there, nor its
        markdown, which describes and does not run), so that a diff between campaigns can say the code they
        measured differs although the study file does not."""
        paths = []
        for folder, subfolders, files in os.walk(self.dir):
            here = Path(folder)
            # never walked into: what builds and runs write (an outside study builds beside itself), caches
            subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "__pycache__"
                             and not (here == self.dir and d in FILES_NOT_HASHED)]
            paths += [here / name for name in files if not name.startswith(".")
                      and Path(name).suffix not in (".sqlite", ".pyc", ".md") and (here / name).is_file()]
        digest = hashlib.sha256()
        for path in sorted(paths):
            digest.update(f"{path.relative_to(self.dir).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()[:16]


FILES_NOT_HASHED = ("build", "results")  # a study's folders that builds and runs write into

# Keys each table accepts: name -> (type description, checker).
_STR = ("a string", lambda v: isinstance(v, str))
_INT_POS = ("a positive integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0)
MAX_TIMEOUT_S = 86400.0  # one process execution may take up to a day; inf or 1e300 is a typo, not a plan
_TIMEOUT = ("a number of seconds above 0 and at most 86400",
            lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= MAX_TIMEOUT_S)
_STR_LIST = ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
_NONEMPTY_STR_LIST = (
    "a non-empty list of strings",
    lambda v: isinstance(v, list) and len(v) > 0 and all(isinstance(x, str) for x in v),
)
_STR_TABLE = ("a table of strings", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()))
_SCALAR = (
    "a string or a number",
    lambda v: isinstance(v, str | int | float) and not isinstance(v, bool),
)

_BOOL = ("true or false", lambda v: isinstance(v, bool))
_NUMBER_POS = ("a number above 0", lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v > 0)
_FRACTION = ("a fraction above 0 and below 1 (0.02 is 2%)",
             lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1)
_GROWTH = ("a number from 1 to 4 (1: after every round)",
           lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 1 <= v <= 4)
_TURN_S = ("0 (the later turns by iterations) or a number of seconds above 0 and at most 86400",
           lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= MAX_TIMEOUT_S)
_STUDY_KEYS = {"name": _STR, "title": _STR, "seed": _STR, "baseline": _STR, "benchmark_file": _STR,
               "headline": _STR, "equivalence": _FRACTION, "count_env": _STR_TABLE}
DEFAULT_EQUIVALENCE = 0.02  # a ratio whose interval lies within ±2% of 1: "equivalent within 2%"
_BUDGET_KEYS = {"process_executions": _INT_POS, "iterations": _INT_POS, "timeout_s": _TIMEOUT,
                "until_ci": _FRACTION, "max_process_executions": _INT_POS, "max_time_s": _TIMEOUT,
                "until_decided": _BOOL, "execution_s": _TIMEOUT, "min_iterations": _INT_POS,
                "look_growth": _GROWTH, "decided_within": _FRACTION, "later_share": _FRACTION,
                "later_steady": _INT_POS, "nearest_first": _BOOL, "replace_dropped": _BOOL,
                "mechanisms": _NONEMPTY_STR_LIST,
                "metric": (" or ".join(METRICS), lambda v: v in METRICS),
                "count_sizes": _BOOL,
                "execution_ir": _NUMBER_POS,
                "turns": (" or ".join(TURNS), lambda v: v in TURNS),
                "turn_s": _TURN_S,
                "based_on": _STR}
_PATH = ("an HTTP path starting with '/'", lambda v: isinstance(v, str) and v.startswith("/"))
_CPUS = ("a CPU list for taskset -c, such as \"0\" or \"0-1\"",
         lambda v: isinstance(v, str) and re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", v) is not None)
_MECHANISM_KEYS = {
    "label": _STR,
    "run": _NONEMPTY_STR_LIST,
    "serve": _NONEMPTY_STR_LIST,
    "ready": _PATH,
    "ready_timeout_s": _TIMEOUT,
    "cpus": _CPUS,
    "build": _STR_LIST,
    "build_inputs": _STR_LIST,
    "commands": _STR_LIST,
    "debian": _STR_LIST,
    "env": _STR_TABLE,
    "version": _STR_LIST,
    "min_iterations": _INT_POS,
    "twin_of": _STR,
    "twin": _BOOL,
}
_BENCHMARK_KEYS = {"param": _SCALAR, "check_param": _SCALAR, "count_param": _SCALAR, "file": _STR, "expect": _STR,
                   "mechanisms": _NONEMPTY_STR_LIST}
_SECONDS_LOAD = ("a number of seconds from 0 to 3600",
                 lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 3600)
_LOAD_BUDGET_KEYS = {"process_executions": _INT_POS, "warmup_s": _SECONDS_LOAD, "duration_s": _SECONDS_LOAD}
_LOAD_KEYS = _LOAD_BUDGET_KEYS | {
    "connections": _INT_POS,
    "fractions": ("a non-empty list of fractions above 0 and at most 1",
                  lambda v: isinstance(v, list) and len(v) > 0 and all(
                      isinstance(x, int | float) and not isinstance(x, bool) and 0 < x <= 1 for x in v)),
    "overload": ("a factor above 1 (2 sends twice the saturation rate)",
                 lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v > 1),
    "driver_cpus": _CPUS,
    "ceiling": _STR,
    "totals": _PATH,
    "settle_s": ("a number of seconds from 0 to 60",
                 lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 60),
}
_METHOD = ("an HTTP method in capitals", lambda v: isinstance(v, str) and re.fullmatch(r"[A-Z]+", v) is not None)
_STATUS = ("an HTTP status from 100 to 599",
           lambda v: isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599)
_REQUEST_KEYS = {"weight": _INT_POS, "method": _METHOD, "path": _PATH, "headers": _STR_TABLE, "body_file": _STR,
                 "expect_status": _STATUS,
                 "expect_status_of": ("a table of server names to HTTP statuses", lambda v: isinstance(v, dict) and all(
                     _STATUS[1](x) for x in v.values()))}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class _Locator:
    """Finds the line of a table or key in the TOML text, so errors can say file:line."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line(self, table: str, key: str | None = None) -> int:
        header = re.compile(r"^\s*\[\s*" + re.escape(table).replace(r"\.", r"\s*\.\s*") + r"\s*\]")
        start = next((i for i, ln in enumerate(self.lines) if header.match(ln)), None)
        if start is None:
            return 1
        if key is None:
            return start + 1
        key_re = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(start + 1, len(self.lines)):
            if re.match(r"^\s*\[", self.lines[i]):
                break
            if key_re.match(self.lines[i]):
                return i + 1
        return start + 1

    def error(self, table: str, key: str | None, message: str) -> StudyError:
        where = f"{table}.{key}" if key else table
        return StudyError(f"{self.path}:{self.line(table, key)}: {where}: {message}")


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def _check_table(loc: _Locator, table: str, data: Any, keys: dict, required: tuple[str, ...] = ()) -> dict:
    if not isinstance(data, dict):
        raise loc.error(table, None, f"expected a table, got {_describe(data)}")
    for key, value in data.items():
        if key not in keys:
            raise loc.error(table, key, f"unknown key (expected one of: {', '.join(sorted(keys))})")
        what, ok = keys[key]
        if not ok(value):
            raise loc.error(table, key, f"expected {what}, got {_describe(value)}")
    for key in required:
        if key not in data:
            raise loc.error(table, None, f"missing required key '{key}' ({keys[key][0]})")
    return data


def _budget(loc: _Locator, table: str, data: Any, base: Budget | None) -> Budget:
    required = () if base else ("process_executions", "iterations")
    data = _check_table(loc, table, data, _BUDGET_KEYS, required)
    adaptive = [k for k in ("until_ci", "max_process_executions", "max_time_s") if k in data]
    if adaptive and len(adaptive) != 3:
        missing = sorted({"until_ci", "max_process_executions", "max_time_s"} - set(adaptive))
        raise loc.error(table, adaptive[0], f"an adaptive budget also needs {', '.join(missing)}")
    budget = Budget(
        process_executions=data.get("process_executions", base.process_executions if base else 0),
        iterations=data.get("iterations", base.iterations if base else 0),
        timeout_s=float(data.get("timeout_s", base.timeout_s if base else 300.0)),
        until_ci=data.get("until_ci"),
        max_process_executions=data.get("max_process_executions"),
        max_time_s=float(data["max_time_s"]) if "max_time_s" in data else None,
        until_decided=bool(data.get("until_decided", False)),
        look_growth=float(data.get("look_growth", 1.0)),
        decided_within=data.get("decided_within"),
        later_share=data.get("later_share"),
        later_steady=data.get("later_steady"),
        nearest_first=bool(data.get("nearest_first", False)),
        replace_dropped=bool(data.get("replace_dropped", False)),
        execution_s=float(data["execution_s"]) if "execution_s" in data else None,
        min_iterations=data.get("min_iterations"),
        mechanisms=tuple(data["mechanisms"]) if "mechanisms" in data else base.mechanisms if base else None,
        metric=data.get("metric", SECONDS),
        execution_ir=float(data["execution_ir"]) if "execution_ir" in data else None,
        count_sizes=bool(data["count_sizes"]) if "count_sizes" in data else None,
        turns=data.get("turns", base.turns if base else None),
        turn_s=(float(data["turn_s"]) or None) if "turn_s" in data else None,  # 0: by iterations, over a base's
    )
    if budget.min_iterations is not None and budget.min_iterations > budget.iterations:
        raise loc.error(table, "min_iterations", f"expected at most iterations ({budget.iterations})")
    if budget.until_decided and budget.until_ci is None:
        raise loc.error(table, "until_decided", "until_decided needs an adaptive budget (until_ci, "
                        "max_process_executions, max_time_s)")
    for key in ("look_growth", "decided_within", "nearest_first"):
        if key in data and not budget.until_decided:
            raise loc.error(table, key, f"{key} needs a budget aimed at the question (until_decided = true)")
    if budget.replace_dropped and budget.until_ci is not None:
        raise loc.error(table, "replace_dropped", "replace_dropped is for a fixed budget: an adaptive one runs "
                        "rounds until its cells settle")
    for key in ("later_share", "later_steady", "turn_s"):
        if key in data and budget.until_ci is None:
            raise loc.error(table, key, f"{key} needs an adaptive budget (until_ci, max_process_executions, "
                            "max_time_s)")
    if "later_share" in data and "later_steady" in data:
        raise loc.error(table, "later_steady", "give later_share or later_steady, not both: each says how long "
                        "the later executions are")
    if budget.max_process_executions is not None and budget.max_process_executions < budget.process_executions:
        raise loc.error(table, "max_process_executions", f"expected at least process_executions "
                        f"({budget.process_executions})")
    return budget


def _with_twin(loc: _Locator, table: str, data: dict, raw: dict) -> dict:
    """A twin's table: the table of the mechanism it twins, with its own keys over it."""
    twin = data.get("twin_of")
    if twin is None:
        return data
    original = raw.get(twin)
    if not isinstance(original, dict) or twin == table.removeprefix("mechanisms."):
        raise loc.error(table, "twin_of", f"expected another mechanism of this study, got {twin!r}")
    if "twin_of" in original:
        raise loc.error(table, "twin_of", f"{twin} is itself a twin (of {original['twin_of']}): name the original")
    return {**_check_table(loc, f"mechanisms.{twin}", original, _MECHANISM_KEYS), **data}


def _with_base(loc: _Locator, name: str, data: Any, default: dict, named: dict, seen: tuple[str, ...] = ()) -> Any:
    """A named budget's table: with `based_on`, the table of the budget it names (adaptive keys too), with its own
    keys over it; without, as written (keys it leaves out then come from the default, adaptive ones never)."""
    if not isinstance(data, dict) or "based_on" not in data:
        return data
    table, base = f"budget.{name}", data["based_on"]
    if base == "default":
        original = default
    elif isinstance(base, str) and base in named and base not in (name, *seen):
        original = _with_base(loc, base, named[base], default, named, (*seen, name))
    elif base in seen:
        raise loc.error(table, "based_on", f"budgets based on each other in a circle ({' → '.join((*seen, name))})")
    else:
        raise loc.error(table, "based_on", f"expected \"default\" or another budget of this study, got {base!r}")
    return {**original, **{k: v for k, v in data.items() if k != "based_on"}}


def read_study(path: Path) -> Study:
    """Parse and validate a study file; raise StudyError with a one-line message on any problem."""
    path = Path(path)
    if path.is_dir():
        path = path / "study.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise StudyError(f"{path}: cannot read study file: {err.strerror}") from err
    except UnicodeDecodeError as err:
        line = path.read_bytes()[:err.start].count(b"\n") + 1
        raise StudyError(f"{path}:{line}: not UTF-8 text (byte {err.object[err.start]:#04x}); TOML files are "
                         "UTF-8") from err
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        match = re.search(r"line (\d+)", str(err))
        line = match.group(1) if match else "1"
        raise StudyError(f"{path}:{line}: invalid TOML: {err}") from err
    loc = _Locator(path, text)

    for key in raw:
        if key not in ("study", "budget", "mechanisms", "benchmarks", "load"):
            raise StudyError(f"{path}:{loc.line(key)}: {key}: unknown table (expected study, budget, mechanisms, "
                             "benchmarks, load)")
    def require(key: str) -> Any:
        if key not in raw:
            raise StudyError(f"{path}:1: missing table [{key}]")
        return raw[key]

    require("study")
    meta = _check_table(loc, "study", raw["study"], _STUDY_KEYS, ("name",))
    if not _NAME.match(meta["name"]):
        raise loc.error("study", "name", f"expected letters, digits, '.', '_' or '-', got {meta['name']!r}")

    budgets: dict[str, Budget] = {}
    if "budget" in raw or "benchmarks" in raw or "load" not in raw:  # a study of servers only needs none
        budget_raw = require("budget")
        budget_raw = dict(budget_raw) if isinstance(budget_raw, dict) else budget_raw
        named = {}
        if isinstance(budget_raw, dict):
            named = {k: budget_raw.pop(k) for k in list(budget_raw) if isinstance(budget_raw[k], dict)}
        if isinstance(budget_raw, dict) and "based_on" in budget_raw:
            raise loc.error("budget", "based_on", "only a named budget can be based on another")
        default = _budget(loc, "budget", budget_raw, None)
        budgets["default"] = default
        for name, sub in named.items():
            budgets[name] = _budget(loc, f"budget.{name}", _with_base(loc, name, sub, budget_raw, named), default)

    mechanisms: dict[str, Mechanism] = {}
    if not isinstance(require("mechanisms"), dict) or not raw["mechanisms"]:
        raise StudyError(f"{path}:{loc.line('mechanisms')}: mechanisms: expected at least one [mechanisms.NAME]")
    for name, data in raw["mechanisms"].items():
        table = f"mechanisms.{name}"
        if not _NAME.match(name):
            raise loc.error(table, None, "mechanism names use letters, digits, '.', '_' or '-'")
        data = _check_table(loc, table, data, _MECHANISM_KEYS)
        data = _with_twin(loc, table, data, raw["mechanisms"])
        if ("run" in data) == ("serve" in data):
            raise loc.error(table, None, "expected either 'run' (a probe timed in iterations) or 'serve' (a server "
                            "measured under [load]), not both or neither")
        for key in ("ready", "ready_timeout_s", "cpus"):
            if key in data and "serve" not in data:
                raise loc.error(table, key, "only a server ('serve') has this key")
        mechanisms[name] = Mechanism(
            name=name,
            label=data.get("label", name),
            run=tuple(data.get("run", ())),
            serve=tuple(data.get("serve", ())),
            ready=data.get("ready", "/"),
            ready_timeout_s=float(data.get("ready_timeout_s", 30.0)),
            cpus=data.get("cpus"),
            build=tuple(data.get("build", ())),
            build_inputs=tuple(data.get("build_inputs", ())),
            commands=tuple(data.get("commands", ())),
            debian=tuple(data.get("debian", ())),
            env=dict(data.get("env", {})),
            version=tuple(data.get("version", ())),
            min_iterations=data.get("min_iterations"),
            twin_of=data.get("twin_of"),
            twin=data.get("twin", False),
        )
    probes = [m for m, mech in mechanisms.items() if not mech.is_server]
    for name, budget in budgets.items():
        table = "budget" if name == "default" else f"budget.{name}"
        unknown = [m for m in budget.mechanisms or () if m not in probes]
        if unknown:
            raise loc.error(table, "mechanisms", f"no mechanism timed in iterations named {', '.join(unknown)} "
                            f"(has: {', '.join(probes)})")
        if budget.turns is not None and "baseline" not in meta:
            raise loc.error(table, "turns", "only lock-step blocks take turns, and a study without a baseline asks "
                            "no ratio question to run them for")

    file_template = meta.get("benchmark_file", "{benchmark}")
    benchmarks: dict[str, Benchmark] = {}
    load = _load_table(loc, raw["load"], mechanisms) if "load" in raw else None
    if "benchmarks" not in raw and load is None:
        raise StudyError(f"{path}:1: missing table [benchmarks] (a study measures benchmarks, or servers under "
                         "[load], or both)")
    if not isinstance(raw.get("benchmarks", {}), dict) or raw.get("benchmarks") == {}:
        raise StudyError(f"{path}:{loc.line('benchmarks')}: benchmarks: expected at least one [benchmarks.NAME]")
    for name, data in raw.get("benchmarks", {}).items():
        table = f"benchmarks.{name}"
        if not _NAME.match(name):
            raise loc.error(table, None, "benchmark names use letters, digits, '.', '_' or '-'")
        data = _check_table(loc, table, data, _BENCHMARK_KEYS, ("param",))
        bench_file = data.get("file", file_template.replace("{benchmark}", name))
        if "{" not in bench_file and not (path.parent / bench_file).exists() and "file" in data:
            raise loc.error(table, "file", f"no such file {bench_file!r} beside the study file")
        chosen = data.get("mechanisms")
        probes = [m for m, mech in mechanisms.items() if not mech.is_server]
        unknown = [m for m in chosen or () if m not in probes]
        if unknown and unknown[0] in mechanisms:
            raise loc.error(table, "mechanisms", f"{unknown[0]} is a server, measured under [load], not in "
                            "iterations")
        if unknown:
            raise loc.error(table, "mechanisms", f"no mechanism {', '.join(unknown)} (has: {', '.join(probes)})")
        benchmarks[name] = Benchmark(
            name=name,
            param=str(data["param"]),
            check_param=str(data.get("check_param", data["param"])),
            file=bench_file,
            expect=data.get("expect"),
            mechanisms=tuple(chosen) if chosen else None,
            count_param=str(data["count_param"]) if "count_param" in data else None,
        )

    baseline = meta.get("baseline")
    if baseline is not None and baseline not in mechanisms:
        raise loc.error("study", "baseline", f"expected one of the mechanisms ({', '.join(mechanisms)})")
    for name, mech in mechanisms.items():
        if mech.twin and (baseline is None or name == baseline):
            raise loc.error(f"mechanisms.{name}", "twin", "a twin takes its turns beside the baseline: expected "
                            "a mechanism other than the study's baseline, and a baseline")
    headline = meta.get("headline")
    if headline is not None and (baseline is None or headline not in mechanisms or headline == baseline):
        raise loc.error("study", "headline", "expected a mechanism other than the baseline, compared with it "
                        "(the study's question), and a baseline")

    return Study(
        name=meta["name"],
        path=path.resolve(),
        title=meta.get("title", meta["name"]),
        seed=meta.get("seed"),
        baseline=baseline,
        budgets=budgets,
        mechanisms=mechanisms,
        benchmarks=benchmarks,
        raw=raw,
        load=load,
        count_env=dict(meta.get("count_env", {})),
    )


def _load_budget(loc: _Locator, table: str, data: dict, base: LoadBudget | None) -> LoadBudget:
    required = () if base else ("process_executions", "duration_s")
    for key in required:
        if key not in data:
            raise loc.error(table, None, f"missing required key '{key}' ({_LOAD_KEYS[key][0]})")
    budget = LoadBudget(
        process_executions=data.get("process_executions", base.process_executions if base else 0),
        warmup_s=float(data.get("warmup_s", base.warmup_s if base else 1.0)),
        duration_s=float(data.get("duration_s", base.duration_s if base else 0.0)),
    )
    if budget.duration_s <= 0:
        raise loc.error(table, "duration_s", "expected above 0 seconds")
    return budget


def stored_load(raw: dict[str, Any], path: Path) -> Load:
    """The [load] table of a study as a campaign stored it (checked when the campaign started; its body
    files are not looked for again)."""
    servers = {name: Mechanism(name, name, (), serve=("stored",)) for name, m in raw["mechanisms"].items()
               if "serve" in m}
    return _load_table(_Locator(path, ""), raw["load"], servers, check_files=False)


def _load_table(loc: _Locator, data: Any, mechanisms: dict[str, Mechanism], check_files: bool = True) -> Load:
    if not isinstance(data, dict):
        raise loc.error("load", None, f"expected a table, got {_describe(data)}")
    data = dict(data)
    requests_raw = data.pop("requests", None)
    named = {k: data.pop(k) for k in list(data) if isinstance(data[k], dict)}
    data = _check_table(loc, "load", data, _LOAD_KEYS, ("connections", "fractions"))
    if not [m for m in mechanisms.values() if m.is_server]:
        raise loc.error("load", None, "no mechanism to load: declare at least one with 'serve'")
    budgets = {"default": _load_budget(loc, "load", data, None)}
    for name, sub in named.items():
        sub = _check_table(loc, f"load.{name}", sub, _LOAD_BUDGET_KEYS)
        budgets[name] = _load_budget(loc, f"load.{name}", sub, budgets["default"])
    if not isinstance(requests_raw, dict) or not requests_raw:
        raise loc.error("load", None, "expected at least one [load.requests.NAME]")
    requests = []
    for name, req in requests_raw.items():
        table = f"load.requests.{name}"
        if not _NAME.match(name):
            raise loc.error(table, None, "request names use letters, digits, '.', '_' or '-'")
        req = _check_table(loc, table, req, _REQUEST_KEYS, ("method", "path"))
        body = req.get("body_file")
        if check_files and body is not None and not (loc.path.parent / body).is_file():
            raise loc.error(table, "body_file", f"no such file {body!r} beside the study file")
        unknown = [m for m in req.get("expect_status_of", {}) if m not in mechanisms]
        if unknown:
            raise loc.error(table, "expect_status_of", f"no server {', '.join(unknown)}")
        requests.append(Request(name=name, weight=req.get("weight", 1), method=req["method"], path=req["path"],
                                headers=dict(req.get("headers", {})), body_file=body,
                                expect_status=req.get("expect_status"),
                                expect_status_of=dict(req.get("expect_status_of", {}))))
    fractions = tuple(float(f) for f in data["fractions"])
    if len(set(fractions)) != len(fractions):
        raise loc.error("load", "fractions", "expected each fraction once")
    ceiling = data.get("ceiling")
    if ceiling is not None and not (ceiling in mechanisms and mechanisms[ceiling].is_server):
        raise loc.error("load", "ceiling", f"expected one of the servers "
                        f"({', '.join(m for m, mech in mechanisms.items() if mech.is_server)})")
    return Load(requests=tuple(requests), connections=data["connections"], fractions=tuple(sorted(fractions)),
                overload=float(data["overload"]) if "overload" in data else None,
                driver_cpus=data.get("driver_cpus"), budgets=budgets, ceiling=ceiling,
                totals=data.get("totals"), settle_s=float(data.get("settle_s", 0.5)))


def find_study(name_or_path: str) -> Path:
    """A study is named by its folder under studies/, or given as a path to a folder or study.toml."""
    candidate = Path(name_or_path)
    if candidate.exists():
        return candidate / "study.toml" if candidate.is_dir() else candidate
    named = STUDIES_DIR / name_or_path / "study.toml"
    if named.exists():
        return named
    known = ", ".join(sorted(p.parent.name for p in STUDIES_DIR.glob("*/study.toml"))) or "none"
    raise StudyError(f"{name_or_path}: no such study (known: {known}; a study anywhere else is named by the path "
                     "to its folder or its study.toml)")


def all_studies() -> list[Path]:
    return sorted(STUDIES_DIR.glob("*/study.toml"))


def debian_packages(paths: list[Path]) -> list[str]:
    """The union of Debian packages the given studies' mechanisms need (used by the installer)."""
    packages: set[str] = set()
    for p in paths:
        packages.update(pkg for m in read_study(p).mechanisms.values() for pkg in m.debian)
    return sorted(packages)


def listed() -> list[dict[str, Any]]:
    """What `bridgebench list` says of each study in studies/, or why it cannot be read."""
    studies: list[dict[str, Any]] = []
    for path in all_studies():
        try:
            s = read_study(path)
            studies.append({"name": s.name, "title": s.title, "mechanisms": list(s.mechanisms),
                            "benchmarks": list(s.benchmarks), "path": str(path)})
        except StudyError as e:
            studies.append({"name": path.parent.name, "error": str(e), "path": str(path)})
    return studies


if __name__ == "__main__":  # python3 -m bridgebench.study --debian: for scripts/install.sh, before the venv
    if sys.argv[1:] == ["--debian"]:
        try:
            print(" ".join(debian_packages(all_studies())))
        except StudyError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)
    else:
        print("usage: python3 -m bridgebench.study --debian", file=sys.stderr)
        sys.exit(2)

