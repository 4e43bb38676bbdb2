"""A table's series fitted together: the regime it starts in, the power law from three P,
and intervals calibrated on the table's own backtests, on real data and planted cases."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from apmt.fit import (
    CAPPED_LOG_ERROR,
    Z_INTERVAL,
    NoPlausibleFit,
    SeriesFit,
    _log_combination,
    fit_series,
    linear_law,
    power_law,
    stratum_weights,
)
from apmt.fit_table import (
    REGIME_GAIN,
    SeriesData,
    TableFit,
    _backtest_error,
    _bend_backtests,
    classic_forecast,
    fit_all,
    fit_table,
    power_law_forecast,
    series_data,
    small_sample_bound,
    strata,
)
from apmt.ingest import import_profiles
from apmt.series import points
from apmt.tables import read_table

P = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 8.0])


def planted(shapes: dict[str, np.ndarray], p: np.ndarray = P) -> dict[tuple, SeriesData]:
    return {(name,): SeriesData({"p": p}, y, ("p",)) for name, y in shapes.items()}


def lammps(measured_data: Path, runs: list[float]) -> pd.DataFrame:
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    return points(table[table["p"].isin(runs)], ["size"])


def predictions(fits: dict[tuple, SeriesFit], truth: pd.DataFrame, params: list[str]
                ) -> Iterator[tuple[pd.DataFrame, tuple[np.ndarray, ...]]]:
    """Each fitted series' held-out rows with its prediction and interval there."""
    for key, rows in truth.groupby(["kernel", "metric"]):
        if key in fits:
            yield rows, fits[key].predict({c: rows[c].to_numpy(float) for c in ["p", *params]})


def coverage(fits: dict[tuple, SeriesFit], truth: pd.DataFrame, params: list[str]
             ) -> tuple[float, int]:
    """Share of the held-out values inside their 90% interval, and how many were judged."""
    inside = []
    for rows, (_, lower, upper) in predictions(fits, truth, params):
        inside += list((rows["value"] >= lower) & (rows["value"] <= upper))
    return float(np.mean(inside)), len(inside)


def npb_classes(measured_data: Path, bench: str, param: str) -> pd.DataFrame:
    """The points of an NPB benchmark's classes S, W and A in one table."""
    return points(pd.concat([read_table(measured_data / f"npb/{bench}-{c}/measurements.csv",
                                        "measurements") for c in "SWA"]), [param])


def largest_from_others(measured_data: Path, bench: str, param: str
                        ) -> tuple[TableFit, pd.DataFrame]:
    """Classes S and W of an NPB benchmark fitted in one table, and class A's points."""
    series = npb_classes(measured_data, bench, param)
    largest = series[param].max()
    return (fit_all(series[series[param] < largest], [param], f"npb {bench}"),
            series[series[param] == largest])


def test_three_p_give_the_two_classic_laws() -> None:
    """Three values cannot tell shapes apart: the power law and the linear law in the work per
    rank (c + a/P) compete alone, and where the data cannot tell them apart either, the
    prediction is their geometric mean."""
    p = np.array([1.0, 2.0, 3.0])
    fit = fit_series({"p": p}, np.array([4.116e6, 4.128e6, 4.521e6]))
    laws = {(h.form, tuple(t.exponent for basis in h.bases for t in basis))
            for h in [fit.hypothesis, *(h for h, _ in fit.alternatives)]}
    assert laws == {("loglinear", (0.0,)), ("linear", (-1.0,))}
    at_32 = {"p": np.array([32.0])}
    separate = [np.exp(h.design(at_32) @ c)[0] if h.form == "loglinear" else
                (h.design(at_32) @ c)[0]
                for h, c in [(fit.hypothesis, fit.coefficients), *fit.alternatives]]
    assert fit.predict(at_32)[0][0] == pytest.approx(np.sqrt(np.prod(separate)), rel=1e-9)
    four = fit_series({"p": np.array([1.0, 2.0, 3.0, 4.0])}, 0.2 + 8.8 / np.arange(1.0, 5.0))
    assert four.function == "0.2 + 8.8 * p^-1"


def test_three_p_of_real_lammps_predict_32(measured_data: Path) -> None:
    """LAMMPS's instructions per function fitted at P = 1, 2, 3 (where apmt once chose
    P^2 shapes and erred by 19% at P = 4..32): within 10% at P = 32 for most functions."""
    train = lammps(measured_data, [1, 2, 3])
    truth = lammps(measured_data, [32])
    fitted = fit_all(train[train["metric"] == "instructions"], ["size"], "lammps")
    errors = []
    for key, rows in truth[truth["metric"] == "instructions"].groupby(["kernel", "metric"]):
        if key in fitted.fits:
            predicted = fitted.fits[key].predict({"p": rows["p"].to_numpy(float),
                                                  "size": rows["size"].to_numpy(float)})[0]
            errors.append(abs(predicted[0] / rows["value"].iloc[0] - 1))
    assert len(errors) > 40
    assert np.median(errors) < 0.10


def test_a_planted_change_of_regime_is_found() -> None:
    """Series that grow linearly from P = 3, after two runs of another regime (a VM's two
    cores): the fits start at 3, and the note says why with both errors."""
    rng = np.random.default_rng(5)
    shapes = {f"f{i}": np.where(P >= 3, 10.0 + i + 0.5 * P, 3.0 + i) * np.exp(
        rng.normal(0, 0.002, len(P))) for i in range(8)}
    table = fit_table(planted(shapes))
    regime = table.regime
    assert regime["start"] == 3.0
    first, later, chance = regime["scores"]["3"]
    assert later < REGIME_GAIN * first and chance < 0.05
    assert "p < 3 follow another regime" in regime["note"]
    fit = table.fits[("f0",)]
    assert fit.domain["p"] == (3.0, 8.0)
    at_32 = {"p": np.array([32.0])}
    whole = fit_series({"p": P}, shapes["f0"]).predict(at_32)[0][0]
    assert fit.predict(at_32)[0][0] == pytest.approx(10.0 + 16.0, rel=0.1)
    assert abs(whole - 26.0) > 2 * abs(fit.predict(at_32)[0][0] - 26.0)
    assert table.notes[0] == regime["note"]
    assert table.notes[1].startswith("8 of 8 series were fitted from 4 values of P")  # 3..8


