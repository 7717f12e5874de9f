"""Build each mechanism of a study, cached by a hash of its build steps and inputs.

Two hashes of the same recipe: the folder's *stamp* holds the absolute paths its steps were given (a build
folder copied elsewhere with its repository may hold binaries that point back), and the *build hash* a campaign
stores names those paths by their placeholders ({study}, {build}, {probes}, {root}), so that a campaign goes on
from another checkout of the same code: a fleet's workers, or a repository moved between a run and its resume.

A mechanism whose commands are missing or whose build fails is *unavailable*, with the reason:
it is reported as such, never dropped or faked.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bridgebench.locks import FileLock
from bridgebench.placeholders import PlaceholderError, expand, expand_all
from bridgebench.study import PROBES_DIR, REPO_ROOT, STUDIES_DIR, Mechanism, Study

BUILD_TIMEOUT_S = 900
STAMP = ".bridgebench-build"


@dataclass(frozen=True)
class BuildResult:
    mechanism: str
    available: bool
    reason: str
    version: str
    build_dir: Path
    build_hash: str  # the recipe, wherever the checkout is: what a campaign stores and compares
    cached: bool
    stamp: str = ""  # the recipe at this checkout's paths (the cache's key; a campaign stored it before 2026-11-29)

    def built_as(self, stored: str) -> bool:
        """Whether this build is the one a campaign stored `stored` for (either hash: campaigns stored the
        path-bound one until 2026-11-29)."""
        return self.available and bool(stored) and stored in (self.build_hash, self.stamp)


def build_values(study: Study, build_dir: Path) -> dict[str, str]:
    return {"study": str(study.dir), "build": str(build_dir), "probes": str(PROBES_DIR), "root": str(REPO_ROOT)}


def mechanism_env(mech: Mechanism, values: dict[str, str], inherit: bool = True) -> dict[str, str]:
    """The environment a mechanism runs in: the harness's own (or, without `inherit`, none but PATH: counted
    runs pin their environment, instructions.py) with the mechanism's variables."""
    env = dict(os.environ) if inherit else {"PATH": os.environ.get("PATH", os.defpath)}
    # Tools scripts/install.sh puts beside the venv's python (a Go toolchain, benchstat) come first.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update({k: expand(v, values) for k, v in mech.env.items()})
    return env


def _missing_commands(commands: list[str]) -> list[str]:
    missing = []
    for command in commands:
        if "/" in command:
            if not os.access(command, os.X_OK):
                missing.append(command)
        elif shutil.which(command) is None:
            missing.append(command)
    return missing


def _unavailable_for(mech: Mechanism, missing: list[str]) -> str:
    hint = f" (Debian packages: {', '.join(mech.debian)})" if mech.debian else ""
    return f"not found: {', '.join(missing)}{hint}"


def _build_hash(study: Study, mech: Mechanism, values: dict[str, str], portable: bool = False) -> str:
    """The recipe's hash: its steps, variables and input files; `portable`, with the checkout's paths named by
    their placeholders instead of spelt out."""
    shown = {k: "{" + k + "}" for k in values} if portable else values
    digest = hashlib.sha256()
    for step in expand_all(mech.build, shown):
        digest.update(b"step\0" + step.encode() + b"\0")
    for key, value in sorted(mech.env.items()):
        digest.update(f"env\0{key}={expand(value, shown)}\0".encode())
    for pattern in expand_all(mech.build_inputs, values):
        full = pattern if os.path.isabs(pattern) else str(study.dir / pattern)
        for name in sorted(glob.glob(full, recursive=True)):
            if os.path.isfile(name):
                digest.update(b"input\0" + (_placeheld(name, values) if portable else name).encode() + b"\0")
                digest.update(Path(name).read_bytes())
    return digest.hexdigest()[:16]


