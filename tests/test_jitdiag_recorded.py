"""Signature grouping on recorded data: five cells of a real luajit-consistency campaign (each execution's
trace signature and steady mean, tests/fixtures/luajit_consistency_signatures.json), summarised as analyse
summarises them. The study's README quotes these findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridgebench.stats import spread
from bridgebench.timing import jitdiag

CELLS = json.loads((Path(__file__).parent / "fixtures/luajit_consistency_signatures.json").read_text())["cells"]


def _summary(cell: str) -> jitdiag.JitSummary:
    records = [(jitdiag.JitRecord(1, 0, 0, 0, sig, {}), mean) for sig, mean in CELLS[cell]]
    summary = jitdiag.summarise(records)
    assert summary is not None
    return summary


def test_with_its_prng_seeded_by_the_os_luajit_compiles_other_traces_in_every_execution() -> None:
    s = _summary("binarytrees/debian")
    assert (s.executions, s.signatures) == (8, 8)
    assert s.modes == 2 and s.predicted == 0  # no signature repeats: nothing can be predicted
    assert "none repeated" in s.words()


def test_pinned_executions_compile_the_same_traces_and_still_differ_in_speed() -> None:
    s = _summary("binarytrees/pinned")
    assert (s.executions, s.signatures, s.modes, s.predicted) == (8, 1, 1, None)
    means = [m for _, m in CELLS["binarytrees/pinned"]]
    assert spread.log_spread(means).sd > 0.1  # over 10 % between executions with identical traces


@pytest.mark.parametrize(("cell", "signatures", "modes", "predicted"),
                         [("havlak/debian", 5, 3, 0), ("richards/debian-noaslr", 3, 2, 3)])
def test_repeated_signatures_predict_few_modes(cell: str, signatures: int, modes: int, predicted: int) -> None:
    s = _summary(cell)
    assert (s.signatures, s.modes, s.predicted) == (signatures, modes, predicted)


def test_modes_under_one_signature_are_said_to_be_beyond_the_traces() -> None:
    s = _summary("spectralnorm/debian")
    assert (s.signatures, s.modes) == (1, 2)
    assert "which one signature cannot tell apart" in s.words()