def test_one_regime_throughout_is_left_whole() -> None:
    """A bend that a shape of the family follows (5 + 100/P, curved in log-log space, where a
    power law fitted on the largest P only would do better) is no change of regime."""
    rng = np.random.default_rng(4)
    shapes = {f"f{i}": (i + 1.0) * (5.0 + 100.0 / P) * np.exp(rng.normal(0, 0.01, len(P)))
              for i in range(5)}
    table = fit_table(planted(shapes))
    assert "start" not in table.regime and "note" not in table.regime
    assert table.fits[("f0",)].domain["p"] == (1.0, 8.0)


def test_real_lammps_starts_where_ranks_share_the_cores(measured_data: Path) -> None:
    """LAMMPS profiled on 2 cores: from P = 3 the ranks share them (oversubscribed), and the
    table says so; fitted from there, its functions predict P = 16 and 32 with a median
    error of a few percent and the intervals hold most of the values."""
    fitted = fit_all(lammps(measured_data, [1, 2, 3, 4, 6, 8]), ["size"], "lammps")
    assert fitted.regime["start"] == 3.0
    inside, judged = coverage(fitted.fits, lammps(measured_data, [16, 32]), ["size"])
    assert judged > 900
    assert inside >= 0.75


def calibrated_table(count: int) -> tuple[TableFit, list[float]]:
    """A table of ``count`` noisy series of 5 + 100/P and its backtests' ratios, each
    series' error at P = 8 from P <= 6 in units of its own error plus the typical one."""
    rng = np.random.default_rng(11)
    shapes = {f"f{i}": (5.0 + 100.0 / P) * np.exp(rng.normal(0, 0.05, len(P)))
              for i in range(count)}
    table = fit_table(planted(shapes))
    ratios = []
    for key, series in planted(shapes).items():
        last = series.values["p"] == 8.0
        alone = fit_series({"p": P[~last]}, series.y[~last])
        error = abs(np.log(alone.predict({"p": np.array([8.0])})[0][0] / series.y[last][0]))
        ratios.append(error / (table.fits[key].sigma + table.calibration["typical_error"]))
    return table, ratios


def test_the_intervals_multiplier_is_the_conformal_rank() -> None:
    """n backtests: the ceil((n + 1) * 0.9)-th smallest ratio."""
    table, ratios = calibrated_table(20)
    rank = math.ceil(21 * 0.9)
    assert table.calibration["multiplier"] == pytest.approx(sorted(ratios)[rank - 1])
    fit = table.fits[("f0",)]
    multiplier = table.calibration["multiplier"]
    assert fit.noise_width == pytest.approx(multiplier * fit.sigma)
    assert fit.drift_width == pytest.approx(multiplier * table.calibration["typical_error"])
    assert fit.step == pytest.approx(np.log(8 / 6))


def test_intervals_grow_with_the_distance_beyond_the_data() -> None:
    """One step out, the backtests' width; farther, the noise adds up like independent
    errors (with the square root of the steps) and the typical error like a slope's."""
    rng = np.random.default_rng(2)
    shapes = {f"f{i}": (5.0 + 100.0 / P) * np.exp(rng.normal(0, 0.05, len(P)))
              for i in range(10)}
    fit = fit_table(planted(shapes)).fits[("f3",)]
    for target in (16.0, 64.0, 256.0):
        _, lower, upper = fit.predict({"p": np.array([target])})
        steps = np.log(target / 8.0) / np.log(8.0 / 6.0)
        expected = fit.noise_width * np.sqrt(steps) + fit.drift_width * steps
        assert np.log(upper / lower)[0] == pytest.approx(2 * expected, rel=1e-9)


def test_real_collectives_are_covered(measured_data: Path) -> None:
    """The MPI collectives (fit 32..256 ranks, predict 512): a set no model predicts well,
    so its intervals must be wide enough to say so."""
    table, _ = import_profiles("collectives", [measured_data / "mpi_collectives/mpi_data.csv"])
    series = points(table.assign(kernel=table["op"] + "/" + table["library"], metric="time",
                                 value=table["time"] / table["calls"]), [])
    fitted = fit_all(series[series["p"] < 512], [], "collectives")
    inside, judged = coverage(fitted.fits, series[series["p"] == 512], [])
    assert judged == 14 and inside >= 0.75


def test_a_model_file_before_the_backtests_keeps_its_widening() -> None:
    fit = fit_series({"p": P}, 5.0 + 100.0 / P)
    stored = fit.to_dict()
    for name in ("noise_width", "drift_width", "step"):
        del stored[name]
    stored["drift"] = 0.5
    old = SeriesFit.from_dict(stored)
    assert old.step == 1.0 and old.noise_width == 0.0
    assert old.drift_width == pytest.approx(1.6449 * 0.5, rel=1e-4)
    _, lower, upper = old.predict({"p": np.array([8.0 * np.e**2])})
    assert np.log(upper / lower)[0] == pytest.approx(2 * 2 * old.drift_width, rel=1e-6)


def test_four_p_intervals_hold_the_classic_laws_forecast() -> None:
    """From four values of P the backtests fit three, where only the classic laws compete, so
    beyond the data the interval holds their forecast as well as the chosen shape's; from
    five, the backtests checked the selection itself, and nothing is added."""
    four = fit_series({"p": np.array([1.0, 2.0, 4.0, 8.0])},
                      np.array([4635215.0, 2319670.0, 1167400.0, 687645.0]))  # NPB MG S psinv_
    assert {h.form for h, _ in four.anchors} == {"loglinear", "linear"}
    assert fit_series({"p": P[:5]}, 5.0 + 100.0 / P[:5]).anchors == []
    calibrated = SeriesFit.from_dict({**four.to_dict(), "noise_width": 0.05,
                                      "drift_width": 0.05, "step": math.log(2.0)})
    assert len(calibrated.anchors) == 2
    at_16 = {"p": np.array([16.0])}
    predicted, lower, upper = calibrated.predict(at_16)
    classic = [np.exp(h.design(at_16) @ c) if h.form == "loglinear" else h.design(at_16) @ c
               for h, c in calibrated.anchors]
    forecast = float(np.sqrt(np.prod(classic)))
    assert forecast < 0.95 * predicted[0]    # the step at P = 8 bends the chosen shape
    assert lower[0] < forecast and upper[0] > predicted[0]
    inside = calibrated.predict({"p": np.array([3.0])})
    assert inside[2][0] / inside[1][0] == pytest.approx(
        np.exp(2 * np.log(inside[2][0] / inside[0][0])), rel=1e-9)   # symmetric in the data


