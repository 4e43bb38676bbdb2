"""The application model (paper 000, Eq. 2): time mode on real profiles, counter mode and
BF_comm on tables with a known answer, and validation on a held-out P."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.errors import ApmtError
from apmt.evaluate import validate
from apmt.fit_table import error_correlation
from apmt.ingest import import_profiles
from apmt.kernels import OTHERS
from apmt.machine import load_machine
from apmt.model import PARTS, UNACCOUNTED, Model, build_model, load_model, save_model
from apmt.predict import (
    _kernel_time,
    assemble,
    contributions,
    eq2_terms,
    memory_time,
    predict,
    whole_time,
    within,
)
from apmt.series import points
from apmt.tables import APP_KERNEL, check_table, read_table

MACHINE = "haswell-e5-2698v3"


def app_rows(table: pd.DataFrame) -> pd.Series:
    """The assembled ``<app>`` rows of a predictions table at one point, by metric."""
    return table[table["kernel"] == APP_KERNEL].set_index("metric")["predicted"]


def kernel_row(table: pd.DataFrame, kernel: str, metric: str) -> float:
    [value] = table.loc[(table["kernel"] == kernel) & (table["metric"] == metric), "predicted"]
    return float(value)


# ------------------------------------------------------------------ time mode: RELeARN, LULESH

@pytest.fixture(scope="module")
def relearn(measured_data: Path) -> pd.DataFrame:
    table, _ = import_profiles("extrap-text", [measured_data / "relearn" / "relearn_data.txt"])
    return table


@pytest.fixture(scope="module")
def relearn_model(relearn: pd.DataFrame) -> dict:
    """Built on P < 512 only, so P = 512 is an extrapolation."""
    return build_model(relearn[relearn["p"] < 512], ["n"], source="relearn",
                       app_kernel="main()", per_rank_params=frozenset({"n"}))


def test_relearn_time_mode(relearn_model: dict) -> None:
    assert relearn_model.mode == "time"
    assert relearn_model.cpi == {}
    assert any("time-only" in note for note in relearn_model.notes)
    assert any("main()" in note for note in relearn_model.notes)
    assert relearn_model.bf_comm == 1.0


def test_relearn_prediction_at_512(relearn: pd.DataFrame, relearn_model: dict) -> None:
    table = predict(relearn_model, pd.DataFrame({"p": [512], "n": [5000.0]}))
    app = app_rows(table)
    assert set(app.index) == {"time", *PARTS}
    assert app["time"] == pytest.approx(kernel_row(table, "main()", "time"))
    series = points(relearn, ["n"])
    [measured] = series.loc[(series["kernel"] == "main()") & (series["p"] == 512)
                            & (series["n"] == 5000), "value"]
    assert app["time"] == pytest.approx(measured, rel=0.25)
    assert app["comp_time"] > 0 and app["mem_time"] == 0
    rows = table[table["kernel"] == APP_KERNEL]
    assert (rows["lower"] <= rows["predicted"]).all() and (rows["predicted"] <= rows["upper"]).all()


def test_model_file_round_trip(relearn_model: dict, tmp_path: Path) -> None:
    targets = pd.DataFrame({"p": [512, 1024, 4096], "n": [5000.0, 9000.0, 20000.0]})
    save_model(relearn_model, tmp_path / "model.json")
    again = load_model(tmp_path / "model.json")
    pd.testing.assert_frame_equal(predict(again, targets), predict(relearn_model, targets),
                                  check_exact=True)
    assert again.mode == relearn_model.mode and again.notes == relearn_model.notes


@pytest.fixture(scope="module")
def lulesh(measured_data: Path) -> pd.DataFrame:
    files = sorted((measured_data / "lulesh_caliper_opal").glob("*.cali"))
    table, _ = import_profiles("caliper", files)
    return table


def test_lulesh_parts_add_up(lulesh: pd.DataFrame) -> None:
    """Without an application kernel T_app is the sum of its parts, and T_comm is the sum of
    the MPI calls' fits (no communication table)."""
    model = build_model(lulesh, [], source="lulesh", scaling="weak")
    assert model.app_kernel is None and model.mode == "time"
    values = {"p": np.array([343.0])}
    parts = {name: bounds[0][0] for name, bounds in assemble(model, values).items()}
    assert parts["time"] == pytest.approx(sum(parts[p] for p in PARTS), rel=1e-9)
    assert parts["mem_time"] == 0 and parts["others_time"] > 0

    classes = {k["kernel"]: k["class"] for k in model.kernels}
    fits = {e.kernel: e.fit for e in model.series if e.metric == "time"}

    def fitted(kinds: tuple[str, ...]) -> float:
        return sum(float(fit.predict(values)[0][0]) for kernel, fit in fits.items()
                   if classes.get(kernel) in kinds)

    mpi = [k for k, c in classes.items() if c == "communication"]
    assert len(mpi) >= 13 and all(k.rsplit("/", 1)[-1].startswith("MPI_") for k in mpi)
    assert parts["comm_time"] == pytest.approx(fitted(("communication",)), rel=1e-12)
    assert parts["comp_time"] == pytest.approx(fitted(("key", "non-scalable")), rel=1e-12)
    assert parts["others_time"] == pytest.approx(float(fits[OTHERS].predict(values)[0][0]),
                                                 rel=1e-12)


