"""What a user reaches for first: `--version`, `python -m bridgebench`, help texts that say what their source
says, shell completion, and extras that install what the lock files pin."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import distribution, version
from pathlib import Path
from typing import Any

import pytest
import typer
from packaging.requirements import Requirement

import bridgebench
from bridgebench.cli import app
from tests.conftest import bridgebench as run_bridgebench

ROOT = Path(__file__).resolve().parent.parent
BUILD_TOOLS = {"setuptools", "wheel"}  # pinned for installing bridgebench itself, not needed to run it


def test_version_is_the_package_version() -> None:
    done = run_bridgebench("--version", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"bridgebench {version('bridgebench')}\n"
    assert version("bridgebench") == bridgebench.__version__


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run([sys.executable, "-m", "bridgebench", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Usage: python -m bridgebench" in done.stdout and "selftest" in done.stdout


def test_the_command_starts_without_importing_scipy() -> None:
    """scipy.stats takes most of a second to import; commands that do no statistics (help, list, status,
    a worker between executions) must not pay for it, so the modules that use it import it when used."""
    probe = "import sys, bridgebench.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    # and they do work when used
    from bridgebench.stats.executions import over_executions
    assert over_executions([1.0, 1.1, 0.9, 1.05]).low is not None


def _commands() -> list[tuple[str, Any]]:
    group = typer.main.get_command(app)
    return [("", group), *((name, cmd) for name, cmd in group.commands.items())]  # type: ignore[attr-defined]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_every_help_text_is_printed_as_written() -> None:
    """Each command's help and each option's help appear verbatim in `--help` (a markup that takes
    `[load]` for a style would drop it), and some help does name a TOML table, so this checks something."""
    bracketed = 0
    for name, command in _commands():
        shown = _flat(run_bridgebench(*([name] if name else []), "--help", cwd=ROOT).stdout)
        texts = [command.help or ""] + [p.help for p in command.params if p.param_type_name == "option" and p.help]
        for text in texts:
            assert _flat(text.partition("\f")[0]) in shown, f"`bridgebench {name} --help` does not show {text!r}"
            bracketed += bool(re.search(r"\[[a-z.]+\]", text))
    assert bracketed >= 1


def test_an_error_that_names_a_table_keeps_its_brackets(basic_study: Path, tmp_path: Path) -> None:
    done = run_bridgebench("load", str(basic_study), "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "error: basic declares no [load]; its mechanisms are timed with `bridgebench run`\n"


def test_shell_completion_completes_commands_and_options() -> None:
    """As bash asks the installed command (the completion is keyed by the command's name)."""
    command = str(Path(sys.executable).with_name("bridgebench"))

    def complete(words: str, cword: int) -> list[str]:
        env = {"_BRIDGEBENCH_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
        return subprocess.run([command], env=env, capture_output=True, text=True, timeout=60).stdout.split()

    assert complete("bridgebench lo", 1) == ["load"]
    assert complete("bridgebench run --random-o", 2) == ["--random-order"]
    script = subprocess.run([command, "--show-completion", "bash"], capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and "_BRIDGEBENCH_COMPLETE" in script.stdout


# --- extras and lock files -------------------------------------------------------------------------------
def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock(path: Path) -> dict[str, str]:
    """The pins of one lock file, without those of the files it includes (-r)."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-r"):
            name, _, pinned = line.partition("==")
            pins[_norm(name)] = pinned
    return pins


def _closure(requirements: list[str], project: dict) -> dict[str, str]:
    """Every package the requirements install, as the venv has them: name -> version (markers evaluated
    for this machine and the extras asked for; bridgebench's own extras read from pyproject.toml)."""
    found: dict[str, str] = {}
    todo = [(Requirement(r), r) for r in requirements]
    while todo:
        req, _ = todo.pop()
        if _norm(req.name) == "bridgebench":
            extras = project["optional-dependencies"]
            todo += [(Requirement(r), r) for extra in req.extras for r in extras[extra]]
            continue
        if _norm(req.name) in found:
            continue
        dist = distribution(req.name)
        found[_norm(req.name)] = dist.version
        for text in dist.requires or []:
            sub = Requirement(text)
            wanted = ["", *sorted(req.extras)]
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((sub, text))
    return found


def _pins(requirements: list[str]) -> dict[str, str]:
    out = {}
    for text in requirements:
        req = Requirement(text)
        if _norm(req.name) != "bridgebench":
            (spec,) = req.specifier
            assert spec.operator == "==", f"{text}: pin it to one version, as the lock files do"
            out[_norm(req.name)] = spec.version
    return out


def test_the_extras_and_the_lock_files_name_the_same_packages() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base, extras = project["dependencies"], project["optional-dependencies"]
    layers = [(ROOT / "requirements.lock", base, []), (ROOT / "requirements-fleet.lock", extras["fleet"], base),
              (ROOT / "requirements-dev.lock", extras["dev"], [*base, *extras["fleet"]])]
    for lock_file, declared, below in layers:
        locked = _lock(lock_file)
        for name, pinned in _pins(declared).items():  # what pyproject pins, the lock file pins alike
            assert locked.get(name) == pinned, f"{lock_file.name} pins {name} {locked.get(name)}, pyproject {pinned}"
        needed = {n: v for n, v in _closure(declared, project).items() if n not in _closure(below, project)}
        assert {n: v for n, v in locked.items() if n not in BUILD_TOOLS} == needed, lock_file.name


def test_an_interrupt_says_how_to_resume_though_it_left_the_console_in_the_middle_of_a_print(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A signal that lands inside one of rich's prints, between its entering and leaving its buffer, leaves the
    console buffering everything after; the interrupt's line (how to resume) must still be written."""
    from bridgebench import cli
    from bridgebench.campaign import lifecycle

    def stopped() -> None:
        raise lifecycle.Interrupted("interrupted: 3 runs of campaign 1 are stored; continue with `bridgebench load x "
                                    "--resume`")

    monkeypatch.setattr(cli, "app", typer.Typer())  # registered on a throwaway app, not bridgebench's
    run = cli.command("stopped")(stopped)
    cli.err.__enter__()  # as the interrupt left it: inside a print's buffer
    try:
        with pytest.raises(typer.Exit) as exited:
            run()
        said = capsys.readouterr().err
    finally:
        cli.err.__exit__(None, None, None)
    assert exited.value.exit_code == cli.EXIT_INTERRUPTED
    assert "continue with `bridgebench load x --resume`" in said