def test_a_law_that_misses_the_series_is_no_anchor() -> None:
    """NPB MG S's MPI_Allreduce, seconds per call at P = 1..8 on 2 cores: c + a/P through
    them misses P = 8 by 60x and forecasts 2.4 us at P = 16 (measured: 1,140 us). It anchors
    nothing (the power law, P^3.2, is beyond the exponents' bound here), and the interval at
    P = 16 no longer reaches down to its forecast. A law that follows the series within
    MISFIT_NOTED still anchors (test_four_p_intervals_hold_the_classic_laws_forecast)."""
    p, y = np.array([1.0, 2.0, 4.0, 8.0]), np.array([1.62e-7, 1.21e-6, 1.43e-5, 1.38e-4])
    fit = fit_series({"p": p}, y)
    assert all(h.form != "linear" for h, _ in fit.anchors)
    linear = linear_law(("p",))        # fitted as apmt fits it: relative errors
    coefficients = np.linalg.lstsq(linear.design({"p": p}) / y[:, None], np.ones(len(p)),
                                   rcond=None)[0]
    assert (linear.design({"p": p}) @ coefficients)[-1] < y[-1] / 10
    at_16 = {"p": np.array([16.0])}
    calibrated = SeriesFit.from_dict({**fit.to_dict(), "noise_width": 0.5,
                                      "drift_width": 0.5, "step": math.log(2.0)})
    assert calibrated.predict(at_16)[1][0] > 10 * (linear.design(at_16) @ coefficients)[0]


def test_real_npb_mg_four_p_are_covered(measured_data: Path) -> None:
    """NPB MG S's instructions per function, fitted at P = 1, 2, 4, 8: its shapes follow the
    step that the decomposition puts into P = 8, and the interval at P = 16 held 65% of the
    measured values before it held the classic laws' forecast too."""
    table = read_table(measured_data / "npb/mg-S/measurements.csv", "measurements")
    series = points(table[table["metric"] == "instructions"], ["work"])
    fitted = fit_all(series[series["p"] < 16], ["work"], "npb mg S")
    inside, judged = coverage(fitted.fits, series[series["p"] == 16], ["work"])
    assert judged >= 15 and inside >= 0.8
    assert fitted.calibration["anchored"] >= len(fitted.fits) - 1   # a law may turn negative
    assert any("forecast as well" in note for note in fitted.notes)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-6, 1e6), min_size=4, max_size=4),
       st.floats(-3.0, 3.0), st.sampled_from([16.0, 64.0, 1e4]))
def test_four_p_intervals_hold_both_forecasts_on_any_series(values: list[float], log_noise: float,
                                                            target: float) -> None:
    """Whatever four positive values a series has, beyond the data its interval is finite,
    positive and holds the chosen forecast and the classic laws' (their geometric mean, as
    the backtests from three values forecast) alike."""
    try:
        fit = fit_series({"p": np.array([1.0, 2.0, 4.0, 8.0])}, np.array(values))
    except NoPlausibleFit:
        return      # a table leaves it out with why
    fit = SeriesFit.from_dict({**fit.to_dict(), "noise_width": abs(log_noise),
                               "drift_width": 0.1, "step": math.log(2.0)})
    at = {"p": np.array([target])}
    predicted, lower, upper = (a[0] for a in fit.predict(at))
    assert 0 < lower <= predicted <= upper < np.inf
    laws = [np.exp(h.design(at) @ c)[0] if h.form == "loglinear" else (h.design(at) @ c)[0]
            for h, c in fit.anchors]
    if laws:
        forecast = float(np.exp(np.mean(np.log(laws))))
        assert lower * (1 - 1e-9) <= forecast <= upper * (1 + 1e-9)


POWERS = np.array([1.0, 2.0, 4.0, 8.0])


def sizes_table(sizes: dict[float, float], p: np.ndarray = POWERS) -> pd.DataFrame:
    """One kernel's instructions, ``amount / p`` at each size: how much work a size gives
    follows no law of the size (NPB CG's classes also change the nonzeros per row)."""
    return pd.DataFrame([{"kernel": "k", "metric": "instructions", "p": x, "size": size,
                          "value": amount / x} for size, amount in sizes.items() for x in p])


def test_each_measured_size_is_fitted_alone() -> None:
    """A series at several sizes with enough P at each has a stratum per size, fitted with
    the work per rank alone as a table of that size would be; a size with 2 P has none."""
    table = pd.concat([sizes_table({10.0: 5e8, 20.0: 7e8}),
                       sizes_table({30.0: 4e10}, np.array([1.0, 2.0]))])
    data, _ = series_data(table, ["size"], "planted")
    found = strata(data[("k", "instructions")])
    assert [dict(at) for at, _ in found] == [{"size": 10.0}, {"size": 20.0}]
    assert all(part.variables == ("size/p",) and not part.strata_by for _, part in found)
    assert strata(SeriesData({"p": P}, P, ("p",))) == []


def test_a_measured_size_is_predicted_by_its_own_fit() -> None:
    """Where the size acts as no shape follows, its own fit predicts each measured size
    exactly at a larger P; between two measured sizes the prediction moves smoothly from
    one to the other, and beyond them it follows the power law in the size through the two
    nearest (at each P, through their fits), its interval widening; the model file keeps
    the strata."""
    table = sizes_table({1.0: 5e8, 2.0: 7e8, 3.0: 4e10})
    fitted = fit_all(table, ["size"], "planted")
    fit = fitted.fits[("k", "instructions")]
    sizes = np.array([1.0, 2.0, 2.0 * (1 + 1e-9), 2.5, 3.0, 6.0])
    at = {"p": np.full(len(sizes), 16.0), "size": sizes}
    predicted, lower, upper = fit.predict(at)
    assert predicted[[0, 1, 4]] == pytest.approx([5e8 / 16, 7e8 / 16, 4e10 / 16], rel=1e-6)
    assert np.all(lower <= predicted) and np.all(predicted <= upper)
    assert abs(fit.predict_joint(at)[0][1] / (7e8 / 16) - 1) > 0.05   # the function misses
    assert predicted[2] == pytest.approx(predicted[1], rel=1e-6)      # no jump off a size
    assert predicted[1] < predicted[3] < predicted[4]
    assert predicted[5] / predicted[4] == pytest.approx(                # beyond: 2 and 3
        (4e10 / 7e8) ** (np.log(6 / 3) / np.log(3 / 2)), rel=1e-6)
    assert upper[5] / lower[5] > upper[4] / lower[4]
    share = np.log(2.5 / 2) / np.log(3 / 2)                             # between: in the logs
    assert predicted[3] == pytest.approx(7e8 ** (1 - share) * 4e10 ** share / 16, rel=1e-6)
    stored = SeriesFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert np.allclose(stored.predict(at), fit.predict(at), rtol=1e-12)
    assert fitted.calibration["stratified"] == 1
    assert any("several values of size" in note for note in fitted.notes)


