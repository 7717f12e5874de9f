"""Builds (bridgebench/build.py): two harnesses that build one study at once (two campaigns, two test
workers) do not remove each other's files; one builds, the other waits and finds the build cached."""

from __future__ import annotations

from pathlib import Path

from bridgebench.build import build_mechanism
from bridgebench.study import Study, read_study
from tests.conftest import start_bridgebench


def one_mechanism_study(name: str, mechanism: str) -> str:
    """A study file of one mechanism, `a`, whose table holds these lines (its build) and runs a trivial probe."""
    return (f'[study]\nname = "{name}"\nbaseline = "a"\n\n[budget]\nprocess_executions = 1\niterations = 1\n\n'
            '[mechanisms.a]\ncommands = ["python3"]\n' + mechanism + 'run = ["python3", "-c", "print(1)"]\n\n'
            '[benchmarks.one]\nparam = 1\n')


STUDY = one_mechanism_study(
    "slow-build", 'build = ["echo built >> {study}/builds.log && sleep 1 && echo ok > {build}/made"]\n')


def test_two_harnesses_building_one_study_at_once_build_it_once(tmp_path: Path) -> None:
    study = tmp_path / "slow-build"
    study.mkdir()
    (study / "study.toml").write_text(STUDY)
    builds = tmp_path / "build"
    both = [start_bridgebench("build", str(study / "study.toml"), "--build-dir", str(builds), cwd=tmp_path)
            for _ in range(2)]
    for proc in both:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert (study / "builds.log").read_text() == "built\n"  # the second waited and found it cached
    assert (builds / "slow-build" / "a" / "made").read_text() == "ok\n"


def test_an_outside_study_builds_beside_itself_not_in_the_current_folder(tmp_path: Path) -> None:
    from tests.conftest import bridgebench

    study = tmp_path / "elsewhere" / "slow-build"
    study.mkdir(parents=True)
    (study / "study.toml").write_text(STUDY)
    cwd = tmp_path / "somewhere-else"
    cwd.mkdir()
    done = bridgebench("build", str(study / "study.toml"), cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert (study / "build" / "slow-build" / "a" / "made").is_file()
    assert not (cwd / "build").exists()


MOVED = one_mechanism_study("moved", 'build = ["cp {study}/src.txt {build}/made"]\n'
                                    'build_inputs = ["{study}/src.txt"]\nenv = { MADE = "{build}/made" }\n')


def _checkout(folder: Path, source: str = "v1") -> Study:
    (folder / "moved").mkdir(parents=True)
    (folder / "moved" / "study.toml").write_text(MOVED)
    (folder / "moved" / "src.txt").write_text(source)
    return read_study(folder / "moved" / "study.toml")


def test_a_build_is_the_same_build_from_another_checkout_but_its_folder_is_its_own(tmp_path: Path) -> None:
    """A campaign stores the recipe with the checkout's paths named by their placeholders, so another checkout
    of the same code (a fleet's worker, a repository moved between a run and its resume) builds what the
    campaign stored; the build folder's stamp keeps its own paths, since its binaries may point back to them."""
    built = {}
    for folder in ("a", "a-checkout-in-a-folder-with-a-much-longer-path"):
        study = _checkout(tmp_path / folder)
        built[folder] = build_mechanism(study, study.mechanisms["a"], tmp_path / folder / "build")
    short, long_ = built.values()
    assert short.available and long_.available and short.build_hash and short.stamp
    assert short.build_hash == long_.build_hash
    assert short.stamp != long_.stamp
    assert long_.built_as(short.build_hash) and long_.built_as(long_.stamp)  # and as campaigns stored it before
    assert not long_.built_as(short.stamp) and not long_.built_as("")
    # the recipe's inputs still count: another source is another build, wherever it is
    study = _checkout(tmp_path / "b", source="v2")
    changed = build_mechanism(study, study.mechanisms["a"], tmp_path / "b" / "build")
    assert changed.available and not changed.built_as(short.build_hash)


def test_a_campaign_goes_on_from_another_checkout_of_the_same_study(tmp_path: Path) -> None:
    """Run out of time from one folder, resumed with more time from a copy of the study at a longer path with its
    own build folder: it goes on. Before 2026-11-29 the build hash held the paths and the resume was refused. The
    probe sleeps 0.3 s an execution, so 6 a cell cannot fit in 1.5 s on any machine, and the resume's 60 s hold
    the rest unless an execution takes twenty times as long as here."""
    from tests.conftest import add_benchmark, bridgebench, copy_basic_study, rows

    store = tmp_path / "shared.sqlite"
    files = []
    for folder in ("one", "another-checkout-with-a-longer-path"):
        (tmp_path / folder).mkdir()
        study_file = copy_basic_study(tmp_path / folder)
        add_benchmark(study_file, "sleepy")
        text = study_file.read_text()
        for mechanism in ("a", "b"):  # a build whose steps and inputs name the checkout's folders
            text = text.replace(f"[mechanisms.{mechanism}]\n", f"[mechanisms.{mechanism}]\n"
                                'build = ["cp {study}/../probe.py {build}/probe.py"]\n'
                                'build_inputs = ["{study}/../probe.py"]\n')
        study_file.write_text(text)
        files.append(study_file)
    first = bridgebench("run", str(files[0]), "--benchmarks", "sleepy", "--until", "ci=0.0001%", "--max-executions",
                        "6", "--max-time", "1.5", "--store", str(store), cwd=tmp_path / "one")
    assert first.returncode == 0, first.stderr
    before = rows(store, "SELECT count(*) FROM execution")[0][0]
    other = tmp_path / "another-checkout-with-a-longer-path"
    more = bridgebench("run", str(files[1]), "--resume", "--max-time", "60", "--store", str(store),
                       "--build-dir", str(other / "build"), cwd=other)
    assert more.returncode == 0, more.stderr
    assert rows(store, "SELECT count(*) FROM execution")[0][0] > before
    assert (other / "build" / "basic" / "a" / "probe.py").is_file()  # built there, from its own checkout
