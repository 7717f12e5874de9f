from __future__ import annotations

from pathlib import Path

import pytest

from bridgebench.study import StudyError, all_studies, debian_packages, read_study


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


VALID = """
[study]
name = "s"
baseline = "m"

[budget]
process_executions = 2
iterations = 10

[budget.quick]
iterations = 3

[mechanisms.m]
run = ["echo", "{benchmark}"]
debian = ["lua5.1"]

[benchmarks.b]
param = 5
"""


def test_valid_study_loads_with_budgets_inherited(tmp_path: Path) -> None:
    study = read_study(write(tmp_path, VALID))
    assert study.name == "s"
    assert study.budgets["quick"].process_executions == 2  # inherited from [budget]
    assert study.budgets["quick"].iterations == 3
    assert study.benchmarks["b"].param == "5"
    assert study.benchmarks["b"].check_param == "5"  # defaults to param


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (VALID.replace("iterations = 10", 'iterations = "ten"'),
         r"study.toml:8: budget.iterations: expected a positive integer, got str 'ten'"),
        (VALID.replace('run = ["echo", "{benchmark}"]', "run = 3"),
         r"study.toml:14: mechanisms.m.run: expected a non-empty list of strings, got int 3"),
        (VALID.replace('debian = ["lua5.1"]', 'debain = ["lua5.1"]'),
         r"study.toml:15: mechanisms.m.debain: unknown key"),
        (VALID.replace('baseline = "m"', 'baseline = "zz"'), r"study.toml:4: study.baseline: expected one of"),
        (VALID.replace("param = 5", ""), r"benchmarks.b: missing required key 'param'"),
        (VALID.replace("[budget]\n", "[budget\n"), r"study.toml:6: invalid TOML"),
        (VALID + "\n[extra]\nx = 1\n", r"extra: unknown table"),
    ],
)
def test_malformed_study_names_file_line_and_key(tmp_path: Path, broken: str, expected: str) -> None:
    with pytest.raises(StudyError, match=expected):
        read_study(write(tmp_path, broken))


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="cannot read study file"):
        read_study(tmp_path / "nope.toml")


def test_repository_studies_are_valid_and_name_their_debian_packages() -> None:
    studies = all_studies()
    assert studies, "the repository has no studies"
    for path in studies:
        read_study(path)
    assert "lua5.1" in debian_packages(studies)


TWINS = VALID.replace("[benchmarks.b]", """[mechanisms.m-again]
twin_of = "m"
label = "M again"
env = { X = "1" }

[benchmarks.b]""")


def test_a_twin_is_its_original_under_another_name_with_its_own_keys_over_it(tmp_path: Path) -> None:
    study = read_study(write(tmp_path, TWINS))
    m, again = study.mechanisms["m"], study.mechanisms["m-again"]
    assert again.twin_of == "m" and m.twin_of is None
    assert (again.run, again.debian, again.label, again.env) == (m.run, m.debian, "M again", {"X": "1"})


@pytest.mark.parametrize(("twin_of", "expected"), [
    ("zz", r"study.toml:\d+: mechanisms.m-again.twin_of: expected another mechanism of this study, got 'zz'"),
    ("m-again", r"mechanisms.m-again.twin_of: expected another mechanism"),
])
def test_a_twin_must_name_another_mechanism(tmp_path: Path, twin_of: str, expected: str) -> None:
    with pytest.raises(StudyError, match=expected):
        read_study(write(tmp_path, TWINS.replace('twin_of = "m"', f'twin_of = "{twin_of}"')))
    chained = TWINS + '\n[mechanisms.m-third]\ntwin_of = "m-again"\n'
    with pytest.raises(StudyError, match=r"m-third.twin_of: m-again is itself a twin \(of m\): name the original"):
        read_study(write(tmp_path, chained))