def test_a_series_its_strata_predict_is_summarised_by_the_power_law() -> None:
    """Where two sizes' own fits predict a series everywhere, its function of P and the size
    only summarises it for the reader: the power law in both, not a search of shapes over
    both, also where it grows with a power of 10 in the size (no shape of the family may,
    as it is not extrapolated by itself). A size's fit missing its values is the series'
    misfit."""
    for sizes, size_exponent in (({1.0: 5e8, 2.0: 1.1e9, 4.0: 1.9e9}, (0.5, 1.5)),
                                 ({1.0: 5e8, 2.0: 7e8, 3.0: 4e10}, (3.0, 20.0))):
        table = sizes_table(sizes)
        data, _ = series_data(table, ["size"], "planted")
        series = data[("k", "instructions")]
        fit = fit_all(table, ["size"], "planted").fits[("k", "instructions")]
        assert fit.hypothesis == power_law(series.variables, series.values), fit.function
        [exponent] = [c for c, (term,) in zip(fit.coefficients[1:], fit.hypothesis.bases,
                                             strict=True) if term.variable == "size"]
        assert size_exponent[0] < exponent < size_exponent[1]
        assert len(fit.strata) == 3
        assert fit.misfit == max(stratum.misfit for _, stratum in fit.strata)
        largest, its_fit = fit.strata[-1]
        at = {"p": np.array([16.0]), "size": np.array([largest["size"]])}
        assert fit.predict(at)[0] == pytest.approx(its_fit.predict(at)[0], rel=1e-12)


def test_a_series_the_power_law_cannot_summarise_is_searched(measured_data: Path) -> None:
    """NPB BT's copy_faces_ misses almost no line of L1 at P = 1 (it copies nothing) and
    tens of thousands from P = 4 on, in class S and W alike: no power law of P and the grid
    predicts any of its folds within a factor of 20, so a search of shapes summarises it
    and the series is predicted by its classes' own fits, not left out."""
    table = pd.concat([read_table(measured_data / f"npb/bt-{c}/measurements.csv",
                                  "measurements") for c in "SW"])
    series = points(table[table["p"] < 16], ["grid"])
    key = ("copy_faces_", "l1d_misses")
    fit = fit_all(series, ["grid"], "npb bt").fits[key]
    data, _ = series_data(series, ["grid"], "npb bt")
    assert fit.hypothesis != power_law(data[key].variables, data[key].values)
    assert sorted(at["grid"] for at, _ in fit.strata) == [12.0, 24.0]


def test_real_npb_cg_classes_together_predict_as_each_alone(measured_data: Path) -> None:
    """NPB CG S, W and A in one table (na varies; the nonzeros per row change with the class
    too), fitted at P <= 8: at P = 16 its series erred by 10% (median) as functions of P and
    na, 3.9% as each class alone; with the strata they err as each class alone."""
    series = npb_classes(measured_data, "cg", "na")
    train, truth = series[series["p"] < 16], series[series["p"] == 16]
    data, _ = series_data(train, ["na"], "npb cg")
    errors = {}
    for name, table_data in (("strata", data),
                             ("joint", {k: replace(s, strata_by=()) for k, s in data.items()})):
        fits = fit_table(table_data).fits
        ape = [abs(predicted / rows["value"].to_numpy(float) - 1)
               for rows, (predicted, _, _) in predictions(fits, truth, ["na"])]
        errors[name] = float(np.median(np.concatenate(ape)))
    assert errors["strata"] < 0.06 and errors["strata"] < 0.6 * errors["joint"]


def test_stratum_weights_interpolate_and_sum_to_one() -> None:
    """Along one parameter: linear in its log through the two nearest, between and beyond;
    over two: inverse squared distances, the stratum's own at its point."""
    one = stratum_weights([[4.0], [1.0], [2.0]], np.array([[1.0], [np.sqrt(2.0)], [8.0]]))
    assert np.allclose(one[:, 0], [0, 1, 0]) and np.allclose(one[:, 1], [0, 0.5, 0.5])
    assert np.allclose(one[:, 2], [2, 0, -1])
    assert np.allclose(stratum_weights([[3.0]], np.array([[1.0], [9.0]])), 1)
    two = stratum_weights([[1.0, 1.0], [2.0, 4.0]], np.array([[1.0, 1.0], [1.5, 2.0]]))
    assert np.allclose(two.sum(axis=0), 1) and two[0, 0] == pytest.approx(1.0)


def test_classic_forecast_is_the_mean_of_the_classic_laws() -> None:
    """Through two values, the power law and c + a/P are both exact; the forecast is their
    geometric mean, and the power law alone where c + a/P is not positive."""
    series = SeriesData({"p": np.array([1.0, 2.0])}, np.array([10.0, 6.0]), ("p",))
    at = {"p": np.array([4.0, 8.0])}
    power, linear = 10.0 * 0.6 ** np.array([2.0, 3.0]), 2.0 + 8.0 / at["p"]
    assert classic_forecast(series, at) == pytest.approx(np.sqrt(power * linear))
    falling = SeriesData({"p": np.array([1.0, 2.0])}, np.array([1.0, 0.4]), ("p",))
    forecast = classic_forecast(falling, at)      # c + a/P: 0.1 at P = 4, -0.05 at 8
    power = power_law_forecast(falling, at)
    assert forecast == pytest.approx([np.sqrt(power[0] * 0.1), power[1]])


def test_real_npb_three_p_intervals_are_as_wide_as_the_model_errs(measured_data: Path) -> None:
    """NPB LU W fitted at P = 1, 2, 4 (no shape chosen: the classic laws' mean) and predicted
    at 8 and 16: backtested by the power law alone from P = 1, 2, its intervals spanned a
    factor of 79 (median) and held 98%; backtested as the model predicts, 6.1 and 94%."""
    table = read_table(measured_data / "npb/lu-W/measurements.csv", "measurements")
    series = points(table, ["grid"])
    fitted = fit_all(series[series["p"] <= 4], ["grid"], "npb lu W")
    truth = series[series["p"] >= 8]
    inside, judged = coverage(fitted.fits, truth, ["grid"])
    widths = [np.median(upper / lower) for key, rows in truth.groupby(["kernel", "metric"])
              if key in fitted.fits for _, lower, upper in [fitted.fits[key].predict(
                  {c: rows[c].to_numpy(float) for c in ("p", "grid")})]]
    assert judged > 150 and inside >= 0.85 and np.median(widths) < 15