def test_the_application_interval_adds_its_terms_with_their_measured_correlation(
        lulesh: pd.DataFrame) -> None:
    """The terms' errors come from the same runs: the model measures how they go together
    (a share in [0, 1] with its basis), and T_app's interval lies between the quadrature sum
    (independent errors) and the linear sum (errors that move as one)."""
    model = build_model(lulesh, [], source="lulesh", scaling="weak")
    correlation = model.error_correlation
    assert 0.0 <= correlation["rho"] <= 1.0 and correlation["pairs"] > 0
    values = {"p": np.array([343.0, 1000.0])}
    terms = list(contributions(model, values))
    above = np.array([upper - predicted for _, _, _, (predicted, _, upper) in terms])
    predicted, _, upper = assemble(model, values, terms=terms)["time"]
    independent, as_one = np.sqrt((above**2).sum(axis=0)), above.sum(axis=0)
    assert (independent <= upper - predicted + 1e-12).all()
    assert (upper - predicted <= as_one + 1e-12).all()
    for rho, expected in ((0.0, independent), (1.0, as_one)):
        fixed = replace(model, error_correlation={**correlation, "rho": rho})
        upper_at = assemble(fixed, values, terms=terms)["time"][2]
        np.testing.assert_allclose(upper_at - predicted, expected, rtol=1e-9)


def test_validation_compares_like_with_like_on_a_profiled_study(measured_data: Path) -> None:
    """LAMMPS profiled here, fit on P <= 8, validated at 16: each part is measured as the
    model defines it. Most of the wall time of oversubscribed ranks is outside every sampled
    function and MPI; counting it as predicted computation only (as before) made the
    computation's error 850% and sent refinement to a frequency rerun."""
    runs = [1, 2, 3, 4, 6, 8, 16]
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    comm = read_table(measured_data / "lammps/p1-32/comm.csv", "communication")
    rows, decision = validate(table[table["p"].isin(runs)], ["size"], "p=16", 0.1, "lammps",
                              comm=comm[comm["p"].isin(runs)])
    measured = rows.set_index("metric")["measured"]
    predicted = rows.set_index("metric")["predicted"]
    parts = ["computation_time", "comm_time", "others_time"]
    assert measured["time"] == pytest.approx(measured[parts].sum(), rel=1e-9)
    assert predicted["time"] == pytest.approx(predicted[parts].sum(), rel=1e-9)
    assert measured["others_time"] > measured["computation_time"]
    assert rows.set_index("metric")["ape"]["computation_time"] < 50
    larger = max(decision["gap_seconds"], key=decision["gap_seconds"].get)
    assert decision["part"] == (larger if decision["refine"] else None)
    assert set(decision["gap_seconds"]) == {"computation", "communication", "others"}


def test_an_operation_left_out_stays_in_the_unaccounted_time(measured_data: Path) -> None:
    """LAMMPS profiled here, fit on P = 1, 2, 3: MPI_Send (a tenth of the time; no peer at
    P = 1) was measured at 2 P and is left out. Its time stays in <unaccounted>, what
    neither kernels nor modelled MPI explain, so the application assembled at P = 4 is
    within 5% of the measured; while it was dropped from the sum, 20% below."""
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    comm = read_table(measured_data / "lammps/p1-32/comm.csv", "communication")
    rows, _ = validate(table[table["p"] <= 4], ["size"], "p=4", 0.1, "lammps",
                       comm=comm[comm["p"] <= 4])
    time = rows.set_index("metric").loc["time"]
    assert time["ape"] < 5, time
    model = build_model(table[table["p"] <= 3], ["size"], source="lammps",
                        comm=comm[comm["p"] <= 3])
    assert any(entry.operation == "MPI_Send" for entry in model.left_out)
    assert model.fit_of(UNACCOUNTED, "time") is not None


def fitted_up_to_8(folder: Path, param: str) -> tuple[pd.DataFrame, Model]:
    """A study profiled here (its measurements and MPI traces) and its model of P <= 8."""
    table = read_table(folder / "measurements.csv", "measurements")
    comm = read_table(folder / "comm.csv", "communication")
    return table, build_model(table[table["p"] <= 8], [param], source=folder.name,
                              comm=comm[comm["p"] <= 8])


def _saying_function(model: Model, rows: pd.DataFrame, size: float, before: str
                     ) -> Iterator[bool]:
    """Per row forecast beyond its function, whether its reason gives what the function
    alone gave, after ``before``."""
    for row in rows.itertuples():
        fit = model.fit_of(row.kernel, row.metric)
        function = fit.without_trend().predict({"p": np.array([row.p], float),
                                                "n": np.array([size])})[0][0]
        yield bool(fit.latest) and f"{before}{function:.3g}" in row.trust_reason


def test_a_forecast_by_the_latest_trend_says_so(measured_data: Path) -> None:
    """The ParRes Stencil from P <= 8: a row beyond the data whose series is forecast by its
    latest trend (apmt.fit_table.latest_trends) says so, with what its function gave; no row
    inside the data does, nor a row of a series without a trend; a kernel's time forecast
    through its instruction count (apmt.fit_table.counted_times) says that, with what its
    own function gave."""
    table, model = fitted_up_to_8(measured_data / "prk_stencil", "n")
    size = float(table["n"].iloc[0])
    rows = predict(model, pd.DataFrame({"p": [6, 16, 32], "n": size}))
    said = rows["trust_reason"].str.contains("forecast by its latest trend", na=False)
    assert said.sum() >= 40 and set(rows.loc[said, "p"]) == {16, 32}
    assert all(_saying_function(model, rows[said], size, "less well: "))
    counted = rows["trust_reason"].str.contains("forecast by its instruction count", na=False)
    assert counted.sum() >= 6 and set(rows.loc[counted, "p"]) == {16, 32}
    assert all(_saying_function(model, rows[counted], size, "own function: "))
    assert set(rows.loc[counted, "metric"]) == {"time"}
    plain = rows[~said & ~counted & (rows["p"] > 8) & rows["kernel"].ne(APP_KERNEL)]
    fits = [model.fit_of(k, m) for k, m in plain[["kernel", "metric"]].itertuples(index=False)]
    assert len(fits) >= 30 and not any(fit.latest for fit in fits if fit is not None)


