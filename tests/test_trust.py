"""The extrapolation gate (apmt.trust): every prediction says whether it is interpolated,
extrapolated or unsupported, and why; on real data (RELeARN, LAMMPS profiled here) as the
issue asks: inside the measured range is interpolated, P = 10^9 from P <= 128 is
unsupported, twice the largest measured P on a well-behaved series is not."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.ingest import import_profiles
from apmt.model import build_model, load_model, save_model
from apmt.predict import predict
from apmt.tables import APP_KERNEL, check_table, read_table
from apmt.trust import MAX_FACTOR, MAX_WIDTH, distance, judge

DOMAIN = {"p": (2.0, 8.0)}


def one(p: float, lower: float = 0.9, upper: float = 1.1) -> tuple[str, str]:
    levels, reasons = judge(DOMAIN, {"p": np.array([p])}, np.array([1.0]), np.array([lower]),
                            np.array([upper]))
    return levels[0], reasons[0]


def test_levels_follow_the_distance_and_the_width() -> None:
    assert one(4) == ("interpolated", "inside the measured range")
    assert one(4, 0.01, 100) == (                  # inside: the width is only said
        "interpolated", "inside the measured range; its 90% interval spans a factor of 1e+04: "
        "the measured values scatter around the function")
    level, reason = one(16)
    assert level == "extrapolated" and reason.startswith("p = 16 is 2x the largest measured (8)")
    assert one(1)[1].startswith("p = 1 is 2x below the smallest measured (2)")
    level, reason = one(8 * MAX_FACTOR * 2)
    assert level == "unsupported" and "beyond 100x" in reason
    assert one(8 * MAX_FACTOR)[0] == "extrapolated"
    level, reason = one(16, 0.2, 0.2 * MAX_WIDTH * 1.5)
    assert level == "unsupported" and "spans a factor of 15" in reason
    assert one(16, np.nan, np.nan)[0] == "extrapolated"         # no interval: distance only
    levels, reasons = judge(DOMAIN, {"p": np.array([16.0])}, np.array([np.nan]),
                            np.array([np.nan]), np.array([np.nan]))
    assert levels == ["unsupported"] and reasons == ["no finite prediction"]


def test_a_variable_measured_at_one_value_is_unsupported_unless_a_function_uses_it() -> None:
    domain = {"p": (1.0, 1.0), "x": (10.0, 1000.0)}
    values = {"p": np.array([1.0, 4.0]), "x": np.array([100.0, 100.0])}
    ones = np.ones(2)
    levels, reasons = judge(domain, values, ones, 0.9 * ones, 1.1 * ones, used={"x"})
    assert levels == ["interpolated", "unsupported"]
    assert reasons[1] == "p = 4, but p was measured at 1 only: nothing shows how it acts"
    # size enters through the work per rank (size/p), whose values did vary
    assert judge(domain, values, ones, 0.9 * ones, 1.1 * ones, used={"x", "p"})[0] == \
        ["interpolated", "extrapolated"]


def test_a_series_that_changes_regime_is_named_and_its_width_said(tmp_path: Path) -> None:
    """Extra-P's segmented test series: log2 p up to p = 20, p^2 from 24 on. No function of
    the family follows both: the model's notes name it, with the measured point it misses
    by 300x, and its predictions there say how wide their interval is. The file calls the
    time runtime, which the importer reads as apmt's time."""
    text = Path(__file__).parent / "fixtures" / "extrap_text" / "one_parameter_segmented_2.txt"
    table, _ = import_profiles("extrap-text", [text])
    model = build_model(table, [], source="segmented")
    fit = model.fit_of("main", "time")
    assert fit.misfit > 100 and fit.misfit_at == {"p": 40.0}
    save_model(model, tmp_path / "model.json")
    stored = load_model(tmp_path / "model.json").fit_of("main", "time")
    assert (stored.misfit, stored.misfit_at) == (fit.misfit, fit.misfit_at)
    assert any(note.startswith("1 of 1 series misses one of its own measured values by more "
                               "than a factor of 10") and "main/time at p = 40 (" in note
               for note in model.notes), model.notes
    rows = predict(model, pd.DataFrame({"p": [40]})).set_index(["kernel", "metric"])
    assert rows.at[("main", "time"), "trust"] == "interpolated"
    assert "its 90% interval spans a factor of" in rows.at[("main", "time"), "trust_reason"]
    # as a time, it is the application's (a file whose metric kept the name runtime had none)
    assert rows.at[(APP_KERNEL, "time"), "predicted"] == rows.at[("main", "time"), "predicted"]