def test_regime_backtests_of_series_over_two_variables(measured_data: Path) -> None:
    """The regime detector's backtests of series over P and a size (the power law through
    the smaller P, as for one series alone) are fitted at once for series that share their
    points; on LAMMPS at two sizes each series' error is the one it gets alone."""
    sizes = [read_table(measured_data / f"lammps/{name}/measurements.csv", "measurements")
             for name in ("p1-32", "lj-size0.8-p1-32")]
    table = pd.concat(sizes, ignore_index=True)
    data, _ = series_data(points(table[table["p"] <= 8], ["size"]), ["size"], "test")
    series = [one for one in data.values() if len(one.strata_by) == 1]
    together = _bend_backtests(series)
    alone = np.array([_bend_backtests([one])[0] for one in series])
    assert len(series) > 100 and np.isfinite(together).mean() > 0.9
    np.testing.assert_allclose(together, alone, rtol=1e-6, atol=1e-9)
    last = series[0].values["p"] == 8
    by_hand = power_law_forecast(series[0].where(~last), {k: v[last] for k, v in
                                                          series[0].values.items()})
    assert together[0] == pytest.approx(np.mean(np.abs(np.log(by_hand / series[0].y[last]))))


def test_real_npb_is_class_a_from_s_and_w_intervals_widen_beyond_the_sizes(
        measured_data: Path) -> None:
    """NPB IS class A (2^23 keys) from S and W (2^16, 2^20): the two classes' line in log
    keys is a slope from two points, as uncertain as a forecast in P. Combined from the
    classes' exact fits alone, the intervals of counts exact in the keys spanned nothing
    (upper/lower 1.0000) and held 71% of class A's values; widened by the table's drift for
    the distance, in steps of the keys' own last step, 87%."""
    fitted, truth = largest_from_others(measured_data, "is", "keys")
    largest = truth["keys"].max()
    inside, judged = coverage(fitted.fits, truth, ["keys"])
    assert judged > 550 and inside >= 0.8
    fit = fitted.fits[("randlc", "instructions")]
    at = {"p": np.array([4.0]), "keys": np.array([largest])}
    _, lower, upper = fit.predict(at)
    steps = np.log(largest / 2.0 ** 20) / np.log(2.0 ** 20 / 2.0 ** 16)
    assert np.log(upper / lower)[0] >= 2 * fit.drift_width * steps > 0


def test_a_size_whose_fit_is_not_positive_at_a_point_does_not_carry_the_line(
        measured_data: Path) -> None:
    """NPB MG class A from S and W: the MPI library's time in class S was measured from
    P = 4 on, and its fit falls below zero at P = 2. The line in log work through it and
    class W's fit forecast 1.5e149 s at P = 2 for class A (measured: 0.012 s); class W
    alone carries it there now (its measured 0.070 s at P = 2: the line runs through the
    measured values), and its interval holds the value."""
    series = npb_classes(measured_data, "mg", "work")
    largest = series["work"].max()
    fit = fit_all(series[series["work"] < largest], ["work"], "npb mg").fits[
        ("<mca_btl_vader>", "time")]
    truth = series[(series["kernel"] == "<mca_btl_vader>") & (series["metric"] == "time")
                   & (series["work"] == largest) & (series["p"] == 2)]["value"].item()
    at = {"p": np.array([2.0]), "work": np.array([largest])}
    predicted, lower, upper = (float(v[0]) for v in fit.predict(at))
    class_w = series[(series["kernel"] == "<mca_btl_vader>") & (series["metric"] == "time")
                     & (series["work"] == sorted(series["work"].unique())[1])
                     & (series["p"] == 2)]["value"].item()
    assert predicted == pytest.approx(class_w, rel=1e-9)
    assert lower <= truth <= upper and upper / lower < 1e4


def test_the_line_in_the_size_runs_through_the_measured_values_at_a_measured_p() -> None:
    """A step at P = 8 at every size (a decomposition's), which the sizes' fits over P smooth
    away: at a measured P the line in log size runs through the measured values there,
    exactly where they follow a power law in the size, its interval around them; at an
    unmeasured P through the fits; the model file keeps them."""
    table = sizes_table({1.0: 1e8, 2.0: 4e8})
    table.loc[table["p"] == 8, "value"] *= 1.5
    fit = fit_all(table, ["size"], "planted").fits[("k", "instructions")]
    at = {"p": np.array([8.0, 16.0, 3.0]), "size": np.full(3, 4.0)}
    predicted, lower, upper = fit.predict(at)
    assert predicted[0] == pytest.approx(1.6e9 / 8 * 1.5, rel=1e-9)
    assert lower[0] < predicted[0] < upper[0]
    through_fits = [stratum.predict({"p": at["p"], "size": np.full(3, size)})[0]
                    for size, stratum in ((at_size["size"], stratum)
                                          for at_size, stratum in fit.strata)]
    assert predicted[2] == pytest.approx(through_fits[1][2] ** 2 / through_fits[0][2],
                                         rel=1e-9)
    stored = SeriesFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert np.allclose(stored.predict(at), fit.predict(at), rtol=1e-12)


def test_real_npb_is_class_a_from_the_measured_classes(measured_data: Path) -> None:
    """NPB IS class A from S and W at every P: through the classes' fits its series erred by
    5.8% (median), through their measured values at each P by 1.3%."""
    fitted, truth = largest_from_others(measured_data, "is", "keys")
    errors = [np.abs(predicted / rows["value"].to_numpy(float) - 1)
              for rows, (predicted, _, _) in predictions(fitted.fits, truth, ["keys"])]
    assert np.median(np.concatenate(errors)) < 0.025


def test_fewer_than_nine_backtests_take_students_bound_of_one_more() -> None:
    """4 backtests: the conformal rank (ceil(5 * 0.9) = 5) exceeds them, and their largest
    ratio would bound one more with probability 4/5 only; the multiplier is Student's t
    quantile (4 degrees of freedom) times the ratios' root mean square where that is larger,
    and the table's notes say so."""
    table, ratios = calibrated_table(4)
    bound = stats.t.ppf(0.95, 4) * np.sqrt(np.mean(np.square(ratios)))
    assert table.calibration["multiplier_rule"] == "student-t"
    assert table.calibration["multiplier"] == pytest.approx(max(bound, max(ratios)))
    assert table.calibration["multiplier"] > max(ratios)
    assert any("fewer than a 90% quantile needs (9)" in note for note in table.notes)
    assert small_sample_bound(np.array(ratios)) == pytest.approx(bound)