def _placeheld(name: str, values: dict[str, str]) -> str:
    """A file's path with the longest of the checkout's folders that holds it named by its placeholder."""
    for key, folder in sorted(values.items(), key=lambda kv: -len(kv[1])):
        if name.startswith(folder.rstrip("/") + "/"):
            return "{" + key + "}" + name[len(folder.rstrip("/")):]
    return name


def _tail(text: str, lines: int = 1) -> str:
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(kept[-lines:]) if kept else "(no output)"


def _version(mech: Mechanism, values: dict[str, str], env: dict[str, str], cwd: Path) -> str:
    if not mech.version:
        return ""
    try:
        done = subprocess.run(
            expand_all(mech.version, values), cwd=cwd, env=env, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"(version unknown: {err})"
    text = (done.stdout + "\n" + done.stderr).strip()
    return text.splitlines()[0].strip() if text else "(version command printed nothing)"


def _run_steps(study: Study, steps: list[str], env: dict[str, str], build_dir: Path) -> str | None:
    """Build afresh in an emptied build_dir, logging to its build.log: None, or why a step failed."""
    if build_dir.exists():
        shutil.rmtree(build_dir)
    build_dir.mkdir(parents=True)
    with open(build_dir / "build.log", "w") as log:
        for number, step in enumerate(steps, 1):
            log.write(f"$ {step}\n")
            log.flush()
            try:
                done = subprocess.run(["bash", "-c", step], cwd=study.dir, env=env, capture_output=True, text=True,
                                      timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return f"build step {number} timed out after {BUILD_TIMEOUT_S} s"
            log.write(done.stdout + done.stderr)
            if done.returncode != 0:
                return f"build step {number} failed (exit {done.returncode}): {_tail(done.stderr or done.stdout)}"
    return None


def build_mechanism(study: Study, mech: Mechanism, build_root: Path) -> BuildResult:
    build_dir = (build_root / study.name / mech.name).resolve()
    values = build_values(study, build_dir)

    stamp_hash = ""

    def unavailable(reason: str, build_hash: str = "") -> BuildResult:
        return BuildResult(mech.name, False, reason, "", build_dir, build_hash, False, stamp_hash)

    try:
        commands = expand_all(mech.commands, values)
        build_hash = _build_hash(study, mech, values, portable=True)
        stamp_hash = _build_hash(study, mech, values)
        steps = expand_all(mech.build, values)
        env = mechanism_env(mech, values)
    except PlaceholderError as err:
        return unavailable(f"bad placeholder in study file: {err}")

    missing = _missing_commands([c for c in commands if "/" not in c])
    if missing:
        return unavailable(_unavailable_for(mech, missing), build_hash)

    stamp = build_dir / STAMP
    # Two harnesses building a study at once (two campaigns, two test workers) would remove each other's
    # files, in a mechanism's folder or in one its steps share: one builds, the other waits, then finds it
    # cached.
    with FileLock(build_dir.parent / ".building").acquire(blocking=True):
        cached = stamp.exists() and stamp.read_text().strip() == stamp_hash
        if not cached:
            failed = _run_steps(study, steps, env, build_dir)
            if failed:
                return unavailable(failed, build_hash)
            stamp.write_text(stamp_hash + "\n")

    missing = _missing_commands([c for c in commands if "/" in c])
    if missing:
        return unavailable(_unavailable_for(mech, missing), build_hash)
    return BuildResult(mech.name, True, "", _version(mech, values, env, study.dir), build_dir, build_hash, cached,
                       stamp_hash)


def default_root(study: Study) -> Path:
    """Where a study's builds go unless told: the repository's build folder for its own studies, a build
    folder beside any other (never the folder the command happens to run in)."""
    inside = study.dir.resolve().is_relative_to(STUDIES_DIR.resolve())
    return REPO_ROOT / "build" if inside else study.dir / "build"


def build_study(study: Study, build_root: Path, mechanisms: list[str] | None = None) -> dict[str, BuildResult]:
    names = mechanisms or list(study.mechanisms)
    return {name: build_mechanism(study, study.mechanisms[name], build_root) for name in names}
