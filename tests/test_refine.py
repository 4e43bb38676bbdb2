"""Refinement (apmt.refine): new P where the model is least certain, the decision of a round
within its budget, frequency control, and CPI_core / BF_mem from runs at two frequencies."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import load_benchmark

from apmt.collect.cpufreq import SYSFS_CPU, frequency_control, pinned_frequency
from apmt.errors import ApmtError
from apmt.evaluate import validate
from apmt.ingest import import_profiles
from apmt.machine import load_machine
from apmt.model import Cpi, build_model
from apmt.refine import (
    apply_frequency_solution,
    choose_p,
    default_candidates,
    frequency_points,
    plan_round,
    solve_frequency,
)
from apmt.series import fit_points, point_values, points

FAKE_SYSFS = Path(__file__).parent / "fixtures" / "cpufreq"
TRAINING_P = [27, 64, 125, 216]
BUDGET = {"max_rounds": 3, "max_runs": 4}


@pytest.fixture(scope="module")
def lulesh_model(measured_data: Path) -> dict:
    """LULESH's main (real Caliper profiles) fitted on P = 27..216, P = 343 held out."""
    table, _ = import_profiles("caliper", sorted(measured_data.glob("lulesh_caliper_opal/*.cali")))
    return build_model(table[table["p"] < 343], [], source="lulesh", app_kernel="main")


def validation(part: str | None, error: float = 0.3, p: float = 343.0) -> dict:
    return {"tolerance": 0.1, "worst_point": {"p": p}, "error": error,
            "refine": error > 0.1, "part": part, "gap_seconds": {}, "reason": "test"}


def test_choose_p_refits_where_the_fitted_interval_is_widest(lulesh_model: dict) -> None:
    candidates = default_candidates(TRAINING_P)
    runs = choose_p(lulesh_model, TRAINING_P, None, {}, count=2)
    fit = next(e.fit for e in lulesh_model.series if e.kernel == "main")
    predicted, lower, upper = fit.predict({"p": np.array(candidates, float)})
    width = dict(zip(candidates, (upper - lower) / predicted, strict=True))
    assert [r["role"] for r in runs] == ["refit", "validate"]
    assert runs[1]["p"] == max(candidates)
    others = {p: w for p, w in width.items() if p != max(candidates)}
    assert runs[0]["p"] == max(others, key=others.get)
    assert runs[0]["uncertainty"] == pytest.approx(width[runs[0]["p"]])
    # beyond the measured range the real fit is less certain than inside it
    assert runs[0]["p"] > max(TRAINING_P)
    assert runs[0]["uncertainty"] > width[128] * 1.05
    assert "least certain" in runs[0]["reason"]


def test_choose_p_refits_only_when_the_largest_measured_p_validates(lulesh_model: dict) -> None:
    """A later round: P = 343 is measured (and held out), the candidates lie below it, so
    both new runs refit, the two most uncertain."""
    measured = [*TRAINING_P, 343]
    runs = choose_p(lulesh_model, measured, [96, 150, 256, 300], {}, count=2)
    assert [r["role"] for r in runs] == ["refit", "refit"]
    assert round(runs[0]["uncertainty"], 4) >= round(runs[1]["uncertainty"], 4)   # ties: larger P
    assert {r["p"] for r in runs} <= {96, 150, 256, 300}


def test_a_single_run_beyond_the_measured_p_is_said_to_validate(lulesh_model: dict) -> None:
    """With one run left and only candidates beyond the measured P, the next round's
    ``--holdout p=max`` holds the new run out: the decision must not call it a refit."""
    [run] = choose_p(lulesh_model, TRAINING_P, [256, 512], {}, count=1)
    assert run["role"] == "validate" and "holds it out" in run["reason"]
    [inside] = choose_p(lulesh_model, TRAINING_P, [96, 150], {}, count=1)
    assert inside["role"] == "refit"


def test_three_p_holding_out_the_largest_ask_for_more_p(measured_data: Path) -> None:
    """The APMT paper profiles three P; holding out the largest leaves two, too few to fit:
    no validation is possible, and refinement adds P instead of failing the study."""
    table, _ = import_profiles("caliper", sorted(measured_data.glob("lulesh_caliper_opal/*.cali")))
    three = table[table["p"].isin([27, 64, 125])]
    rows, validation = validate(three, [], "p=max", 0.1, "lulesh", app_kernel="main")
    assert rows.empty and validation["refine"] and validation["error"] is None
    assert "leaves 2 distinct P (27, 64)" in validation["reason"]
    model = build_model(three, [], source="lulesh", app_kernel="main")
    decision = plan_round(validation, model, [27, 64, 125], 0, BUDGET, {}, {"can_set": False})
    assert decision.action == "more_p" and decision.reason.startswith(
        "no validation (too few P), from the model: profile P=")
    assert json.loads(json.dumps(decision.to_dict())) == decision.to_dict()   # no NaN