@pytest.mark.parametrize(("forecast", "error"), [
    (2.0, math.log(2.0)), (1e-300, CAPPED_LOG_ERROR), (0.0, CAPPED_LOG_ERROR),
    (-1.0, CAPPED_LOG_ERROR), (math.nan, CAPPED_LOG_ERROR)])
def test_a_backtest_errs_at_most_as_a_fold_does(forecast: float, error: float) -> None:
    """A backtest's error is capped as a cross-validation fold's is (CAPPED_LOG_ERROR, a
    factor of 20), and a forecast that is not positive is a miss of that size, not left out.
    A backtest of miniFE's MPI_Irecv from P = 2..6 forecast e^-700 at P = 8: its error of
    700 made the table's multiplier 1,690 and every interval of its MPI operations span the
    float's range (1e-131 to 1e129 s); a forecast below zero was left out, as if it had not
    been made."""
    series = SeriesData({"p": np.array([1.0, 2.0, 4.0, 8.0])}, np.ones(4), ("p",))
    measured_error = _backtest_error(series, None, lambda *_: np.array([forecast]))
    assert measured_error == pytest.approx(error)


def test_beyond_the_sizes_the_ends_errors_add_in_quadrature() -> None:
    """Two sizes' fits at two points, 0.1 and 0.2 below their centres (in logs) and 0.3
    and 0.4 above: between them (weights 0.25, 0.75) the line's interval is as wide as
    theirs, weighted alike; beyond them (5, -4) the root of the weighted squares, not their
    sum (a negative weight takes the other end, so the sides swap for it)."""
    own = [tuple(np.exp(np.full(2, centre) + side) for side in (0.0, -below, above))
           for centre, below, above in ((1.0, 0.1, 0.3), (2.0, 0.2, 0.4))]
    weights = np.array([[0.25, 5.0], [0.75, -4.0]])
    center, lower, upper = (np.log(side) for side in _log_combination(weights, own))
    assert center == pytest.approx([0.25 + 1.5, 5.0 - 8.0])
    assert center[0] - lower[0] == pytest.approx(0.25 * 0.1 + 0.75 * 0.2)
    assert upper[0] - center[0] == pytest.approx(0.25 * 0.3 + 0.75 * 0.4)
    assert center[1] - lower[1] == pytest.approx(np.hypot(5 * 0.1, 4 * 0.4))
    assert upper[1] - center[1] == pytest.approx(np.hypot(5 * 0.3, 4 * 0.2))


def test_real_npb_ft_class_a_from_s_and_w_far_beyond_the_sizes(measured_data: Path) -> None:
    """NPB FT class A (2^23 grid points), profiled after every rule for the sizes was set,
    from S and W (2^18, 2^19): 16 times the largest size, 4 of its own steps out. At its
    first evaluation apmt erred by 14.4% (median; the power law 28.3%) and its intervals held
    90% of the values at a median width of 268: the two classes' errors, amplified by the
    line's weights 5 and -4, were added as one error. In quadrature, as errors of separate
    runs add, 71, and they still hold 85% or more."""
    fitted, truth = largest_from_others(measured_data, "ft", "grid_points")
    inside, judged = coverage(fitted.fits, truth, ["grid_points"])
    widths = np.concatenate([upper / lower for _, (_, lower, upper)
                             in predictions(fitted.fits, truth, ["grid_points"])])
    assert judged > 800 and inside >= 0.85
    assert np.median(widths) < 100


def test_a_mean_measured_in_scattered_runs_is_as_uncertain_as_they_scatter() -> None:
    """Two runs at a point, e^0 and e^2: their logs' mean has a standard error of 1; one
    run, or a run that is not positive, says nothing of it (0). A series' scatter is its
    points' root mean square, and its fit's intervals widen by Z times it in quadrature,
    inside the data and beyond; the centre does not move."""
    runs = pd.DataFrame({"kernel": "k", "metric": "time", "p": [1, 1, 2, 2, 4, 4, 8],
                         "rep": [1, 2, 1, 2, 1, 2, 1],
                         "value": [1.0, math.e**2, 3.0, 3.0, 0.0, 5.0, 7.0]})
    found = points(runs, [])
    assert found["spread"].to_numpy() == pytest.approx([1.0, 0.0, 0.0, 0.0])
    data, _ = series_data(found.assign(value=[2.0, 1.0, 0.5, 0.25]), [], "planted")
    assert data[("k", "time")].scatter == pytest.approx(0.5)
    fit = fit_series({"p": P}, 10 / P * np.exp(0.02 * np.sin(P)))
    where = {"p": np.array([3.0, 64.0])}
    quiet = np.log(fit.predict(where))
    fit.scatter = 0.5
    noisy = np.log(fit.predict(where))
    assert noisy[0] == pytest.approx(quiet[0])
    assert noisy[0] - noisy[1] == pytest.approx(np.hypot(quiet[0] - quiet[1], Z_INTERVAL * 0.5))
    assert noisy[2] - noisy[0] == pytest.approx(np.hypot(quiet[2] - quiet[0], Z_INTERVAL * 0.5))
    assert np.log(fit.predict(where, measured=False)) == pytest.approx(quiet)
    assert SeriesFit.from_dict(json.loads(json.dumps(fit.to_dict()))).scatter == 0.5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1e6)), min_size=1, max_size=4),
                min_size=1, max_size=5), st.floats(1e-3, 1e3))
def test_a_spread_is_finite_and_does_not_depend_on_the_unit(runs: list[list[float]],
                                                           unit: float) -> None:
    """Any runs, zeros among them: each point's spread is finite and at least 0, 0 where its
    runs agree, and the same in any unit (a ratio of the runs, not a difference)."""
    table = pd.DataFrame([{"kernel": "k", "metric": "time", "p": index + 1, "rep": rep,
                           "value": value} for index, values in enumerate(runs)
                          for rep, value in enumerate(values)])
    spread = points(table, [])["spread"].to_numpy()
    scaled = points(table.assign(value=table["value"] * unit), [])["spread"].to_numpy()
    assert np.all(np.isfinite(spread)) and np.all(spread >= 0)
    assert scaled == pytest.approx(spread, abs=1e-9)
    agree = [len(set(values)) == 1 for values in runs]
    assert np.all(spread[agree] == 0)