def test_the_application_model_is_whole_where_the_data_ends(measured_data: Path) -> None:
    """MILC at P = 1..32 (data/milc): its MPI_Wait, a wait on the 2 crowded cores, is
    forecast beyond P = 32 by its latest trend (10.8 s per rank measured there, its
    function 7.6 s); the application's model goes on from P = 32 without a jump (it jumped
    from 11.2 s to 13.0 s between P = 32 and 32.1) and is within 10% of the 13.6 s measured
    at 32."""
    folder = measured_data / "milc"
    model = build_model(read_table(folder / "measurements.csv", "measurements"), ["sites"],
                        source="milc", comm=read_table(folder / "comm.csv", "comm"),
                        work="sites / p")
    [wait] = [o.fits["time"] for o in model.communication if o.name == "MPI_Wait"]
    assert wait.latest
    p = np.array([31.9, 32.0, 32.1])
    time = assemble(model, {"p": p, "sites": np.full(3, 5184.0)})["time"][0]
    assert time[2] / time[1] == pytest.approx(time[1] / time[0], abs=0.01)
    assert time[1] == pytest.approx(13.59, rel=0.1)


def test_a_series_its_sizes_predict_says_when_their_trends_forecast_it(
        measured_data: Path) -> None:
    """RELeARN, fitted at all its P (32 to 512) and sizes: its regions are predicted at
    each size by that size's own fit, and at P = 1024 some of those fits forecast by their
    latest trend. The rows say so at a measured size and between sizes alike, with what
    the functions alone gave."""
    table, _ = import_profiles("extrap-text", [measured_data / "relearn/relearn_data.txt"])
    model = build_model(table, ["n"], source="relearn", per_rank_params=frozenset({"n"}),
                        app_kernel="main()")
    targets = pd.DataFrame({"p": [1024, 1024], "n": [5000, 6500]})
    rows = predict(model, targets)
    said = rows[rows["trust_reason"].str.contains("forecast by its latest trend", na=False)]
    assert set(said["n"]) == {5000, 6500}
    moved = []
    for row in said.itertuples():
        fit = model.fit_of(row.kernel, row.metric)
        assert fit.strata and not fit.latest
        function = fit.without_trend().predict({"p": np.array([1024.0]),
                                                "n": np.array([float(row.n)])})[0][0]
        assert f"less well: {function:.3g}" in row.trust_reason
        moved.append(abs(row.predicted / function - 1))
    assert max(moved) > 0.01     # the trend forecasts something else than the function


def test_eq2s_sum_meets_the_measured_whole_where_a_part_explodes(measured_data: Path) -> None:
    """miniFE profiled here on 2 cores, fit on P <= 8: its MPI times grow like p^2 log^2 p
    from the crowded runs, and Eq. 2's sum at P = 16 and 32 (4.0 and 5.6 s, its parts each
    at most the whole's own fit; unbounded, 4.3 and 12.6 s) is 1.7 and 1.8 times the
    measured time. The application's time is the geometric mean of that sum and the
    measured wall time's own fit, every term scaled alike; its parts still add up to it,
    and it errs by less than half of what the sum did. Its interval lies between the
    whole's and the sum's (which spanned 1e6 and 1e10)."""
    table, model = fitted_up_to_8(measured_data / "minife", "nx")
    values = {"p": np.array([16.0, 32.0]), "nx": np.array([64.0, 64.0])}
    summed = np.sum([bounds[0] for *_, bounds in eq2_terms(model, values)], axis=0)
    whole = model.fit_of(APP_KERNEL, "time").predict(values)[0]
    assert (summed > whole).all()
    parts = assemble(model, values)
    np.testing.assert_allclose(parts["time"][0], np.sqrt(summed * whole), rtol=1e-9)
    np.testing.assert_allclose(sum(parts[part][0] for part in PARTS), parts["time"][0],
                               rtol=1e-9)
    measured = table[(table["kernel"] == APP_KERNEL) & table["p"].isin([16, 32])] \
        .groupby("p")["value"].mean().to_numpy()
    error, sum_error = (np.abs(x / measured - 1) for x in (parts["time"][0], summed))
    assert (sum_error > 0.6).all() and (error < sum_error / 2).all(), (error, sum_error)
    # the interval: the two forecasts' ends, averaged in logs; it holds both measured times
    _, lower, upper = parts["time"]
    whole_lower, whole_upper = model.fit_of(APP_KERNEL, "time").predict(values)[1:]
    assert ((lower <= measured) & (measured <= upper)).all()
    assert (whole_lower < lower).all() and (upper < summed * 1e6).all()
    assert (upper > whole_upper).all()