def test_a_budget_names_the_mechanisms_it_runs_and_named_budgets_inherit_them(tmp_path: Path) -> None:
    from bridgebench.campaign.timing import options_for
    text = TWINS.replace("iterations = 10\n", 'iterations = 10\nmechanisms = ["m"]\n').replace(
        "[budget.quick]", '[budget.aa]\nmechanisms = ["m", "m-again"]\n\n[budget.quick]')
    study = read_study(write(tmp_path, text))
    assert options_for(study, "default", None, None).mechanisms == ("m",)
    assert options_for(study, "quick", None, None).mechanisms == ("m",)  # inherited from [budget]
    assert options_for(study, "aa", None, None).mechanisms == ("m", "m-again")
    assert options_for(study, "default", None, ["m-again"]).mechanisms == ("m-again",)  # the command line wins
    with pytest.raises(StudyError, match=r"study.toml:\d+: budget.aa.mechanisms: no mechanism timed in iterations "
                                         r"named zz \(has: m, m-again\)"):
        read_study(write(tmp_path, text.replace('["m", "m-again"]', '["m", "zz"]')))


def test_a_budget_names_how_its_blocks_take_turns_and_the_command_line_or_the_pairing_overrides_it(
        tmp_path: Path) -> None:
    from bridgebench.campaign.timing import CampaignError, options_for
    text = VALID.replace("iterations = 10\n", 'iterations = 10\nturns = "twins"\n').replace(
        "[budget.quick]", '[budget.counted]\nbased_on = "default"\nmetric = "instructions"\n\n[budget.quick]')
    study = read_study(write(tmp_path, text))
    assert study.budgets["default"].turns == study.budgets["quick"].turns == "twins"  # inherited, as mechanisms are
    assert options_for(study, "default", None, None).turns == options_for(study, "quick", None, None).turns == "twins"
    assert read_study(write(tmp_path, text.replace("iterations = 3\n", 'iterations = 3\nturns = "separate"\n'))
                      ).budgets["quick"].turns == "separate"
    assert options_for(study, "default", None, None, turns="interleaved").turns == "interleaved"
    assert options_for(study, "default", None, None, pairing="sequential").turns == "separate"  # no blocks
    try:
        counted = options_for(study, "counted", None, None)
    except CampaignError as e:  # a machine without valgrind: the budget is refused, not its turns
        assert "count instructions" in str(e)
    else:
        assert counted.pairing == "sequential" and counted.turns == "separate"
    with pytest.raises(StudyError, match=r"study.toml:\d+: budget.turns: expected separate or interleaved or "
                                         r"together or twins, got str 'paired'"):
        read_study(write(tmp_path, text.replace('"twins"', '"paired"')))
    with pytest.raises(StudyError, match=r"budget.turns: only lock-step blocks take turns, and a study without a "
                                         r"baseline"):
        read_study(write(tmp_path, text.replace('baseline = "m"\n', "")))


def test_the_baselines_twins_are_those_that_say_so_and_its_twin_ofs(tmp_path: Path) -> None:
    """`twin = true` names a build of the baseline's VM, which takes its turns beside it (lockstep.py, twins); a
    `twin_of` the baseline is one too, a twin_of another mechanism is not; the baseline itself cannot be one."""
    text = VALID + ('\n[mechanisms.fork]\nrun = ["echo"]\ntwin = true\n\n[mechanisms.copy]\ntwin_of = "m"\n\n'
                    '[mechanisms.other]\nrun = ["echo"]\n\n[mechanisms.other-again]\ntwin_of = "other"\n')
    assert read_study(write(tmp_path, text)).twins == {"fork", "copy"}
    with pytest.raises(StudyError, match=r"study.toml:\d+: mechanisms.m.twin: a twin takes its turns beside the "
                                         r"baseline"):
        read_study(write(tmp_path, text.replace('debian = ["lua5.1"]\n', 'debian = ["lua5.1"]\ntwin = true\n')))
    with pytest.raises(StudyError, match=r"mechanisms.fork.twin: .* and a baseline"):
        read_study(write(tmp_path, text.replace('baseline = "m"\n', "")))