def test_real_npb_kernel_times_at_16_are_covered_as_their_runs_scatter(
        measured_data: Path) -> None:
    """The sampled times of NPB's kernels (21 classes, two runs each) fitted at P = 1..8 and
    predicted at 16 on the oversubscribed 2-core machine: their two runs at a P differ by 19%
    (median), and a fit of the means took them as exact. Its intervals held 89.3% of the 243
    values; widened by the runs' scatter, 91.4%; with the backtests' errors capped as the
    folds' are (a wild backtest no longer widens a whole table), 90.9%."""
    inside = []
    for folder in sorted((measured_data / "npb").iterdir()):
        table = read_table(folder / "measurements.csv", "measurements")
        [param] = [c for c in table.columns if c not in ("kernel", "metric", "p", "rep", "value")]
        times = points(table[table["metric"] == "time"], [param])
        fitted = fit_all(times[times["p"] <= 8], [param], folder.name)
        truth = times[times["p"] == 16]
        for rows, (_, lower, upper) in predictions(fitted.fits, truth, [param]):
            inside += list((rows["value"] >= lower) & (rows["value"] <= upper))
    assert len(inside) > 240 and np.mean(inside) >= 0.90


def test_an_interval_inside_the_data_is_no_wider_than_one_step_beyond(
        measured_data: Path) -> None:
    """LAMMPS profiled here, fitted at P <= 8: at the measured range's ends every calibrated
    series' interval is at most as wide as one backtest step beyond (where the table's
    backtests measured the errors). Student's t for the few degrees of freedom of a short
    series made 165 of the 495 wider inside: <libhwloc>'s time, sampled at 3 P, spanned a
    factor of 3e8 at a measured P and 77 one step beyond."""
    table = fit_all(lammps(measured_data, [1, 2, 3, 4, 6, 8]), ["size"], "lammps")
    checked = 0
    for fit in table.fits.values():
        if not fit.calibrated or set(fit.domain) != {"p", "size"}:
            continue
        low, high = fit.domain["p"]
        size = fit.domain["size"][0]
        inside = fit.predict({"p": np.array([low, high]), "size": np.array([size, size])})
        beyond = fit.predict({"p": np.array([high * math.exp(fit.step)]),
                              "size": np.array([size])})
        ratio = np.log(inside[2] / inside[1]).max()
        assert ratio <= np.log(beyond[2] / beyond[1])[0] + 1e-9, fit.function
        checked += 1
    assert checked > 50


# ----------------------------------------------------------------------------- latest trends

def crowded(p: np.ndarray) -> np.ndarray:
    """A time per rank that falls as 1/P while the ranks have a core each (P <= 2), then grows
    as P^0.5 as they share two cores: a change of regime inside the measured range."""
    return np.where(p <= 2, 10.0 / p, 5.0 * np.sqrt(p / 2.0))


def test_a_series_that_changed_regime_is_carried_on_by_its_latest_trend() -> None:
    """Fitted at P = 1..8, the series' function bends through both regimes; its latest trend
    (the power law through P = 6 and 8) predicted P = 8 from 4 and 6 exactly, and carries the
    new regime on to 16 and 32. The interval holds the function's forecast too, and the
    model file keeps the trend."""
    table = fit_table(planted({"wait": crowded(P)}))
    fit = table.fits[("wait",)]
    assert fit.latest and table.calibration["latest"] == 1
    assert any(note.startswith("1 series is forecast beyond its largest measured value by "
                               "its latest trend") for note in table.notes)
    ahead = {"p": np.array([16.0, 32.0])}
    predicted, lower, upper = fit.predict(ahead)
    np.testing.assert_allclose(predicted, crowded(ahead["p"]), rtol=1e-9)
    own = replace(fit, latest=[]).predict(ahead)[0]
    assert np.all(np.abs(own / crowded(ahead["p"]) - 1) > 0.05)    # what the trend mends
    assert np.all((lower <= np.minimum(predicted, own)) & (np.maximum(predicted, own) <= upper))
    inside = {"p": np.array([5.0])}
    assert fit.predict(inside)[0] == pytest.approx(replace(fit, latest=[]).predict(inside)[0])
    stored = SeriesFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    np.testing.assert_allclose(stored.predict(ahead), fit.predict(ahead))


def test_the_function_hands_over_to_the_latest_trend_across_the_last_step() -> None:
    """Between the two largest measured P (6 and 8) the forecast moves from the function's
    to the trend's in log distance, so the curve is whole where the data ends: the trend's
    at P = 8 and just beyond, the function's at P = 6, between the two at 7. Taken at once
    at 8, it jumped there by what the function misses the last value by."""
    fit = fit_table(planted({"wait": crowded(P)})).fits[("wait",)]
    assert fit.latest and fit.trend_from == 6.0
    p = np.array([6.0, 7.0, 8.0, 8.0 * (1 + 1e-6)])
    predicted, lower, upper = fit.predict({"p": p})
    own = replace(fit, latest=[]).predict({"p": p})[0]
    assert predicted[0] == pytest.approx(own[0])
    assert predicted[2] == pytest.approx(crowded(np.array([8.0]))[0], rel=1e-9)
    assert predicted[3] == pytest.approx(predicted[2], rel=1e-5)
    assert min(own[1], predicted[2]) < predicted[1] < max(own[1], predicted[2])
    assert abs(own[2] / predicted[2] - 1) > 0.01       # the jump it took at once
    assert np.all((lower <= np.minimum(predicted, own)) & (np.maximum(predicted, own) <= upper))
    stored = SeriesFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    np.testing.assert_allclose(stored.predict({"p": p}), fit.predict({"p": p}))


def test_a_latest_trend_holds_at_the_measured_values_of_the_other_parameters() -> None:
    """The trend is a law of P alone: at the measured size it forecasts, at another (weak
    scaling: the size grows with P) the function answers."""
    size = np.full(len(P), 100.0)
    table = fit_table({("wait",): SeriesData({"p": P, "size": size}, crowded(P), ("p",))})
    fit = table.fits[("wait",)]
    assert fit.latest
    measured = {"p": np.array([16.0]), "size": np.array([100.0])}
    weak = {"p": np.array([16.0]), "size": np.array([1600.0])}
    assert fit.predict(measured)[0] == pytest.approx(crowded(measured["p"]))
    np.testing.assert_allclose(fit.predict(weak), replace(fit, latest=[]).predict(weak))


def test_four_p_take_no_latest_trend(monkeypatch: pytest.MonkeyPatch) -> None:
    """From P = 1, 2, 4, 8 the function's backtest fits three values, from which no shape is
    chosen: it judged the classic laws, not the function, and the trend does not replace it
    (RELeARN's times grow as a + b*log P, which a shape of 4 P follows and the classic laws
    of 3 do not: the trend won their backtests and lost at P = 512)."""
    table = fit_table(planted({"wait": crowded(POWERS)}, POWERS))
    assert not table.fits[("wait",)].latest and "latest" not in table.calibration
    monkeypatch.setattr("apmt.fit_table.LATEST_LEVELS", 4)
    assert fit_table(planted({"wait": crowded(POWERS)}, POWERS)).fits[("wait",)].latest