def test_one_p_over_a_size_parameter_says_nothing_about_p(measured_data: Path) -> None:
    """Extra-P's mm cube set: 9 sizes x at p = 1. The model predicts x's effect; p's it
    cannot know, and says so."""
    runs = sorted((measured_data / "scorep_counters" / "mm_cubeset").glob("mm.x*"))
    table, _ = import_profiles("cube", runs)
    model = build_model(table, ["x", "y", "z"], source="mm")
    assert "p was measured at 1 only: the model does not depend on it, and predictions at " \
        "other values of p are unsupported" in model.notes
    targets = pd.DataFrame({"p": [1, 4], "x": [100, 100], "y": [1, 1], "z": [1, 1]})
    rows = predict(model, targets)
    app = rows[(rows["kernel"] == APP_KERNEL) & (rows["metric"] == "time")]
    assert app["trust"].tolist() == ["interpolated", "unsupported"]
    assert app["trust_reason"].iloc[1] == \
        "p = 4, but p was measured at 1 only: nothing shows how it acts"
    assert rows.loc[rows["p"] == 4, "trust"].eq("unsupported").all()


def test_the_farthest_variable_is_named() -> None:
    factor, words = distance({"p": (32, 512), "n": (5000, 9000)},
                             {"p": np.array([1024.0, 256.0]), "n": np.array([9000.0, 90000.0])})
    assert factor.tolist() == [2.0, 10.0]
    assert words == ["p = 1024 is 2x the largest measured (512)",
                     "n = 90000 is 10x the largest measured (9000)"]


@pytest.fixture(scope="module")
def relearn_small(measured_data: Path) -> dict:
    """RELeARN fitted on P <= 128 only."""
    table, _ = import_profiles("extrap-text", [measured_data / "relearn" / "relearn_data.txt"])
    return build_model(table[table["p"] <= 128], ["n"], source="relearn",
                       app_kernel="main()", per_rank_params=frozenset({"n"}))


def test_relearn_inside_twice_and_far_beyond(relearn_small: dict) -> None:
    targets = pd.DataFrame({"p": [64, 256, 10**9], "n": [5000, 5000, 5000]})
    rows = predict(relearn_small, targets)
    app = rows[(rows["kernel"] == APP_KERNEL) & (rows["metric"] == "time")].set_index("p")
    assert app.at[64, "trust"] == "interpolated"
    assert app.at[256, "trust"] == "extrapolated"
    assert app.at[10**9, "trust"] == "unsupported"
    assert app.at[10**9, "trust_reason"].startswith("p = 1e+09 is 7.81e+06x the largest")
    main = rows[(rows["kernel"] == "main()") & (rows["metric"] == "time")].set_index("p")
    assert main["trust"].tolist() == ["interpolated", "extrapolated", "unsupported"]
    assert set(rows["trust"]) <= {"interpolated", "extrapolated", "unsupported"}
    assert rows["trust_reason"].str.len().gt(0).all()