def test_within_bounds_each_end_of_a_part_by_the_wholes() -> None:
    """End by end, a part's prediction and interval are at most the whole's; where the whole
    is not a number the part stays as it is, and a part without a number gets none."""
    part = (np.array([1.0, 5.0, np.nan]), np.array([0.5, 4.0, np.nan]),
            np.array([9.0, 80.0, np.nan]))
    whole = (np.array([2.0, 3.0, 1.0]), np.array([1.0, np.nan, 0.5]),
             np.array([4.0, 6.0, 2.0]))
    bounded = within(part, whole)
    np.testing.assert_array_equal(bounded[0], [1.0, 3.0, np.nan])
    np.testing.assert_array_equal(bounded[1], [0.5, 4.0, np.nan])
    np.testing.assert_array_equal(bounded[2], [4.0, 6.0, np.nan])
    assert within(part, None) is part


def test_no_part_exceeds_the_whole_where_an_mpi_time_explodes(measured_data: Path) -> None:
    """ParRes Nstream profiled here on 2 cores, fit on P <= 8: MPI_Reduce, called a few times
    a run, took 0.14 ms at P = 2 and 46 ms at 4 on the crowded cores, and its own fit's
    upper ends at P = 16 and 32 are over a hundred times the whole run's (2.0 and 2.5 s
    measured; at P = 32, 2.3e5 s). A part never
    exceeds its whole: every term of Eq. 2 and every kernel's time in the predictions is at
    most the application's own fit, end by end, and the application's interval, which summed
    the parts' ends, now spans a few seconds and holds the measured times. A row the bound
    changed says what its own fit gave: no number is hidden."""
    table, model = fitted_up_to_8(measured_data / "prk_nstream", "length")
    values = {"p": np.array([16.0, 32.0]), "length": np.array([2e7, 2e7])}
    whole = whole_time(model, values)
    [reduce_fit] = [op for op in model.communication if op.name == "MPI_Reduce"]
    assert (reduce_fit.predict(values)[2] > 100 * whole[2]).all()
    for source, _, _, bounds in eq2_terms(model, values):
        for end, limit in zip(bounds, whole, strict=True):
            assert (end <= limit).all(), source
    measured = table[(table["kernel"] == APP_KERNEL) & (table["metric"] == "time")
                     & table["p"].isin([16, 32])].groupby("p")["value"].mean().to_numpy()
    _, lower, upper = assemble(model, values)["time"]
    assert ((lower <= measured) & (measured <= upper)).all() and (upper < 4 * whole[2]).all()
    rows = predict(model, pd.DataFrame({"p": values["p"], "length": values["length"]}))
    fitted = rows[(rows["kernel"] == APP_KERNEL) & (rows["metric"] == "fitted_time")]
    kernels = rows[(rows["metric"] == "time") & (rows["kernel"] != APP_KERNEL)
                   & rows["predicted"].notna()]
    assert len(kernels) >= 2 * 4
    for end in ("predicted", "lower", "upper"):
        limit = kernels["p"].map(fitted.set_index("p")[end])
        assert (kernels[end] <= limit).all(), end
    # a bounded row says what its own fit gave: the time beyond the parts (the crowded
    # cores' waits) grows on its own to 4 s at P = 32; main's time is not bounded
    said = kernels.set_index(["kernel", "p"])["trust_reason"]
    assert "at most the application's time (its own fit: 3.97 s" in said["<unaccounted>", 32]
    assert not said["main"].str.contains("at most the application's time").any()


def test_time_no_part_measured_is_unaccounted_not_a_kernels(measured_data: Path) -> None:
    """LAMMPS in counter mode without its MPI traces: the kernels' sum at P = 16 (0.08 s)
    misses the ranks' waits that the measured wall time (0.97 s) holds. What the whole shows
    beyond its parts is one <unaccounted> term; the pair loop's time stays its own. The MPI
    library's own code is counted in instructions, as the kernels are, and enters the sum
    at its CPI (it entered as 6 million seconds: its instructions)."""
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    model = build_model(table[table["p"] <= 8], ["size"], source="lammps",
                        machine=load_machine("generic-x86-2core-vm"))
    values = {"p": np.array([16.0]), "size": np.array([0.6])}
    raw = {(source, part): bounds[0] for source, part, _, bounds in eq2_terms(model, values)}
    terms = contributions(model, values)
    summed, whole = sum(raw.values()), model.fit_of(APP_KERNEL, "time").predict(values)[0]
    assert model.kernel_metric("<MPI runtime>") == "instructions"
    assert 0 < raw[("<MPI runtime>", "comm_time")][0] < 0.05
    assert (summed < whole).all()
    added = [bounds for source, _, _, bounds in terms[len(raw):]]
    assert [source for source, *_ in terms[len(raw):]] == [UNACCOUNTED]
    np.testing.assert_allclose(added[0][0], np.sqrt(summed * whole) - summed, rtol=1e-9)
    for source, part, _, bounds in terms[:len(raw)]:
        np.testing.assert_array_equal(bounds[0], raw[(source, part)])


def test_error_correlation_pools_shared_folds() -> None:
    same = {"leave 1": 0.1, "leave 2": -0.2, "forward 4": 0.3}
    assert error_correlation([same, same]) == (pytest.approx(1.0), 1)
    opposite = {label: -value for label, value in same.items()}
    assert error_correlation([same, opposite]) == (0.0, 1)
    assert error_correlation([same, {"leave 1": 0.1, "leave 2": 0.2}]) == (0.0, 0)


