"""A portable baseline: one campaign in a file of its own, so that a campaign made on main can be carried to a
pull request's CI job as an artifact and diffed there (`bridgebench export N -o base.bbx`, then
`bridgebench diff base.bbx M`).

The file is an SQLite store that holds just that campaign (its builds, answer check, executions with every
iteration, classes, analysis and machine), marked with the format below in its meta table: the diff reads it
as it reads any store, with the same machine, metric and pinning checks. A file that is not one, a truncated
one, or one of a newer format is a one-line error."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from pathlib import Path

from bridgebench.store import Store, StoreError

FORMAT_KEY = "baseline_format"
FORMAT = 1  # the version of what a baseline file holds; a reader refuses a newer one
SUFFIX = ".bbx"


class BaselineError(Exception):
    pass


def export(store: Store, campaign_id: int, path: Path) -> Path:
    """Write the campaign to a new baseline file at `path` (never over an existing file): written whole under
    a temporary name, then renamed, so an interrupted export leaves no half file behind."""
    if path.exists():
        raise BaselineError(f"{path}: exists; a baseline is written to a new file")
    if not path.parent.is_dir():
        raise BaselineError(f"{path}: no folder {path.parent}")
    partial = path.with_name(path.name + ".partial")
    leftovers = (partial, *(partial.with_name(partial.name + s) for s in ("-wal", "-shm")))
    for leftover in leftovers:
        leftover.unlink(missing_ok=True)
    try:
        dest = Store(partial)
        try:
            dest.set_meta(FORMAT_KEY, str(FORMAT))
            store.copy_campaign(campaign_id, dest)
            dest.db.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        finally:
            dest.close()
        os.replace(partial, path)
    except BaseException:
        for leftover in leftovers:
            leftover.unlink(missing_ok=True)
        raise
    return path


def file_side(spec: str) -> tuple[str, str | None] | None:
    """A diff side that names a baseline file, split into the file and the mechanism it names (PATH or
    PATH:MECHANISM); None for a campaign of the store (3, 3:luajit)."""
    path, mechanism = spec, None
    if ":" in spec and not Path(spec).exists():
        path, mechanism = spec.rsplit(":", 1)
    if path.isdigit():  # a campaign, even where a file of that name lies about
        return None
    return (path, mechanism or None) if path.endswith(SUFFIX) or Path(path).is_file() else None


def open_file(path: str) -> tuple[Store, int]:
    """The store a baseline file is, and its one campaign's id."""
    if not Path(path).is_file():
        raise BaselineError(f"{path}: no such baseline file")
    _intact(Path(path))
    try:
        store = Store(path, create=False)
    except StoreError as err:
        raise BaselineError(f"{path}: not a bridgebench baseline ({err})") from err
    found = store.meta(FORMAT_KEY)
    if found is None:
        raise BaselineError(f"{path}: a bridgebench store but not a baseline file (make one with `bridgebench "
                            f"export CAMPAIGN -o FILE{SUFFIX}`)")
    if not found.isdigit() or int(found) > FORMAT:
        raise BaselineError(f"{path}: baseline format {found}; this bridgebench reads up to {FORMAT}")
    campaigns = store.campaigns()
    if len(campaigns) != 1:
        raise BaselineError(f"{path}: a baseline holds one campaign, this one {len(campaigns)}")
    return store, campaigns[0].id


def _intact(path: Path) -> None:
    """Refuse a file that is not an SQLite database or is damaged (a truncated download) before anything
    reads it: SQLite checks its pages."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            verdict = db.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as err:
        raise BaselineError(f"{path}: not a bridgebench baseline ({err})") from err
    if verdict is None or verdict[0] != "ok":
        raise BaselineError(f"{path}: a damaged baseline file (truncated or corrupt: {verdict[0] if verdict else '?'})")


Side = tuple[Store, int, str | None, str]  # a diff side's store, campaign, mechanism and the name it is shown by


def open_sides(specs: tuple[str, str], store_location: str) -> tuple[Side, Side]:
    """Each diff side (a campaign of the store, 3 or 3:luajit, or a baseline file, base.bbx or base.bbx:luajit)
    opened: the store once for both, and each baseline file once (two mechanisms of one file are then one
    campaign's)."""
    @functools.cache
    def in_file(path: str) -> tuple[Store, int]:
        return open_file(path)

    @functools.cache
    def store() -> Store:
        return Store(store_location, create=False)

    def side(spec: str) -> Side:
        named = file_side(spec)
        if named:
            path, mechanism = named
            return (*in_file(path), mechanism, Path(path).name)
        campaign, _, mechanism = spec.partition(":")
        if not campaign.isdigit():
            raise BaselineError(f"{spec!r}: expected CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file, e.g. 3, "
                                "3:luajit or base.bbx")
        return store(), int(campaign), mechanism or None, campaign

    return side(specs[0]), side(specs[1])
