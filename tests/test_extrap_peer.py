"""Extra-P as a peer modeler: these run the real Extra-P in its own interpreter."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.errors import ApmtError
from apmt.extrap_peer import NOT_INSTALLED, extrap_predict, find_extrap_python

pytestmark = pytest.mark.extrap
needs_extrap = pytest.mark.skipif(
    find_extrap_python() is None,
    reason="Extra-P not found: set APMT_EXTRAP_PYTHON to the python of a virtualenv with "
           "extrap installed, or run the install script (it links .venv/bin/extrap-python)")


def _series(kernel: str, metric: str, ps: list[int], law, reps: int = 2) -> list[dict]:
    """Rows of one series; reps straddle the law symmetrically so their mean is exact."""
    rows = []
    for p in ps:
        for rep in range(reps):
            wobble = 1 + 0.002 * (rep - (reps - 1) / 2)
            rows.append({"kernel": kernel, "metric": metric, "p": p, "rep": rep,
                         "value": law(p) * wobble})
    return rows


@needs_extrap
def test_recovers_p_log_p_and_extrapolates_to_1024() -> None:
    def law(p: float) -> float:
        return 3 + 2 * p * np.log2(p)

    train = pd.DataFrame(_series("solve", "time", [4, 8, 16, 32, 64], law))
    out = extrap_predict(train, pd.DataFrame({"p": [1024]}), [])
    assert list(out.columns) == ["kernel", "metric", "p", "predicted", "model"]
    predicted = out["predicted"].iloc[0]
    assert abs(predicted - law(1024)) / law(1024) < 0.01, out["model"].iloc[0]
    assert "log2(p)" in out["model"].iloc[0]


@needs_extrap
def test_two_parameter_product_is_recovered() -> None:
    rows = []
    for n in (10, 20, 40, 80, 160):
        for row in _series("fft", "time", [4, 8, 16, 32, 64], lambda p, n=n: 2 + 0.5 * p * n):
            rows.append({**row, "n": float(n)})
    targets = pd.DataFrame({"p": [256, 512], "n": [320.0, 100.0]})
    out = extrap_predict(pd.DataFrame(rows), targets, ["n"])
    truth = 2 + 0.5 * targets["p"] * targets["n"]
    assert np.allclose(out["predicted"], truth, rtol=0.01), out["model"].iloc[0]
    assert list(out["n"]) == [320.0, 100.0]


@needs_extrap
def test_relearn_extrapolation_error_matches_published_figure(measured_data: Path) -> None:
    table = _read_relearn(measured_data / "relearn" / "relearn_data.txt")
    train = table[table["p"] < 512]
    truth = (table[table["p"] == 512]
             .groupby(["kernel", "metric", "p", "n"], as_index=False)["value"].mean())
    targets = truth[["p", "n"]].drop_duplicates().reset_index(drop=True)
    out = extrap_predict(train, targets, ["n"])
    assert set(out["kernel"]) == set(table["kernel"])
    assert out["predicted"].notna().all()
    merged = out.merge(truth, on=["kernel", "metric", "p", "n"], validate="one_to_one")
    assert len(merged) == len(truth)
    measured = merged[merged["value"] != 0]
    ape = (measured["predicted"] - measured["value"]).abs() / measured["value"].abs() * 100
    median = float(ape.median())
    print(f"Extra-P on RELeARN, train p<512, predict p=512: median APE {median:.1f}% "
          f"over {len(ape)} points of {measured['kernel'].nunique()} regions")
    assert 5 < median < 40


def _read_relearn(path: Path) -> pd.DataFrame:
    """apmt's own reader when present, else a minimal one for this file's layout."""
    try:
        from apmt.ingest.extrap_text import read_extrap_text
    except ImportError:
        return _parse_extrap_text(path)
    return read_extrap_text([path])


def _parse_extrap_text(path: Path) -> pd.DataFrame:
    """Just enough of Extra-P's text format: two parameters p and n, one metric."""
    points, rows, region, metric, index = [], [], None, "time", 0
    for line in path.read_text().splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword == "POINTS":
            points += [tuple(map(float, g.split())) for g in re.findall(r"\(([^)]*)\)", rest)]
        elif keyword in ("REGION", "METRIC"):
            region, metric = (rest.strip(), metric) if keyword == "REGION" else (region, rest)
            index = 0
        elif keyword == "DATA":
            p, n = points[index]
            rows += [{"kernel": region, "metric": metric, "p": int(p), "n": n, "rep": rep,
                      "value": float(v)} for rep, v in enumerate(rest.split())]
            index += 1
    return pd.DataFrame(rows)


@needs_extrap
def test_awkward_names_round_trip_exactly() -> None:
    names = [("   Update local trees", "time"), ("a/b c", "cycles / s"),
             ("Exchange (w/ Allgather) #2", "l1 hits"), ("x->y", "time"), ("a/b c", "time")]
    rows = []
    for i, (kernel, metric) in enumerate(names):
        rows += _series(kernel, metric, [2, 4, 8, 16, 32], lambda p, i=i: (i + 1) * p)
    out = extrap_predict(pd.DataFrame(rows), pd.DataFrame({"p": [64, 128]}), [])
    assert sorted(zip(out["kernel"], out["metric"], strict=True)) == sorted(names * 2)
    for i, (kernel, metric) in enumerate(names):
        got = out[(out["kernel"] == kernel) & (out["metric"] == metric)]
        assert np.allclose(got["predicted"], [(i + 1) * 64, (i + 1) * 128], rtol=0.01)


@needs_extrap
def test_too_few_points_give_nan_with_a_reason() -> None:
    rows = _series("short", "time", [4, 8], lambda p: p) + _series("ok", "time",
                                                                    [4, 8, 16, 32], lambda p: p)
    out = extrap_predict(pd.DataFrame(rows), pd.DataFrame({"p": [64]}), []).set_index("kernel")
    assert np.isnan(out.loc["short", "predicted"])
    assert "2 value(s) of p" in out.loc["short", "model"]
    assert out.loc["ok", "predicted"] == pytest.approx(64, rel=0.01)


def test_interpreter_without_extrap_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("extrap") is not None:
        pytest.skip("extrap is importable in apmt's own interpreter")
    monkeypatch.setenv("APMT_EXTRAP_PYTHON", sys.executable)
    train = pd.DataFrame(_series("k", "time", [2, 4, 8, 16, 32], lambda p: p))
    with pytest.raises(ApmtError, match=re.escape(NOT_INSTALLED)):
        extrap_predict(train, pd.DataFrame({"p": [64]}), [])


def test_missing_interpreter_is_reported(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setenv("APMT_EXTRAP_PYTHON", str(tmp_path / "no-such-python"))
    train = pd.DataFrame(_series("k", "time", [2, 4, 8, 16, 32], lambda p: p))
    with pytest.raises(ApmtError, match="not installed"):
        extrap_predict(train, pd.DataFrame({"p": [64]}), [])


def test_finds_the_install_scripts_link_beside_the_interpreter(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("APMT_EXTRAP_PYTHON", raising=False)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    assert find_extrap_python() is None
    (bin_dir / "extrap-python").symlink_to(sys.base_prefix)  # any existing target will do
    assert find_extrap_python() == str(bin_dir / "extrap-python")
    monkeypatch.setenv("APMT_EXTRAP_PYTHON", "/elsewhere/python")
    assert find_extrap_python() == "/elsewhere/python"