def test_lulesh_validation_decision(lulesh: pd.DataFrame) -> None:
    rows, decision = validate(lulesh, [], "p=max", 0.05, "lulesh", scaling="weak")
    assert set(rows["metric"]) == {"time", "computation_time", "comm_time"}
    assert set(rows["p"]) == {343} and set(rows["kernel"]) == {APP_KERNEL}
    by_metric = rows.set_index("metric")
    # the measured application time is all the kernels' time at P = 343
    series = points(lulesh, [])
    assert by_metric.loc["time", "measured"] == pytest.approx(
        series.loc[series["p"] == 343, "value"].sum(), rel=1e-9)
    error = abs(by_metric.loc["time", "predicted"] / by_metric.loc["time", "measured"] - 1)
    assert decision["error"] == pytest.approx(error, rel=1e-9)
    assert decision["refine"] == (error > 0.05)
    gaps = {part: abs(by_metric.loc[metric, "predicted"] - by_metric.loc[metric, "measured"])
            for part, metric in (("computation", "computation_time"),
                                 ("communication", "comm_time"))}
    assert decision["gap_seconds"] == pytest.approx(gaps, rel=1e-9)
    if decision["refine"]:
        assert decision["part"] == max(gaps, key=gaps.get)
    else:
        assert decision["part"] is None
    assert decision["worst_point"] == {"p": 343.0}

    _, loose = validate(lulesh, [], "p=max", 2 * error + 0.01, "lulesh", scaling="weak")
    assert loose["refine"] is False and loose["part"] is None
    _, strict = validate(lulesh, [], "p=max", error / 2, "lulesh", scaling="weak")
    assert strict["refine"] is True and strict["part"] == max(gaps, key=gaps.get)


# ------------------------------------------------------------------ counter mode: known answer

COUNTER_P = [2, 4, 8, 16, 32]
KERNELS = {  # per-rank totals at P = 1: instructions, stall cycles, hits and misses
    "solve": {"instructions": 4e10, "cpi": 0.8, "stall_cycles": 1.2e10, "l1_hits": 1e10,
              "l2_hits": 2e9, "llc_hits": 5e8, "llc_misses": 1e8},
    "exchange": {"instructions": 1e10, "cpi": 1.5, "stall_cycles": 6e9, "l1_hits": 3e9,
                 "l2_hits": 5e8, "llc_hits": 2e8, "llc_misses": 8e7},
}
COUNTS = ("instructions", "stall_cycles", "l1_hits", "l2_hits", "llc_hits", "llc_misses")


def counter_table(frequency: float, cpi_growth: float = 0.0) -> pd.DataFrame:
    """Everything ~1/P; two repetitions 2% apart, which leave the CPI unchanged.

    ``cpi_growth`` makes the computing CPI grow with log2(P) (a varying CPI, Eq. 4).
    """
    rows = []
    for kernel, k in KERNELS.items():
        for p in COUNTER_P:
            for rep, factor in ((1, 0.99), (2, 1.01)):
                counts = {m: factor * k[m] / p for m in COUNTS}
                cpi = k["cpi"] * (1 + cpi_growth * np.log2(p))
                counts["cycles"] = cpi * counts["instructions"] + counts["stall_cycles"]
                counts["time"] = counts["cycles"] / frequency
                rows += [{"kernel": kernel, "metric": metric, "p": p, "rep": rep, "value": v}
                         for metric, v in counts.items()]
    return check_table(pd.DataFrame(rows), "counters")


@pytest.fixture(scope="module")
def machine() -> dict:
    return load_machine(MACHINE)


@pytest.fixture(scope="module")
def counter_model(machine: dict) -> dict:
    return build_model(counter_table(machine.hertz), [], source="counters", machine=machine)


def test_counter_mode_cpi(counter_model: dict) -> None:
    assert counter_model.mode == "counters"
    assert not any("time-only" in note for note in counter_model.notes)
    assert set(counter_model.cpi) == set(KERNELS)
    for kernel, k in KERNELS.items():
        cpi = counter_model.cpi[kernel]
        assert cpi.cpi == pytest.approx(k["cpi"], abs=1e-6)
        assert abs(cpi.deviation) < 1e-12
        assert set(cpi.per_run) == {f"p={p}" for p in COUNTER_P}


def test_cpi_deviation_when_cpi_varies(machine: dict) -> None:
    model = build_model(counter_table(machine.hertz, cpi_growth=0.05), [], source="counters",
                        machine=machine)
    for kernel, k in KERNELS.items():
        per_p = np.array([k["cpi"] * (1 + 0.05 * np.log2(p)) for p in COUNTER_P])
        cpi = model.cpi[kernel]
        assert cpi.cpi == pytest.approx(per_p.mean(), rel=1e-6)
        assert cpi.deviation > 0
        assert cpi.deviation == pytest.approx(np.var(per_p, ddof=1), rel=1e-6)


def test_counter_mode_prediction(counter_model: dict, machine: dict) -> None:
    frequency = machine.hertz
    latency = machine.fields["latency_cycles"]
    p = 128
    table = predict(counter_model, pd.DataFrame({"p": [p]}))
    app = app_rows(table)
    comp = sum(k["instructions"] / p * k["cpi"] / frequency for k in KERNELS.values())
    memory = sum(k["stall_cycles"] / p / frequency for k in KERNELS.values())
    assert app["comp_time"] == pytest.approx(comp, rel=0.02)
    assert app["mem_time"] == pytest.approx(memory, rel=0.02)
    assert app["comm_time"] == 0 and app["others_time"] == 0
    # the time the runs would measure: cycles / f
    cycles = sum((k["cpi"] * k["instructions"] + k["stall_cycles"]) / p for k in KERNELS.values())
    assert app["time"] == pytest.approx(cycles / frequency, rel=0.02)
    for kernel, k in KERNELS.items():
        memory_cycles = (k["l1_hits"] * latency["l1"] + k["l2_hits"] * latency["l2"]
                         + k["llc_hits"] * latency["llc"] + k["llc_misses"] * latency["memory"])
        total = memory_cycles / p / frequency
        assert kernel_row(table, kernel, "mem_total_time") == pytest.approx(total, rel=0.02)
        blocking = k["stall_cycles"] / p / frequency / total
        assert kernel_row(table, kernel, "bf_mem") == pytest.approx(blocking, rel=0.02)
        assert 0 < blocking < 1


