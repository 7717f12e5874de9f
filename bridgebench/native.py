"""Small C helpers of the harness, compiled on first use into a cache folder keyed by a hash of the
source, the compiler and the flags. Written atomically (private temporary name, then one rename), so
processes that race to build the same helper never see a partial file."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("BRIDGEBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "bridgebench"


def compiler() -> list[str]:
    return shlex.split(os.environ.get("CC", "") or "cc")


def build_atomically(target: Path, command: Callable[[Path], list[str]], *, cwd: Path | None = None,
                     env: dict[str, str] | None = None, timeout_s: float = 120) -> None:
    """Run command(output) with a private temporary output path, then rename it to target in one step;
    OSError with the command's stderr if it fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.stem}-", dir=target.parent) as work:
        tmp = Path(work) / target.name
        cmd = command(tmp)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False, cwd=cwd,
                              env=env)
        if done.returncode != 0:
            raise OSError(f"{shlex.join(cmd)} failed: {done.stderr.strip()[:500]}")
        os.replace(tmp, target)


def build(source: Path, target: Path, flags: tuple[str, ...], libs: tuple[str, ...] = ()) -> None:
    build_atomically(target, lambda out: [*compiler(), *flags, "-o", str(out), str(source), *libs])


def compiled(source: Path, flags: tuple[str, ...], libs: tuple[str, ...] = (), suffix: str = "") -> Path:
    """The path of `source` compiled with `flags`, building it if the cache does not hold it yet."""
    key = hashlib.sha256(source.read_bytes() + repr((compiler(), flags, libs)).encode()).hexdigest()[:20]
    target = cache_dir() / f"{source.stem.lstrip('_')}-{key}{suffix}"
    if not target.exists():
        build(source, target, flags, libs)
    return target
