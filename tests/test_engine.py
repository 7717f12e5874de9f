"""The one campaign engine and its kinds: every kind implements the whole interface; a campaign's config is
stored and read back as one typed value; resuming follows one rule for every kind; the run state."""

from __future__ import annotations

import ctypes
import re
import shutil
import signal
from pathlib import Path

import pytest

from bridgebench.build import BuildResult
from bridgebench.campaign import engine, kind, lifecycle, loadtest, timing
from bridgebench.campaign.kind import CampaignError
from bridgebench.campaign.kinds import KINDS, LOAD, TIMING
from bridgebench.options import LoadOptions, TimingOptions, read
from bridgebench.store import Store
from bridgebench.study import read_study

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_kind_implements_the_whole_interface() -> None:
    members = {n for n in vars(kind.Kind) if not n.startswith("_")} | set(kind.Kind.__annotations__)
    assert {"plan", "check", "executor", "analyse", "formats"} <= members
    for name, k in KINDS.items():
        assert k.name == name
        missing = [m for m in sorted(members) if not hasattr(k, m)]
        assert missing == [], f"kind {name} lacks {missing}"
        assert set(k.written_after_a_run) <= set(k.formats)


def _builds(mechanisms: list[str]) -> dict[str, BuildResult]:
    return {m: BuildResult(m, True, "", "1", Path("/nonexistent"), f"hash-{m}", False) for m in mechanisms}


def test_a_load_campaign_is_stored_typed_and_resumed_only_as_one(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "study-load", tmp_path / "study")
    study = read_study(tmp_path / "study" / "study.toml")
    store = Store(tmp_path / "s.sqlite")
    options = loadtest.options_for(study, "quick", None)
    cid = engine.create(store, LOAD, study, options, _builds(list(options.mechanisms)), [])
    config = read(store.campaign(cid))
    assert (config.kind, config.options) == ("load", options) and isinstance(config.options, LoadOptions)
    assert [t.benchmark for t in store.planned(cid)][:2] == ["saturation"] * 2  # the load kind's plan

    # a study outside studies/ is named by its folder, as the command that resumes it must name it
    resume = f"is a load campaign: `bridgebench load {tmp_path / 'study'} --resume`"
    with pytest.raises(CampaignError, match=re.escape(resume)):
        engine.resumable(store, TIMING, study, cid)
    with pytest.raises(CampaignError, match="no unfinished timing campaign"):
        engine.resumable(store, TIMING, study, None)
    assert engine.resumable(store, LOAD, study, None) == (cid, options)
    with pytest.raises(CampaignError, match="is not a timing campaign; only those are resumed with more time"):
        engine.resumable(store, LOAD, study, cid, 90.0)

    (tmp_path / "study" / "study.toml").write_text((tmp_path / "study" / "study.toml").read_text()
                                                   .replace("connections = 4", "connections = 5"))
    with pytest.raises(CampaignError, match="has changed since campaign 1 started"):
        engine.resumable(store, LOAD, read_study(tmp_path / "study" / "study.toml"), cid)
    store.set_state(cid, "done")
    with pytest.raises(CampaignError, match="already complete"):
        engine.resumable(store, LOAD, study, cid)


def test_a_timing_campaign_keeps_its_options_and_its_old_config_shape(basic_study: Path, tmp_path: Path) -> None:
    study = read_study(basic_study)
    store = Store(tmp_path / "s.sqlite")
    options = timing.options_for(study, "quick", None, None, until_ci=0.05, max_time_s=60.0)
    cid = engine.create(store, TIMING, study, options, _builds(list(options.mechanisms)), [])
    stored = store.campaign(cid)
    assert "kind" not in stored.config  # as timing campaigns were stored before there were two kinds
    assert read(stored).options == options and isinstance(read(stored).options, TimingOptions)
    budget = options.adaptive
    assert budget is not None and (budget.until_ci, budget.max_time_s) == (0.05, 60.0)
    assert LoadOptions("b", 1, 0.0, 1.0, ("x",)).adaptive is None