def test_without_a_machine_file_the_model_is_time_only(machine: dict) -> None:
    model = build_model(counter_table(machine.hertz), [], source="counters")
    assert model.mode == "time"
    assert model.cpi                             # the counters were there
    assert any("no machine file" in note for note in model.notes)
    table = predict(model, pd.DataFrame({"p": [128]}))
    assert "bf_mem" not in set(table["metric"]) and app_rows(table)["mem_time"] == 0
    truth = sum((k["cpi"] * k["instructions"] + k["stall_cycles"]) / 128
                for k in KERNELS.values()) / machine.hertz
    assert app_rows(table)["time"] == pytest.approx(truth, rel=0.02)


def test_counter_mode_beside_measured_application_and_mpi_time(machine: dict) -> None:
    """The run's wall time (kernel ``<app>``) and an MPI call come as time only, the computing
    kernels with counters: the model stays in counter mode and the MPI call is T_comm."""
    frequency = machine.hertz
    table = counter_table(frequency)
    time = table[table["metric"] == "time"].groupby(["p", "rep"], as_index=False)["value"].sum()
    mpi = time.assign(kernel="MPI_Allreduce", metric="time", value=1e-3 * np.log2(time["p"]))
    app = time.assign(kernel=APP_KERNEL, metric="time", value=time["value"] + mpi["value"])
    model = build_model(check_table(pd.concat([table, mpi, app], ignore_index=True), "mixed"),
                        [], source="mixed", machine=machine)
    classes = {k["kernel"]: k["class"] for k in model.kernels}
    assert classes == {"solve": "key", "exchange": "key", "MPI_Allreduce": "communication",
                       APP_KERNEL: "application"}
    assert model.mode == "counters" and set(model.cpi) == set(KERNELS)
    table = predict(model, pd.DataFrame({"p": [128]}))
    app_time = app_rows(table)
    assert app_time["comm_time"] == pytest.approx(7e-3, rel=0.05)
    assert app_time["time"] == pytest.approx(sum(app_time[p] for p in PARTS), rel=1e-9)
    assert app_time["fitted_time"] == pytest.approx(app_time["time"], rel=0.05)


# ------------------------------------------------------------------------------------ BF_comm

BF_P = np.array([4, 8, 16, 32, 64])
OVERLAP = np.array([0.9, 0.8, 0.7, 0.6, 0.5])      # share of T_comm not hidden, per run


def comm_rows() -> tuple[pd.DataFrame, np.ndarray]:
    """Per rank: odd ranks spend 10% longer in each call, so the per-rank mean is 1.05x."""
    rows = []
    for p in BF_P:
        for rank in range(p):
            slow = 1.1 if rank % 2 else 1.0
            rows += [{"op": "MPI_Isend", "calls": 20.0, "bytes": 1e5 * np.sqrt(p),
                      "time": slow * (1e-9 * 1e5 * np.sqrt(p) + 1e-3), "p": p, "rank": rank},
                     {"op": "MPI_Allreduce", "calls": 10.0, "bytes": 80.0,
                      "time": slow * 10 * (2e-5 * np.log2(p) + 1e-5), "p": p, "rank": rank}]
    per_rank = 1.05 * ((1e-9 * 1e5 * np.sqrt(BF_P) + 1e-3) + 10 * (2e-5 * np.log2(BF_P) + 1e-5))
    return check_table(pd.DataFrame(rows), "comm", "communication"), per_rank


def test_bf_comm_from_measured_application_time() -> None:
    comm, comm_time = comm_rows()
    solve, update = 40.0 / BF_P + 0.3, 2.0 / np.sqrt(BF_P)
    app = solve + update + OVERLAP * comm_time
    rows = []
    for i, p in enumerate(BF_P):
        for kernel, value in (("solve", solve[i]), ("update", update[i]), (APP_KERNEL, app[i]),
                              ("MPI_Isend", comm_time[i] / 2), ("MPI_Allreduce", comm_time[i] / 2)):
            rows.append({"kernel": kernel, "metric": "time", "p": int(p), "value": value})
    measurements = check_table(pd.DataFrame(rows), "measurements")
    model = build_model(measurements, [], source="bf", comm=comm)
    expected = float(np.sum(app - (solve + update)) / np.sum(comm_time))
    assert 0 < expected < 1
    assert model.bf_comm == pytest.approx(expected, rel=1e-9)
    assert "summed over 5 runs" in model.bf_comm_note
    assert model.app_kernel == APP_KERNEL
    # T_comm in Eq. 2 is the operations' Hockney models, scaled by BF_comm (before the sum
    # is reconciled with the application time's own fit, whose latest trend at P = 256 is
    # below the parts' sum here)
    values = {"p": np.array([256.0])}
    operations = sum(op.predict(values)[0][0] for op in model.communication)
    comm_part = sum(bounds[0][0] for _, _, operation, bounds in eq2_terms(model, values)
                    if operation is not None)
    assert comm_part == pytest.approx(model.bf_comm * operations, rel=1e-12)

    without_app = measurements[measurements["kernel"] != APP_KERNEL]
    assert build_model(without_app, [], source="bf", comm=comm).bf_comm == 1.0


