"""Modelers (apmt.modelers): apmt's fitter and the baselines behind one interface, chosen by
name; evaluate takes any of them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from apmt.errors import ApmtError
from apmt.evaluate import evaluate
from apmt.extrap_peer import find_extrap_python
from apmt.modelers import BASELINES, MODELERS, baseline
from apmt.tables import check_table, read_table

P = [2, 4, 8, 16, 32, 64]


def amdahl_table() -> pd.DataFrame:
    """Two kernels that follow 10/P + 1 and 5/P + 0.5 exactly, two repetitions."""
    rows = [{"kernel": kernel, "metric": "time", "p": p, "rep": rep, "value": a / p + b}
            for kernel, a, b in (("solve", 10.0, 1.0), ("update", 5.0, 0.5))
            for p in P for rep in (1, 2)]
    return check_table(pd.DataFrame(rows), "amdahl")


@pytest.mark.parametrize("name", [name for name in MODELERS
                                  if name != "extrap" or find_extrap_python() is not None])
def test_every_modeler_answers_through_one_interface(name: str) -> None:
    points = amdahl_table().assign(reps=2).groupby(["kernel", "metric", "p"], as_index=False)
    points = points["value"].mean().assign(reps=2)
    train, test = points[points["p"] < 64], points[points["p"] == 64]
    predicted = MODELERS[name].predict(train, test, [], frozenset(), "amdahl")
    assert list(predicted["kernel"]) == ["solve", "update"]
    assert set(predicted["method"]) == {name}
    truth = np.array([10 / 64 + 1, 5 / 64 + 0.5])
    if name in ("apmt", "analytic", "amdahl"):       # their shapes hold a/P + b
        assert np.allclose(predicted["predicted"], truth, rtol=0.1), predicted
    assert (predicted["predicted"] > 0).all()
    assert list(predicted.columns) == ["kernel", "metric", "p", "method", "measured",
                                       "predicted", "lower", "upper"]


def test_evaluate_takes_the_baselines_by_name() -> None:
    result = evaluate(amdahl_table(), "measurements", [], "p=max", ["powerlaw", "amdahl"],
                      "amdahl")
    assert list(result["method"]) == ["apmt", "powerlaw", "amdahl"] * 2   # per series
    amdahl = result[result["method"] == "amdahl"]
    assert (amdahl["ape"] < 1e-6).all()
    with pytest.raises(ApmtError, match=r"unknown baseline 'apmt' \(known: analytic, amdahl"):
        baseline("apmt")
    assert BASELINES == ("analytic", "amdahl", "powerlaw", "extrap")


def test_the_application_time_bounds_every_part_in_the_evaluation(measured_data) -> None:
    """As the model does (apmt.predict.within), the evaluation bounds each MPI operation's
    time by the application's time fitted on the same runs, when it is given them (ParRes
    Nstream, fit P <= 8: MPI_Reduce's own upper end at P = 32 is 2.3e5 s, in a run of
    2.5 s), and each kernel's time by the application's in its own table."""
    folder = measured_data / "prk_nstream"
    comm = read_table(folder / "comm.csv", "communication")
    whole = read_table(folder / "measurements.csv", "measurements")
    arguments = ("communication", ["length"], "p=16,32", [], "prk_nstream")
    alone, bounded = (evaluate(comm, *arguments, whole=given) for given in (None, whole))
    reduce_ = {name: frame[frame["kernel"] == "MPI_Reduce"].set_index("p")
               for name, frame in (("alone", alone), ("bounded", bounded))}
    assert reduce_["alone"].loc[32, "upper"] > 1e4 > 10 > reduce_["bounded"].loc[32, "upper"]
    assert (bounded["upper"] <= alone["upper"]).all()
    assert (bounded["lower"] <= bounded["measured"]).all()
    assert (bounded["measured"] <= bounded["upper"]).all()
    kernels = evaluate(whole, "measurements", ["length"], "p=16,32", [], "prk_nstream")
    app = kernels[(kernels["kernel"] == "<app>") & (kernels["metric"] == "time")]
    parts = kernels[(kernels["kernel"] != "<app>") & (kernels["metric"] == "time")]
    assert len(parts) >= 6
    for end in ("predicted", "lower", "upper"):
        assert (parts[end] <= parts["p"].map(app.set_index("p")[end])).all(), end