def test_a_resume_with_more_time_raises_an_adaptive_cap_and_goes_on_past_done(basic_study: Path,
                                                                               tmp_path: Path) -> None:
    study = read_study(basic_study)
    store = Store(tmp_path / "s.sqlite")
    options = timing.options_for(study, "quick", None, None, until_ci=0.05, max_time_s=60.0)
    cid = engine.create(store, TIMING, study, options, _builds(list(options.mechanisms)), [])
    store.record_decisions(cid, 0, [("ok", "a", 2, "flat", None, "out of time", "its next execution would pass", None),
                                    ("ok", "b", 2, "flat", None, "settled", "CI within", None)])
    store.set_state(cid, "done")
    with pytest.raises(CampaignError, match=re.escape("no unfinished timing campaign to resume in "
                                                      f"{store.path}; campaign {cid} stopped 1 of its cells out of "
                                                      "time: `--resume --max-time T` gives them more")):
        engine.resumable(store, TIMING, study, None)
    with pytest.raises(CampaignError, match=re.escape("already complete; 1 of its cells stopped out of time: "
                                                      "`--resume --max-time T` gives them more")):
        engine.resumable(store, TIMING, study, cid)
    with pytest.raises(CampaignError, match="already had 60 s; give more"):
        engine.resumable(store, TIMING, study, None, 60.0)
    with pytest.raises(CampaignError, match="expected at most a week"):
        engine.resumable(store, TIMING, study, cid, 1e9)
    chosen, raised = engine.resumable(store, TIMING, study, None, 90.0)  # the latest, though it is done
    assert (chosen, raised) == (cid, engine.raised(options, 90.0, cid))
    assert isinstance(raised, TimingOptions) and (raised.max_time_s, raised.earlier_max_time_s) == (90.0, (60.0,))
    assert raised.adaptive is not None and raised.adaptive.earlier_max_time_s == (60.0,)
    with engine.session() as held:
        assert held.resume(store, TIMING, study, cid, 90.0) == raised
    # stored only once the resume is past its checks (lifecycle.resume: its mechanisms built as they were)
    assert read(store.campaign(cid)).options == options
    engine.keep_options(store, cid, raised)
    assert read(store.campaign(cid)).options == raised
    again = engine.resumable(store, TIMING, study, cid, 120.0)[1]  # the caps it had, oldest first
    assert isinstance(again, TimingOptions) and again.earlier_max_time_s == (60.0, 90.0)

    fixed = engine.create(store, TIMING, study, timing.options_for(study, "quick", None, None),
                          _builds(["a", "b"]), [])
    with pytest.raises(CampaignError, match="has no adaptive budget, so no time cap to raise"):
        engine.resumable(store, TIMING, study, fixed, 90.0)
    store.set_state(fixed, "done")
    with pytest.raises(CampaignError, match="none of its cells stopped out of time: more time would run nothing"):
        engine.resumable(store, TIMING, study, fixed, 90.0)


def test_a_resume_refused_on_its_way_leaves_the_time_cap_as_it_was(basic_study: Path, tmp_path: Path) -> None:
    study = read_study(basic_study)
    store = Store(tmp_path / "s.sqlite")
    options = timing.options_for(study, "quick", None, None, until_ci=0.05, max_time_s=60.0)
    cid = engine.create(store, TIMING, study, options, _builds(list(options.mechanisms)), [])
    store.record_decisions(cid, 0, [("ok", "a", 2, "flat", None, "out of time", "its next execution would pass",
                                     None)])
    store.set_state(cid, "done")
    # the campaign's mechanisms were stored with other builds than these (_builds' hashes): refused
    with pytest.raises(CampaignError, match="mechanism a is not built as it was when campaign 1 started"):
        lifecycle.resume(TIMING, study, store, cid, tmp_path / "build", max_time_s=90.0)
    assert read(store.campaign(cid)).options == options  # a second try may ask for 90 s again
    assert engine.resumable(store, TIMING, study, cid, 90.0)[1] == engine.raised(options, 90.0, cid)


def test_the_run_state_is_done_or_interrupted(tmp_path: Path, basic_study: Path) -> None:
    study = read_study(basic_study)
    store = Store(tmp_path / "s.sqlite")
    options = timing.options_for(study, "quick", None, None)
    cid = engine.create(store, TIMING, study, options, _builds(list(options.mechanisms)), [])
    with pytest.raises(KeyboardInterrupt), engine.running(store, cid):
        assert store.campaign(cid).state == "running"
        raise KeyboardInterrupt
    assert store.campaign(cid).state == "interrupted"
    with engine.running(store, cid):
        pass
    assert store.campaign(cid).state == "done"


def test_an_interrupt_that_surfaces_as_another_error_is_still_the_interrupt(tmp_path: Path, basic_study: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # ctypes turns a KeyboardInterrupt raised in numpy's argument check into "ArgumentError: argument 4:
    # KeyboardInterrupt"; once the handler has seen a signal, any error ends the run as the interrupt.
    study = read_study(basic_study)
    store = Store(tmp_path / "s.sqlite")

    def begin(held: engine.Session) -> tuple[int, TimingOptions, dict[str, BuildResult]]:
        raise ctypes.ArgumentError("argument 4: KeyboardInterrupt: ")

    monkeypatch.setattr(lifecycle, "SIGNALLED", [])
    with pytest.raises(ctypes.ArgumentError):  # no signal: a real error, as it is
        lifecycle._run(TIMING, study, store, begin, lifecycle.QUIET)
    monkeypatch.setattr(lifecycle, "SIGNALLED", [signal.SIGINT])
    with pytest.raises(lifecycle.Interrupted, match="before the campaign started"):
        lifecycle._run(TIMING, study, store, begin, lifecycle.QUIET)


def test_an_interrupt_during_a_speed_reading_leaves_the_campaign_interrupted(tmp_path: Path, basic_study: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    study = read_study(basic_study)
    store = Store(tmp_path / "s.sqlite")
    options = timing.options_for(study, "quick", None, None)
    cid = engine.create(store, TIMING, study, options, _builds(list(options.mechanisms)), [])

    def interrupted(moment: str, cpu: int | None) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(engine.reference, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        engine.run_pending(store, TIMING, study, cid, options, _builds(list(options.mechanisms)))
    assert store.campaign(cid).state == "interrupted" and store.speed_readings(cid) == []