def test_memory_contention_warning(machine: dict) -> None:
    """E = LLC misses / memory accesses above 1e-4 warns about larger problem sizes."""
    table = counter_table(machine.hertz)
    accesses = []
    for kernel, share in (("solve", 1e-5), ("exchange", 1e-2)):
        for p in COUNTER_P:
            for rep in (1, 2):
                loads = KERNELS[kernel]["l1_hits"] / p
                misses = table.query(f"kernel == '{kernel}' and metric == 'llc_misses' and "
                                     f"p == {p} and rep == {rep}")["value"].iloc[0]
                accesses += [{"kernel": kernel, "metric": "mem_loads", "p": p, "rep": rep,
                              "value": misses / share - loads / 10},
                             {"kernel": kernel, "metric": "mem_stores", "p": p, "rep": rep,
                              "value": loads / 10}]
    model = build_model(pd.concat([table, pd.DataFrame(accesses)], ignore_index=True), [],
                        source="counters", machine=machine)
    assert model.contention["solve"] == pytest.approx(1e-5, rel=1e-6)
    assert model.contention["exchange"] == pytest.approx(1e-2, rel=1e-6)
    warnings = [note for note in model.notes if note.startswith("memory contention")]
    assert len(warnings) == 1 and "'exchange'" in warnings[0]


def test_bf_comm_ignores_runs_without_communication_and_stays_a_share() -> None:
    """At P = 1 MPI takes no time: such a run cannot say how much communication overlaps;
    waits outside MPI (oversubscribed ranks) would push the ratio above 1: clamped."""
    comm, comm_time = comm_rows()
    comm.loc[comm["p"] == BF_P[0], "time"] = 0.0
    solve = 40.0 / BF_P + 0.3
    beyond = np.where(BF_P.max() == BF_P, 0.5, 3.0)   # mostly 3x the MPI time beyond computation
    app = solve + beyond * comm_time
    rows = [{"kernel": kernel, "metric": "time", "p": int(p), "value": value}
            for i, p in enumerate(BF_P)
            for kernel, value in (("solve", solve[i]), (APP_KERNEL, app[i]))]
    model = build_model(check_table(pd.DataFrame(rows), "m"), [], source="bf", comm=comm)
    assert model.bf_comm == 1.0
    assert f"summed over {len(BF_P) - 1} runs" in model.bf_comm_note
    assert "clamped" in model.bf_comm_note


def test_an_operation_no_shape_follows_is_left_out_with_a_note() -> None:
    """MPI_Sendrecv's time per rank as a real run of tests/mpi_programs/ring.c gave it with
    srun outside an allocation (each rank waiting for a core from P=3 on): a 10^4 jump that
    every shape turns negative or explodes on. The model leaves it out and says so; the other
    operation is still modelled."""
    p = np.array([1, 2, 3, 4])
    jump = np.array([0.000305, 0.0247, 6.004, 8.862])
    steady = np.array([0.000028, 0.00047, 0.0009, 0.0013])
    comm = pd.DataFrame([{"op": op, "calls": 500.0, "bytes": 4000.0 * 500, "time": t,
                          "p": int(pp)} for op, times in (("MPI_Sendrecv", jump),
                                                          ("MPI_Allreduce", steady))
                         for pp, t in zip(p, times, strict=True)])
    rows = [{"kernel": "relax", "metric": "time", "p": int(pp), "value": 1.0 / pp} for pp in p]
    model = build_model(check_table(pd.DataFrame(rows), "m"), [], source="ring",
                        comm=check_table(comm, "c", kind="communication"))
    assert [op.op for op in model.communication] == ["MPI_Allreduce"]
    assert any(note.startswith("MPI operation MPI_Sendrecv not modelled: no plausible fit")
               for note in model.notes), model.notes



def test_small_functions_sampled_at_two_p_only_are_left_out_with_a_note() -> None:
    """A sampled profile (tests/mpi_programs/imbalance.c at P = 1, 2, 3 once gave this): the
    small functions got no sample at P = 1, so the aggregated kernel is seen at 2 P; the model
    is still built, without it, and says so."""
    rows = [{"kernel": "relax", "metric": "time", "p": p, "value": 1.0 / p} for p in (1, 2, 3)]
    rows += [{"kernel": "helper", "metric": "time", "p": p, "value": 0.004} for p in (2, 3)]
    model = build_model(check_table(pd.DataFrame(rows), "m"), [], source="sampled")
    assert {entry.kernel for entry in model.series} == {"relax"}
    assert any(note.startswith(f"{OTHERS}/time not modelled: the series has 2 distinct p (2, "
                               "3); at least 3 are needed")
               for note in model.notes), model.notes
    predicted = predict(model, pd.DataFrame({"p": [6]}))
    left_out = predicted["trust_reason"].str.startswith("not modelled")
    assert np.isfinite(predicted.loc[~left_out, "predicted"]).all()
    [row] = predicted[left_out].itertuples()
    assert (row.kernel, row.metric, row.trust) == (OTHERS, "time", "unsupported")
    assert np.isnan(row.predicted) and "2 distinct p" in row.trust_reason

