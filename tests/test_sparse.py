"""Sparse and zero data never stop a model: a series that is zero at some P and positive at
others, or seen at too few P once a run is held out, is left out of that fit with a note
naming it and why, in the model and in the validation; only a table of which nothing at all
can be fitted is refused, in one line.

The tables mimic what the default LAMMPS study gave on one machine: cachegrind counted no
last-level miss of a small function at P = 2 and 3 but some at P = 1 and 4, so with P = 4
held out that counter had one P left to fit on.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apmt.errors import ApmtError
from apmt.evaluate import validate
from apmt.model import Model, build_model
from apmt.predict import predict
from apmt.series import unfittable_reason
from apmt.tables import APP_KERNEL, check_table, write_table

P_VALUES = (1, 2, 3, 4)


def run_rows(counter: dict[int, float | None], time_at: tuple[int, ...] = P_VALUES
             ) -> pd.DataFrame:
    """Per rank and repetition: ``solve``'s time, a second kernel's time, the application's
    time, and ``solve``'s llc_misses as ``counter`` gives it per P (None: no row)."""
    rows = []
    for p in P_VALUES:
        for rep in (1, 2):
            for rank in range(p):
                per_rank = {("bin", "time"): 0.2 / p + 0.01, (APP_KERNEL, "time"): 2.0 / p + 0.5}
                if p in time_at:
                    per_rank[("solve", "time")] = 1.5 / p + 0.05
                if counter.get(p) is not None:
                    per_rank[("solve", "llc_misses")] = counter[p]
                rows += [{"kernel": k, "metric": m, "p": p, "rep": rep, "rank": rank, "value": v}
                         for (k, m), v in per_rank.items()]
    return check_table(pd.DataFrame(rows), "sparse")


def left_out(model_or_decision: Model | dict) -> dict[tuple[str, str], str]:
    """The left-out series of a model, or of a decision (its JSON form)."""
    entries = [entry.to_dict() for entry in model_or_decision.left_out] \
        if isinstance(model_or_decision, Model) else model_or_decision["left_out"]
    return {(e["kernel"], e["metric"]): e["reason"] for e in entries if "kernel" in e}


def test_a_zero_among_positive_values_is_left_out_with_a_note() -> None:
    table = run_rows({1: 40.0, 2: 0.0, 3: 0.0, 4: 12.0})
    model = build_model(table, [], source="sparse")
    reasons = left_out(model)
    assert "is zero at p = 2, 3 and positive at p = 1, 4" in reasons[("solve", "llc_misses")]
    assert any(note.startswith("solve/llc_misses not modelled: the series is zero at p = 2, 3")
               for note in model.notes), model.notes
    fitted = {(e.kernel, e.metric) for e in model.series}
    assert ("solve", "time") in fitted and ("solve", "llc_misses") not in fitted
    predicted = predict(model, pd.DataFrame({"p": [8, 64]}))
    counter = predicted[predicted["metric"] == "llc_misses"]
    assert counter["predicted"].isna().all() and counter["trust"].eq("unsupported").all()
    assert counter["trust_reason"].str.contains("zero at p = 2, 3").all()
    fitted = predicted[predicted["metric"] != "llc_misses"]
    assert np.isfinite(fitted["predicted"]).all()
    app = predicted[(predicted["kernel"] == APP_KERNEL) & (predicted["metric"] == "time")]
    assert (app["predicted"] > 0).all()


def test_zeros_over_several_variables_are_named_by_their_points() -> None:
    """Extra-P's multi-parameter cube set had L3 misses zero at some (x, y, z) and positive
    at others, with the same x on both sides: x alone named it contradictorily."""
    rows = pd.DataFrame({"p": 1.0, "x": [1.0, 1.0, 10.0, 10.0, 25.0],
                         "y": [1.0, 10.0, 1.0, 10.0, 1.0], "value": [3.0, 0.0, 5.0, 0.0, 7.0]})
    assert unfittable_reason(rows, "x", params=["x", "y"]) == (
        "is zero at (x, y) = (1, 10), (10, 10) and positive at (x, y) = (1, 1), (10, 1), "
        "(25, 1): a fit of relative errors needs positive values throughout")


def test_a_counter_that_is_zero_everywhere_is_left_out_as_such() -> None:
    model = build_model(run_rows(dict.fromkeys(P_VALUES, 0.0)), [], source="zero")
    assert left_out(model)[("solve", "llc_misses")] == (
        "is zero at every p (1, 2, 3, 4): nothing to fit")


def test_a_counter_absent_at_some_p_is_left_out_of_the_validation_fit() -> None:
    """Seen at P = 1 and 4: fitted on all four P it has 2 (left out), and with P = 4 held
    out it has 1; the validation still compares the application time at P = 4."""
    table = run_rows({1: 40.0, 4: 12.0})
    rows, decision = validate(table, [], "p=max", 0.1, "sparse")
    assert "has 1 distinct p (1); at least 3 are needed" in \
        left_out(decision)[("solve", "llc_misses")]
    assert decision["worst_point"] == {"p": 4.0} and np.isfinite(decision["error"])
    assert set(rows["metric"]) >= {"time", "computation_time"}
    assert left_out(build_model(table, [], source="sparse"))[("solve", "llc_misses")] \
        .startswith("has 2 distinct p (1, 4)")