ADAPTIVE = VALID.replace("iterations = 10\n", "iterations = 10\nuntil_ci = 0.02\nmax_process_executions = 8\n"
                         "max_time_s = 60\nuntil_decided = true\nnearest_first = true\n")


def test_a_named_budget_takes_the_default_s_adaptive_rules_only_when_based_on_it(tmp_path: Path) -> None:
    based = ADAPTIVE + '\n[budget.short]\nbased_on = "default"\nmax_time_s = 20\n'
    study = read_study(write(tmp_path, based))
    default, short, quick = (study.budgets[n] for n in ("default", "short", "quick"))
    assert (short.until_ci, short.max_process_executions, short.until_decided, short.nearest_first) == (
        0.02, 8, True, True)
    assert (short.max_time_s, default.max_time_s) == (20.0, 60.0)
    assert quick.until_ci is None and not quick.until_decided  # written without based_on: not adaptive


def test_a_budget_can_be_based_on_another_named_one_but_not_in_a_circle(tmp_path: Path) -> None:
    text = ADAPTIVE + ('\n[budget.a]\nbased_on = "default"\nmax_time_s = 20\n'
                       '\n[budget.b]\nbased_on = "a"\niterations = 4\n')
    b = read_study(write(tmp_path, text)).budgets["b"]
    assert (b.max_time_s, b.iterations, b.until_ci) == (20.0, 4, 0.02)
    circle = text.replace('based_on = "default"', 'based_on = "b"')
    with pytest.raises(StudyError, match=r"budget.b.based_on: budgets based on each other in a circle \(a → b\)"):
        read_study(write(tmp_path, circle))


@pytest.mark.parametrize(("extra", "expected"), [
    ('\n[budget.x]\nbased_on = "zz"\n',
     r"study.toml:\d+: budget.x.based_on: expected \"default\" or another budget of this study, got 'zz'"),
    ('\n[budget.x]\nbased_on = "x"\n', r"budget.x.based_on: expected \"default\" or another budget"),
    ('\n[budget.x]\nbased_on = 3\n', r"budget.x.based_on: expected \"default\" or another budget"),
])
def test_a_budget_must_be_based_on_another_budget(tmp_path: Path, extra: str, expected: str) -> None:
    with pytest.raises(StudyError, match=expected):
        read_study(write(tmp_path, ADAPTIVE + extra))


def test_the_default_budget_cannot_be_based_on_another(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match=r"study.toml:\d+: budget.based_on: only a named budget"):
        read_study(write(tmp_path, VALID.replace("iterations = 10\n", 'iterations = 10\nbased_on = "quick"\n')))


def test_counted_budgets_take_count_sizes_unless_they_ask_for_the_timed_ones(tmp_path: Path) -> None:
    from bridgebench import instructions
    from bridgebench.campaign.timing import options_for
    if instructions.unavailable():
        pytest.skip(f"cannot count instructions here: {instructions.unavailable()}")
    text = VALID.replace("param = 5\n", "param = 5\ncount_param = 2\n") + (
        '\n[budget.counted]\nmetric = "instructions"\n'
        '\n[budget.counted-timed-sizes]\nmetric = "instructions"\ncount_sizes = false\n'
        '\n[budget.timed-count-sizes]\ncount_sizes = true\n')
    study = read_study(write(tmp_path, text))
    sizes = {name: options_for(study, name, None, None).count_sizes
             for name in ("default", "counted", "counted-timed-sizes", "timed-count-sizes")}
    assert sizes == {"default": False, "counted": True, "counted-timed-sizes": False, "timed-count-sizes": True}
    # the command line's metric counts at count_param too, unless the budget says otherwise
    assert options_for(study, "default", None, None, metric="instructions").count_sizes is True
    assert options_for(study, "counted-timed-sizes", None, None, metric="seconds").count_sizes is False
    bench = study.benchmarks["b"]
    assert (bench.param_for(True), bench.param_for(False)) == ("2", "5")