def test_target_width_after_refits_without_touching_later_fits(measured_data: Path) -> None:
    """Relearn's series share their points: the pseudo-run's refit (P = 4 of 5, one sigma off)
    must not lend its hypotheses to the real fit of the same points (the design cache)."""
    table, _ = import_profiles("extrap-text", [measured_data / "relearn" / "relearn_data.txt"])
    rows = points(table, ["n"])
    key = ("Connectivity update", "time")
    rows = rows[(rows["kernel"] == key[0]) & (rows["metric"] == key[1])].sort_values("p")
    p = sorted(rows["p"].unique())
    known, four = rows[rows["p"] <= p[2]], rows[rows["p"] <= p[3]]
    target = point_values(rows[rows["p"] == p[4]], ["n"])
    fit = fit_points(key, known, ["n"], "test", frozenset({"n"}))
    width = load_benchmark("refinement").target_width_after(key, known, ["n"], fit,
                               point_values(rows[rows["p"] == p[3]], ["n"]), target,
                               frozenset({"n"}))
    assert 0 < width < np.inf
    after = fit_points(key, four, ["n"], "test", frozenset({"n"})).predict(target)[0]
    fresh = fit_points(key, four.iloc[::-1], ["n"], "test", frozenset({"n"})).predict(target)[0]
    np.testing.assert_allclose(after, fresh, rtol=1e-9)


def test_plan_round_follows_budget_and_part(lulesh_model: dict) -> None:
    here = frequency_control(FAKE_SYSFS, environ={"SLURM_JOB_ID": "42"})
    plan = {"model": lulesh_model, "measured_p": [*TRAINING_P, 343],
            "settings": {"candidates": [], "max_p": None},
            "frequency_control": here}

    def decide(check: dict, round_index: int = 0, runs_used: int = 0, **changes) -> dict:
        arguments = {**plan, **changes}
        return plan_round(check, arguments["model"], arguments["measured_p"], round_index,
                          BUDGET, arguments["settings"], arguments["frequency_control"],
                          runs_used=runs_used)

    assert decide(validation("communication", error=0.05)).action == "none"
    more = decide(validation("communication"))
    assert more.action == "more_p"
    assert [r["role"] for r in more.runs] == ["refit", "validate"]
    assert all(r["p"] not in plan["measured_p"] for r in more.runs)
    assert len(more.candidates) > 2
    assert len(decide(validation("communication"), runs_used=3).runs) == 1
    assert decide(validation("communication"), round_index=3).exhausted == "rounds"
    assert decide(validation("communication"), runs_used=4).exhausted == "runs"
    listed = decide(validation("communication"), settings={"candidates": [64, 100, 512]})
    assert [r["p"] for r in listed.runs] == [100, 512]
    assert decide(validation("communication"), settings={"candidates": [64, 100],
                                                          "max_p": 80}).exhausted == "candidates"
    # computation: needs a CPI per kernel, then a machine that can lower the frequency
    assert decide(validation("computation")).keeps_model
    counters = replace(lulesh_model, cpi={"main": Cpi(1.2, 0.0, {})})
    lower = decide(validation("computation"), model=counters)
    assert lower.action == "lower_frequency"
    assert lower.frequency_ghz == 2.4 and lower.runs[0]["p"] == 343
    assert lower.runs[0]["slurm_option"] == "--cpu-freq=2400000"
    cannot = decide(validation("computation"), model=counters,
                    frequency_control=frequency_control(FAKE_SYSFS / "absent", environ={}))
    # no frequency rerun possible: the CPI parameters stay, and more P are the lever left
    assert cannot.action == "more_p" and cannot.keeps_model
    assert "cannot change the CPU frequency" in cannot.frequency_skipped
    assert "cannot change the CPU frequency" in cannot.reason
    assert [r["role"] for r in cannot.runs] == ["refit", "validate"]
    assert "of the computation" in cannot.runs[0]["reason"], cannot.runs[0]
    json.dumps([decision.to_dict() for decision in (more, lower, cannot)])


def test_frequency_control_on_this_machine_says_it_cannot() -> None:
    if (SYSFS_CPU / "cpu0" / "cpufreq").is_dir():
        pytest.skip("this machine has cpufreq")
    control = frequency_control()
    assert not control["can_set"] and control["method"] is None
    assert "cpufreq" in control["reason"]
    with pytest.raises(ApmtError, match="cannot pin the CPU frequency") as error, \
            pinned_frequency(2.0):
        pass
    assert "\n" not in str(error.value)