def test_a_key_kernel_without_a_model_of_its_time_is_named() -> None:
    """``solve`` was sampled at P = 1 and 2 only: the model keeps the rest and says that the
    application time leaves it out."""
    model = build_model(run_rows({}, time_at=(1, 2)), [], source="sampled")
    assert ("solve", "time") in left_out(model)
    assert any("leaves out solve" in note for note in model.notes), model.notes
    predicted = predict(model, pd.DataFrame({"p": [8]})).set_index(["kernel", "metric"])
    assert np.isfinite(predicted.at[(APP_KERNEL, "time"), "predicted"])


def test_nothing_to_fit_is_refused_in_one_line() -> None:
    table = run_rows({})
    table = table[table["p"] <= 2]
    with pytest.raises(ApmtError) as caught:
        build_model(table, [], source="sparse")
    assert str(caught.value) == (
        "sparse: nothing could be fitted: series '<app>/time' and 2 more: the table has 2 "
        "distinct p (1, 2); at least 3 are needed to fit a series: measure or import runs at "
        "more P")


def test_a_single_imported_profile_is_refused_once_for_the_table(measured_data: Path,
                                                                 cli, tmp_path: Path) -> None:
    """One Score-P profile (BLAST at 64 ranks): each of its 23 series has one P. The error
    says so once, naming the first, not series by series."""
    table = tmp_path / "blast.csv"
    assert cli("import", "cube", measured_data / "scorep_counters" / "blast.p64.r1",
               "-o", table).code == 0
    fitted = cli("fit", table, "-o", tmp_path / "model.json")
    assert fitted.code != 0
    assert fitted.err.strip().splitlines()[-1] == (
        f"apmt: error: {table}: nothing could be fitted: series '<others>/bytes_received' and "
        "22 more: the table has 1 distinct p (64); at least 3 are needed to fit a series: "
        "measure or import runs at more P")


def test_refine_round_on_a_sparse_table(tmp_path: Path, cli) -> None:
    """The command the workflow's refinement round runs: exit 0, and the round's validation
    names the series left out."""
    measurements = tmp_path / "measurements.csv"
    write_table(run_rows({1: 40.0, 2: 0.0, 3: 0.0, 4: 12.0}), measurements)
    validation = tmp_path / "validation.json"
    run = cli("refine", "round", measurements, "--holdout", "p=max", "--base-p", *P_VALUES,
              "--max-p", "8", "--validation", validation, "--evaluation",
              tmp_path / "evaluation.csv", "-o", tmp_path / "decision.json")
    assert run.code == 0, run.err
    reasons = left_out(json.loads(validation.read_text()))
    assert "zero at p = 2, 3 and positive at p = 1" in reasons[("solve", "llc_misses")]
    decision = json.loads((tmp_path / "decision.json").read_text())
    assert decision["validation"]["left_out"] == json.loads(validation.read_text())["left_out"]
    fitted = cli("fit", measurements, "-o", tmp_path / "model.json")
    assert fitted.code == 0, fitted.err
    assert "note: solve/llc_misses not modelled" in fitted.out


CHOICES = ("absent", "zero", "positive")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mix_of_absent_zero_and_positive_values_never_stops_the_model(data) -> None:
    """Generated profiles: P from a realistic set, and per P each counter of a kernel absent,
    zero or positive. The model and the validation are always built; every series of a
    modelled kernel is either fitted or left out with a reason, never lost; predictions are
    finite."""
    p_values = sorted(data.draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]),
                                         min_size=3, max_size=6, unique=True), label="P"))
    rows = []
    for p in p_values:
        time = {"solve": 2.0 / p + 0.1, "setup": 0.3, APP_KERNEL: 2.0 / p + 0.5}
        rows += [{"kernel": k, "metric": "time", "p": p, "rank": 0, "value": v}
                 for k, v in time.items()]
        for metric in ("instructions", "llc_misses", "branch_misses"):
            for kernel in ("solve", "setup"):
                choice = data.draw(st.sampled_from(CHOICES), label=f"{kernel}/{metric}@{p}")
                if choice != "absent":
                    value = 0.0 if choice == "zero" else data.draw(
                        st.floats(1.0, 1e9), label=f"{kernel}/{metric}@{p} value")
                    rows.append({"kernel": kernel, "metric": metric, "p": p, "rank": 0,
                                 "value": value})
    table = check_table(pd.DataFrame(rows), "generated")
    model = build_model(table, [], source="generated")
    modelled = {k["kernel"] for k in model.kernels
                if k["class"] in ("key", "non-scalable")}
    expected = {(k, m) for k, m in table[["kernel", "metric"]].drop_duplicates()
                .itertuples(index=False) if k in modelled}
    fitted = {(e.kernel, e.metric) for e in model.series}
    reasons = left_out(model)
    assert not fitted & set(reasons)
    assert expected <= fitted | set(reasons)
    assert all(reasons.values())
    predicted = predict(model, pd.DataFrame({"p": [64]}))
    unfitted = predicted["trust_reason"].str.startswith("not modelled")
    assert np.isfinite(predicted.loc[~unfitted, "predicted"]).all()
    assert set(map(tuple, predicted.loc[unfitted, ["kernel", "metric"]].to_numpy())) == \
        set(reasons)
    if len(p_values) < 4:   # two P left once the largest is held out: ask for more P
        rows, decision = validate(table, [], "p=max", 0.1, "generated")
        assert rows.empty and decision["refine"] and decision["error"] is None
        assert "too few to fit" in decision["reason"]
        return
    _, decision = validate(table, [], "p=max", 0.1, "generated")
    assert np.isfinite(decision["error"]) and isinstance(decision["left_out"], list)