def test_a_jump_is_no_latest_trend(monkeypatch: pytest.MonkeyPatch) -> None:
    """A latest trend steeper than the family's exponents (a wait growing as P^4 from P = 4
    on, after falling as 1/P) is a jump, not a law of cost: it is not carried on, though
    its backtest was exact."""
    jump = np.where(P <= 4, 1.0 / P, 0.25 * (P / 4.0) ** 4)
    assert not fit_table(planted({"wait": jump})).fits[("wait",)].latest
    monkeypatch.setattr("apmt.fit_table.MAX_LOG_EXPONENT", np.inf)
    assert fit_table(planted({"wait": jump})).fits[("wait",)].latest


@pytest.mark.parametrize(("folder", "param", "taken", "gain"), [
    ("prk_stencil", "n", 30, 0.2), ("lammps/lj-size0.8-p1-32", "size", 30, 0.3),
    ("prk_p2p", "rows", 30, 0.5), ("pennant", "zones", 50, 0.3), ("tealeaf", "cells", 100, 0.8),
    ("minimd", "size", 35, 0.2), ("comd", "size", 30, 0.9),
    ("quicksilver", "particles", 140, 0.1)])
def test_real_latest_trends_predict_16_and_32_better(measured_data: Path, folder: str,
                                                     param: str, taken: int, gain: float
                                                     ) -> None:
    """Applications profiled on 2 cores at P = 1..8: the series that took their latest trend
    predict P = 16 and 32 at most ``gain`` times as far off (median) as their functions would
    have, and their intervals hold at least 90% of the measured values. TeaLeaf came after the
    rule, as it was: its 116 series that took a trend err 4.3% against 5.9%, 97% inside;
    and miniMD after it: its 42 series 0.28% against 6.5%, all inside; CoMD's 38 series
    7.6% against 8.8%, all inside (its grid changes shape from P = 6 to 8, 3 x 2 x 1 to
    2 x 2 x 2, and with it each rank's halo: the last step is not always the trend);
    Quicksilver's 147 series 0.04% against 2.5%, 99% inside."""
    series = points(read_table(measured_data / folder / "measurements.csv", "measurements"),
                    [param])
    fitted = fit_all(series[series["p"] <= 8], [param], folder)
    assert fitted.calibration["latest"] >= taken
    trend, own, inside = [], [], []
    for rows, (predicted, lower, upper) in predictions(fitted.fits, series[series["p"] > 8],
                                                       [param]):
        fit = fitted.fits[tuple(rows[["kernel", "metric"]].iloc[0])]
        if fit.latest and not fit.ahead_by:     # a trend, not a count's forecast
            values = {c: rows[c].to_numpy(float) for c in ["p", param]}
            trend += list(np.abs(predicted / rows["value"] - 1))
            own += list(np.abs(replace(fit, latest=[]).predict(values)[0] / rows["value"] - 1))
            inside += list((rows["value"] >= lower) & (rows["value"] <= upper))
    assert np.median(trend) <= gain * np.median(own)
    assert np.mean(inside) >= 0.9


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(1e-3, 1e3), min_size=6, max_size=6),
       st.sampled_from([16.0, 64.0, 1e4]))
def test_a_latest_trend_interval_holds_both_forecasts(values: list[float], target: float
                                                      ) -> None:
    """Whatever six positive values a series has, where it takes its latest trend the
    interval beyond the data is finite, positive and holds the trend's forecast and the
    function's alike."""
    table = fit_table(planted({"s": np.array(values)}))
    fit = table.fits.get(("s",))
    if fit is None or not fit.latest:
        return
    at = {"p": np.array([target])}
    predicted, lower, upper = (a[0] for a in fit.predict(at))
    own = replace(fit, latest=[]).predict(at)[0][0]
    assert 0 < lower <= min(predicted, own) * (1 + 1e-9)
    assert max(predicted, own) * (1 - 1e-9) <= upper < np.inf


def test_real_sampled_times_are_forecast_through_their_counts(measured_data: Path) -> None:
    """Profiled on 2 cores at P <= 8 (perf's 1 ms samples, cachegrind's counts): the
    kernels' times with an instruction count at the same P are forecast beyond P = 8 through
    the count, the count's forecast times the time per instruction at P = 8. Pooled over
    five applications, three where it errs less at P = 16 and 32 (Nekbone, PENNANT and,
    from P = 1, 2, 4, 8, Graph500) and two where more (SNAP, miniMD), it errs less (median)
    than the times' own functions would have, the intervals holding at least 90% (over the
    16 profiled applications with 6 P to 8: 447 values, a median log error of 0.146 against
    0.243, 11 applications closer). The application's wall time, which holds waits no
    instruction counts, keeps its own."""
    through, own, inside = [], [], []
    for folder, param, times in (("nekbone", "elements", 16), ("pennant", "zones", 25),
                                 ("snap", "cells", 5), ("minimd", "size", 16),
                                 ("graph500", "scale", 10)):
        series = points(read_table(measured_data / folder / "measurements.csv",
                                   "measurements"), [param])
        fitted = fit_all(series[series["p"] <= 8], [param], folder)
        counted = {key for key, fit in fitted.fits.items() if fit.ahead_by}
        assert len(counted) == fitted.calibration["counted"] >= times
        assert all(metric == "time" and (kernel, "instructions") in fitted.fits
                   and kernel != "<app>" for kernel, metric in counted)
        assert any("through their kernel's instruction count" in note
                   for note in fitted.notes)
        ahead = series[(series["p"] > 8) & (series["metric"] == "time")]
        for key, rows in ahead.groupby(["kernel", "metric"]):
            if key not in counted:
                continue
            fit = fitted.fits[key]
            values = {"p": rows["p"].to_numpy(float), param: rows[param].to_numpy(float)}
            measured = rows["value"].to_numpy(float)
            predicted, lower, upper = fit.predict(values)
            through += list(np.abs(np.log(predicted / measured)))
            own += list(np.abs(np.log(fit.without_trend().predict(values)[0] / measured)))
            inside += list((lower <= measured) & (measured <= upper))
    assert np.median(through) < 0.8 * np.median(own) and np.mean(inside) >= 0.9
    fit = fitted.fits[next(iter(counted))]
    stored = SeriesFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert stored.ahead_by == fit.ahead_by
    np.testing.assert_allclose(stored.predict(values), fit.predict(values))