def test_time_outside_computation_and_mpi_is_modelled() -> None:
    """A measured wall time above computation plus MPI in every run (start-up, waits outside
    MPI) becomes <unaccounted>, part of T_others, so that T_app meets the measured time."""
    comm, comm_time = comm_rows()
    solve = 40.0 / BF_P + 0.3
    startup = 0.25 + 0.01 * BF_P
    rows = [{"kernel": kernel, "metric": "time", "p": int(p), "value": value}
            for i, p in enumerate(BF_P)
            for kernel, value in (("solve", solve[i]), (APP_KERNEL, solve[i] + comm_time[i]
                                                        + startup[i]))]
    model = build_model(check_table(pd.DataFrame(rows), "m"), [], source="bf", comm=comm)
    assert model.bf_comm == 1.0 and "<unaccounted>" in model.bf_comm_note
    assert any(entry.kernel == "<unaccounted>" for entry in model.series)
    parts = assemble(model, {"p": np.array([float(BF_P[2])])})
    measured = solve[2] + comm_time[2] + startup[2]
    assert parts["time"][0][0] == pytest.approx(measured, rel=0.02)
    assert parts["others_time"][0][0] == pytest.approx(startup[2], rel=0.05)


def test_a_solved_bf_mem_replaces_the_stall_cycles(counter_model: dict, machine: dict) -> None:
    """After a lower-frequency refinement (apmt.refine.apply_frequency_solution) a kernel's
    memory time is BF_mem * T_mem (Eq. 2), with the instructions' relative bounds, and the
    table reports that BF_mem; the other kernel keeps its stall cycles."""
    model = copy.deepcopy(counter_model)
    model.cpi["solve"].bf_mem = 0.25
    values = {"p": np.array([64.0, 128.0])}
    total = memory_time(model, "solve", values)
    instructions = model.fit_of("solve", "instructions").predict(values)
    mem = _kernel_time(model, "solve", values)["mem_time"]
    assert mem[0] == pytest.approx(0.25 * total)
    for bound, counted in zip(mem, instructions, strict=True):
        assert bound == pytest.approx(0.25 * total * counted / instructions[0])
    assert _kernel_time(model, "exchange", values)["mem_time"][0] == pytest.approx(
        _kernel_time(counter_model, "exchange", values)["mem_time"][0])
    table = predict(model, pd.DataFrame({"p": [128]}))
    assert kernel_row(table, "solve", "bf_mem") == pytest.approx(0.25)
    before = app_rows(predict(counter_model, pd.DataFrame({"p": [128]})))["mem_time"]
    stalls = model.fit_of("solve", "stall_cycles").predict({"p": np.array([128.0])})[0][0] \
        / machine.hertz
    assert app_rows(table)["mem_time"] == pytest.approx(before - stalls + 0.25 * total[1],
                                                        rel=1e-6)


def test_a_counters_only_table_models_every_series() -> None:
    """Instructions, loads, stores and branches per function, bytes and calls per MPI call,
    and no time (what a counter backend alone gives): the functions are classed by
    instructions, every series of every kept kernel is fitted and predicted, and no
    application time is made up."""
    rows = []
    for p in (1, 2, 4, 8, 16):
        per_kernel = {
            "solve": {"instructions": 8e9 / p, "mem_loads": 3e9 / p, "mem_stores": 1e9 / p,
                      "branches": 5e8 / p},
            "halo": {"instructions": 2e8 * (1 + np.log2(p)), "mem_loads": 9e7,
                     "mem_stores": 4e7, "branches": 1e7},
            "MPI_Allreduce": {"bytes": 8.0 * 100, "calls": 100.0},
        }
        rows += [{"kernel": k, "metric": m, "p": p, "value": v}
                 for k, metrics in per_kernel.items() for m, v in metrics.items()]
    table = check_table(pd.DataFrame(rows), "counters")
    model = build_model(table, [], source="counters")
    assert model.cost_metric == "instructions"
    classes = {k["kernel"]: k["class"] for k in model.kernels}
    assert classes == {"solve": "key", "halo": "key", "MPI_Allreduce": "communication"}
    fitted = {(e.kernel, e.metric) for e in model.series}
    assert fitted == {(row["kernel"], row["metric"]) for row in rows}
    assert any(note.startswith("no application time") for note in model.notes)
    predicted = predict(model, pd.DataFrame({"p": [32]})).set_index(["kernel", "metric"])
    assert kernel_row(predict(model, pd.DataFrame({"p": [32]})), "solve", "instructions") \
        == pytest.approx(8e9 / 32, rel=0.05)
    series = predicted.drop(index=APP_KERNEL, level="kernel")
    assert np.isfinite(series["predicted"]).all() and (series["predicted"] > 0).all()
    app = predicted.loc[(APP_KERNEL, "time")]
    assert np.isnan(app["predicted"]) and app["trust"] == "unsupported"
    assert app["trust_reason"].startswith("no application time")


def test_model_files_are_versioned(relearn_model, tmp_path: Path) -> None:
    """apmt-model/2 is the typed model's file; a file of the first format is converted (the
    fields its older versions lacked get the values apmt assumed then); others are refused."""
    path = tmp_path / "model.json"
    save_model(relearn_model, path)
    data = json.loads(path.read_text())
    assert data["format"] == "apmt-model/2"
    old = {key: value for key, value in data.items() if key != "error_correlation"}
    path.write_text(json.dumps({**old, "format": "apmt-model/1"}))
    assert load_model(path).rho == 0.0 and load_model(path).notes == relearn_model.notes
    path.write_text(json.dumps({**data, "format": "apmt-model/9"}))
    with pytest.raises(ApmtError, match=r"model.json: not an apmt model \(field 'format'"):
        load_model(path)
    path.write_text(json.dumps({key: value for key, value in data.items() if key != "cpi"}))
    with pytest.raises(ApmtError, match=r"model.json: not a valid apmt model \(KeyError"):
        load_model(path)