def test_frequency_control_reads_a_cpufreq_tree_and_restores_it(tmp_path: Path) -> None:
    control = frequency_control(FAKE_SYSFS, environ={}, use_cpupower=False)
    assert control["frequencies_ghz"] == [1.8, 2.4, 3.0, 3.7]
    assert (control["min_ghz"], control["max_ghz"], control["current_ghz"]) == (1.8, 3.7, 3.6)
    assert (control["driver"], control["governor"]) == ("acpi-cpufreq", "ondemand")
    if not control["writable"]:
        pytest.skip("not root: the tree cannot be set")
    tree = shutil.copytree(FAKE_SYSFS, tmp_path / "cpu")
    copy = frequency_control(tree, environ={}, use_cpupower=False)
    assert copy["method"] == "sysfs"
    limits = tree / "cpu1" / "cpufreq"
    with pinned_frequency(2.4, copy):
        assert (limits / "scaling_max_freq").read_text().strip() == "2400000"
        assert (limits / "scaling_min_freq").read_text().strip() == "2400000"
    assert (limits / "scaling_max_freq").read_text().strip() == "3700000"
    assert (limits / "scaling_min_freq").read_text().strip() == "1800000"
    with pytest.raises(ApmtError, match=r"sets 1\.8 to 3\.7 GHz"), pinned_frequency(5.0, copy):
        pass


def counter_runs(planted: dict[str, tuple[float, float]], machine: dict) -> pd.DataFrame:
    """Counters of kernels with known CPI_core and BF_mem at three clocks (two ranks, 0.1%
    deterministic noise on the cycles)."""
    latency, memory_ns = machine.fields["latency_cycles"], machine.fields["latency_ns"]["memory"]
    rows = []
    for index, (kernel, (core, blocking)) in enumerate(planted.items()):
        for ghz in (3.7, 2.8, 2.0):
            for rank in (0, 1):
                counts = {"instructions": 1e9 * (index + 1), "l1_hits": 3e8, "l2_hits": 2e7,
                          "llc_hits": 5e6, "llc_misses": 1e6 * (index + 1)}
                t_mem = (counts["l1_hits"] * latency["l1"] + counts["l2_hits"] * latency["l2"]
                         + counts["llc_hits"] * latency["llc"]
                         + counts["llc_misses"] * memory_ns * ghz)
                noise = 1 + 1e-3 * np.sin(7 * ghz + rank + index)
                counts["cycles"] = (core * counts["instructions"] + blocking * t_mem) * noise
                rows += [{"kernel": kernel, "metric": metric, "p": 4, "frequency_ghz": ghz,
                          "rank": rank, "value": value} for metric, value in counts.items()]
    return pd.DataFrame(rows)


def test_solve_frequency_recovers_planted_cpi_core_and_bf_mem() -> None:
    machine = load_machine("generic-x86-2core-vm")
    planted = {"stencil": (0.8, 0.35), "solver": (1.3, 0.9)}
    solution = solve_frequency(frequency_points(counter_runs(planted, machine), machine))
    solved = solution.set_index("kernel")
    for kernel, (core, blocking) in planted.items():
        assert solved.loc[kernel, "cpi_core"] == pytest.approx(core, rel=0.01)
        assert solved.loc[kernel, "bf_mem"] == pytest.approx(blocking, rel=0.01)
        assert solved.loc[kernel, "sane"] and solved.loc[kernel, "frequencies"] == 3
        assert 0 < solved.loc[kernel, "residual"] < 0.01
    model = SimpleNamespace(cpi={"stencil": Cpi(1.0, 0.0, {}), "other": Cpi(2.0, 0.0, {})},
                            notes=[])      # the parts of a Model that the solution changes
    refined = apply_frequency_solution(model, solution)
    assert refined.cpi["stencil"].cpi == pytest.approx(0.8, rel=0.01)
    assert refined.cpi["stencil"].refined["cpi_before"] == 1.0
    assert refined.cpi["other"] == Cpi(2.0, 0.0, {}) and model.cpi["stencil"].cpi == 1.0
    one_clock = frequency_points(counter_runs(planted, machine).query("frequency_ghz == 2.0"),
                                 machine)
    assert not solve_frequency(one_clock)["sane"].any()
    with pytest.raises(ApmtError, match="frequency_ghz"):
        frequency_points(counter_runs(planted, machine).drop(columns="frequency_ghz"), machine)