def test_overflow_far_out_is_no_finite_prediction_without_numpy_warnings(
        relearn_small: dict) -> None:
    """n = 1e300 overflows shapes and intervals: the table says unsupported, and numpy
    prints nothing."""
    targets = pd.DataFrame({"p": [2048, 2048], "n": [900000, 1e300]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = predict(relearn_small, targets)
    app = rows[(rows["kernel"] == APP_KERNEL) & (rows["metric"] == "time")]
    assert app["trust"].tolist() == ["unsupported", "unsupported"]
    assert np.isfinite(app["predicted"].iloc[0])
    assert not np.isfinite(rows.loc[rows["n"] == 1e300, "upper"]).all()


def test_predict_warns_in_one_line_about_unsupported_points(relearn_small: dict, cli,
                                                           tmp_path: Path) -> None:
    from apmt.model import save_model

    path = tmp_path / "model.json"
    save_model(relearn_small, path)
    run = cli("predict", path, "--at", "p=256,n=5000", "--at", "p=1000000000,n=5000", "-o",
              tmp_path / "predictions.csv")
    assert run.code == 0, run.err
    warnings = [line for line in run.out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "p=1e+09 n=5000 (p = 1e+09 is" in warnings[0]
    assert "p=256" not in warnings[0]


def test_lammps_at_scale_is_flagged_by_the_part_that_drives_it(measured_data: Path) -> None:
    """LAMMPS profiled here, fitted at P = 1..4 (the default study's P): at P = 1024 the
    application time is unsupported (256x beyond), and at 16x beyond it is unsupported when
    a part carrying a tenth of the time or more is, naming it."""
    folder = measured_data / "lammps" / "p1-32"
    table = read_table(folder / "measurements.csv")
    comm = read_table(folder / "comm.csv", "communication")
    model = build_model(table[table["p"] <= 4], ["size"], source="lammps",
                        comm=comm[comm["p"] <= 4])
    rows = predict(model, pd.DataFrame({"p": [2, 8, 64, 1024], "size": 0.6}))
    app = rows[(rows["kernel"] == APP_KERNEL) & (rows["metric"] == "time")].set_index("p")
    assert app.at[2, "trust"] == "interpolated"
    assert app.at[1024, "trust"] == "unsupported" and "256x" in app.at[1024, "trust_reason"]
    for p in (8, 64):
        level, reason = app.at[p, "trust"], app.at[p, "trust_reason"]
        assert level in ("extrapolated", "unsupported"), (p, level)
        assert level == "extrapolated" or " of it is " in reason or "spans a factor" in reason
    parts = rows[(rows["kernel"] != APP_KERNEL) & rows["predicted"].notna()]
    assert parts.loc[parts["p"] == 1024, "trust"].eq("unsupported").all()


def test_a_part_measured_over_a_narrower_range_makes_the_sum_unsupported() -> None:
    """The computation is measured up to P = 64, an MPI call only at P = 2..4: at P = 1000 the
    sum is 16x beyond its range, but the call, 250x beyond its own and most of the time, is
    unsupported, and so is the application time, which names it."""
    p_values = [1, 2, 4, 8, 16, 32, 64]
    rows = [{"kernel": kernel, "metric": "time", "p": p, "value": value}
            for p in p_values for kernel, value in (("solve", 1.0 / p + 0.01),
                                                    (APP_KERNEL, 1.0 / p + 0.03))]
    comm = pd.DataFrame([{"op": "MPI_Allreduce", "calls": 100.0, "bytes": 800.0,
                          "time": 0.01 * np.log2(p), "p": p} for p in (2, 3, 4)])
    model = build_model(check_table(pd.DataFrame(rows), "t"), [], source="t",
                        comm=check_table(comm, "c", kind="communication"))
    predicted = predict(model, pd.DataFrame({"p": [1000]}))
    app = predicted[(predicted["kernel"] == APP_KERNEL) & (predicted["metric"] == "time")]
    [reason] = app["trust_reason"]
    assert app["trust"].tolist() == ["unsupported"]
    assert " of it is MPI_Allreduce, whose prediction is unsupported: p = 1000 is 250x" in reason


def test_a_size_measured_at_fewer_p_is_extrapolated_beyond_its_own(measured_data: Path,
                                                                  tmp_path: Path) -> None:
    """NPB CG S and W measured at P = 1..16, A at 1..8 (real profiles, in one table over
    na): the box of the table's ranges holds P = 16 at na = 14000, but nothing was measured
    there: P = 16 lies beyond the 8 that A was measured at, and na = 10000 beyond the 7000
    measured at P = 16. The application's time is judged on its fits' measured ranges, not
    on a box of them (one fit's P, another's na)."""
    table = pd.concat([read_table(measured_data / f"npb/cg-{c}/measurements.csv",
                                  "measurements") for c in "SWA"])
    table = table[(table["na"] < 14000) | (table["p"] <= 8)]
    model = build_model(table, ["na"], source="cg")
    targets = pd.DataFrame({"p": [16, 16, 16, 8], "na": [7000, 10000, 14000, 14000]})
    predictions = predict(model, targets)
    for kernel, metric in (("conj_grad_", "time"), (APP_KERNEL, "comp_time"),
                           (APP_KERNEL, "time")):
        rows = predictions[(predictions["kernel"] == kernel) & (predictions["metric"] == metric)]
        levels, reasons = list(rows["trust"]), list(rows["trust_reason"])
        assert levels[0] == levels[3] == "interpolated", (kernel, metric, reasons)
        assert "extrapolated" in levels[1:3] or "unsupported" in levels[1:3]
        assert "interpolated" not in levels[1:3], (kernel, metric, reasons)
        assert reasons[2].startswith("p = 16 is 2x the largest measured (8)"), reasons[2]
        assert kernel != APP_KERNEL or reasons[1].startswith(
            "na = 10000 is 1.43x the largest measured (7000)"), reasons[1]
    save_model(model, tmp_path / "model.json")          # the sections are kept
    again = predict(load_model(tmp_path / "model.json"), targets)
    assert list(again["trust_reason"]) == list(predictions["trust_reason"])


def test_lammps_twice_beyond_its_p_is_extrapolated_with_its_own_scatter(
        measured_data: Path) -> None:
    """LAMMPS profiled here, fitted at P = 1..4: at P = 8 (2x beyond) the application's time
    is extrapolated, its interval holding the measured 0.72 s. Its MPI_Send's runs differ by
    a factor of 2.9, the application's by 1.1: with the parts' scatters summed the interval
    spanned a factor of 10.2 and P = 8 was unsupported; with the application's own, 7.2."""
    folder = measured_data / "lammps" / "p1-32"
    table = read_table(folder / "measurements.csv")
    comm = read_table(folder / "comm.csv", "communication")
    model = build_model(table[table["p"] <= 4], ["size"], source="lammps",
                        comm=comm[comm["p"] <= 4])
    rows = predict(model, pd.DataFrame({"p": [8], "size": 0.6}))
    [app] = rows[(rows["kernel"] == APP_KERNEL) & (rows["metric"] == "time")].to_dict("records")
    measured = table[(table["kernel"] == APP_KERNEL) & (table["metric"] == "time")
                     & (table["p"] == 8)]["value"].mean()
    assert app["trust"] == "extrapolated"
    assert app["lower"] <= measured <= app["upper"] and app["upper"] / app["lower"] < 8
    send = next(operation for operation in model.communication if operation.op == "MPI_Send")
    assert send.fits["time"].scatter > 0.9
