"""Kernel classification (paper 000, 3.2) on real profiles and on tables with a known answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.ingest import import_profiles
from apmt.kernels import classify, cost_metric
from apmt.series import points
from apmt.tables import check_table

HOURGLASS = "CalcHourglassControlForElems"
# a flat LULESH kernel of well under 1% of the time: weak scaling keeps its time per rank
FLAT = "main/lulesh.cycle/LagrangeLeapFrog/CalcTimeConstraintsForElems"


@pytest.fixture(scope="module")
def lulesh(measured_data: Path) -> pd.DataFrame:
    """The points of the LULESH Caliper profiles (time per rank, P = 27..343)."""
    files = sorted((measured_data / "lulesh_caliper_opal").glob("*.cali"))
    table, _ = import_profiles("caliper", files)
    return points(table, [])


def leaf(kernel: str) -> str:
    return kernel.rsplit("/", 1)[-1]


def by_kernel(kernels: pd.DataFrame) -> pd.DataFrame:
    return kernels.set_index("kernel")


def test_every_mpi_call_path_is_communication(lulesh: pd.DataFrame) -> None:
    kernels = classify(lulesh, [])
    mpi = kernels["kernel"].map(leaf).str.startswith("MPI_")
    assert mpi.sum() >= 13
    assert (kernels.loc[mpi, "class"] == "communication").all()
    assert (kernels.loc[~mpi, "class"] != "communication").all()


def test_largest_computation_kernel_is_key_with_its_share(lulesh: pd.DataFrame) -> None:
    kernels = by_kernel(classify(lulesh, []))
    [hourglass] = [k for k in kernels.index if leaf(k) == HOURGLASS]
    time = lulesh[lulesh["metric"] == "time"]
    share = (time[time["kernel"] == hourglass].set_index("p")["value"]
             / time.groupby("p")["value"].sum())
    row = kernels.loc[hourglass]
    assert row["class"] == "key"
    assert row["max_share"] == pytest.approx(share.max(), rel=1e-12)
    assert 0.2 < row["max_share"] < 0.35                      # about 27%
    computing = kernels[kernels["class"] != "communication"]
    assert computing["max_share"].idxmax() == hourglass
    assert f"{row['max_share']:.1%}" in row["reason"]


def test_flat_kernel_scales_weakly_but_not_strongly(lulesh: pd.DataFrame) -> None:
    time = lulesh[(lulesh["metric"] == "time") & (lulesh["kernel"] == FLAT)]
    values = time.sort_values("p")["value"].to_numpy()
    assert abs(values[-1] / values[0] - 1) < 0.1             # flat from P=27 to P=343
    strong = by_kernel(classify(lulesh, [], scaling="strong")).loc[FLAT]
    weak = by_kernel(classify(lulesh, [], scaling="weak")).loc[FLAT]
    assert strong["max_share"] < 0.05
    assert strong["class"] == "non-scalable"
    assert weak["class"] == "aggregated"
    assert f"{strong['slope']:.2f}" in strong["reason"]
    assert f"{weak['slope']:.2f}" in weak["reason"]
    assert f"{weak['max_share']:.1%}" in weak["reason"]


def test_weak_scaling_has_fewer_non_scalable_kernels(lulesh: pd.DataFrame) -> None:
    strong = by_kernel(classify(lulesh, [], scaling="strong"))
    weak = by_kernel(classify(lulesh, [], scaling="weak"))
    assert set(weak.index[weak["class"] == "non-scalable"]) < set(
        strong.index[strong["class"] == "non-scalable"])
    # the slope is a property of the data, not of the scaling mode
    np.testing.assert_allclose(weak["slope"], strong["slope"])


@pytest.mark.parametrize("threshold", [0.05, 0.1, 0.2])
def test_threshold_sets_the_key_kernels(lulesh: pd.DataFrame, threshold: float) -> None:
    kernels = classify(lulesh, [], threshold=threshold)
    key = set(kernels.loc[kernels["class"] == "key", "kernel"])
    computing = kernels[~kernels["kernel"].map(leaf).str.startswith("MPI_")]
    assert key == set(computing.loc[computing["max_share"] > threshold, "kernel"])
    assert key


def test_lower_threshold_gives_more_key_kernels(lulesh: pd.DataFrame) -> None:
    def key(threshold: float) -> set[str]:
        kernels = classify(lulesh, [], threshold=threshold)
        return set(kernels.loc[kernels["class"] == "key", "kernel"])

    assert {leaf(k) for k in key(0.1)} == {HOURGLASS}
    assert key(0.1) < key(0.05)


def synthetic(scaling_of: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Time per rank ``a * P^b`` per kernel at P = 2..32, two repetitions."""
    p = np.array([2, 4, 8, 16, 32])
    rows = [{"kernel": kernel, "metric": "time", "p": int(x), "rep": rep, "value": a * x**b}
            for kernel, (a, b) in scaling_of.items() for x in p for rep in (1, 2)]
    return points(check_table(pd.DataFrame(rows), "synthetic"), [])


def test_small_growing_kernel_is_non_scalable_and_small_falling_one_aggregated() -> None:
    table = synthetic({"solve": (100.0, -1.0), "growing": (1e-3, 0.5),
                       "falling": (0.05, -1.0), "flat": (0.01, 0.0)})
    for scaling, flat_class in (("strong", "non-scalable"), ("weak", "aggregated")):
        kernels = by_kernel(classify(table, [], scaling=scaling))
        assert kernels.loc["solve", "class"] == "key"
        assert kernels.loc["growing", "class"] == "non-scalable"
        assert kernels.loc["falling", "class"] == "aggregated"
        assert kernels.loc["flat", "class"] == flat_class
        assert kernels.loc["growing", "max_share"] < 0.01
        assert kernels.loc["growing", "slope"] == pytest.approx(0.5, abs=1e-9)
        assert kernels.loc["falling", "slope"] == pytest.approx(-1.0, abs=1e-9)
        assert kernels.loc["flat", "slope"] == pytest.approx(0.0, abs=1e-9)
        assert "0.50" in kernels.loc["growing", "reason"]


@pytest.mark.parametrize(("metrics", "deciding"), [
    (("cycles", "time"), "time"), (("cycles", "instructions"), "cycles"),
    (("instructions", "branches"), "instructions"), (("branches",), "branches")])
def test_time_decides_where_measured_else_cycles_else_instructions(
        metrics: tuple[str, ...], deciding: str) -> None:
    """Time where the functions have it; a counters-only table is classed by cycles, else by
    instructions (else by what it has): ``a`` is 90% of the first two, ``b`` 90% of time."""
    rows = []
    for p in (2, 4, 8):
        for kernel, count, time in (("a", 90.0 / p, 1.0 / p), ("b", 10.0 / p, 9.0 / p)):
            values = {"time": time, "cycles": count, "instructions": count, "branches": count}
            rows += [{"kernel": kernel, "metric": metric, "p": p, "value": values[metric]}
                     for metric in metrics]
    table = points(check_table(pd.DataFrame(rows), "t"), [])
    assert cost_metric(table) == deciding
    kernels = by_kernel(classify(table, [], threshold=0.2))
    key, small = ("b", "a") if deciding == "time" else ("a", "b")
    assert kernels.loc[key, "class"] == "key" and kernels.loc[small, "class"] == "aggregated"
    assert kernels.loc[key, "max_share"] == pytest.approx(0.9)
    assert deciding in kernels.loc[key, "reason"]


def test_kernels_without_cycles_are_classified_by_time() -> None:
    """Counters for the computing kernels, time only for the application and an MPI call (as
    PMPI measures it): every kernel is classified, by its share of the application's time."""
    rows = []
    for p in (2, 4, 8, 16):
        solve, halo, mpi = 8.0 / p, 0.1 / p, 0.02 * p
        rows += [{"kernel": "solve", "metric": "cycles", "p": p, "value": 2e9 * solve},
                 {"kernel": "solve", "metric": "time", "p": p, "value": solve},
                 {"kernel": "halo", "metric": "cycles", "p": p, "value": 2e9 * halo},
                 {"kernel": "halo", "metric": "time", "p": p, "value": halo},
                 {"kernel": "MPI_Allreduce", "metric": "time", "p": p, "value": mpi},
                 {"kernel": "<app>", "metric": "time", "p": p, "value": solve + halo + mpi}]
    table = points(check_table(pd.DataFrame(rows), "mixed"), [])
    kernels = by_kernel(classify(table, [], app_kernel="<app>"))
    assert set(kernels.index) == {"solve", "halo", "MPI_Allreduce", "<app>"}
    assert kernels.loc["<app>", "class"] == "application"
    assert kernels.loc["MPI_Allreduce", "class"] == "communication"
    assert kernels.loc["solve", "class"] == "key"
    assert kernels.loc["halo", "class"] == "aggregated"
    assert kernels.loc["solve", "max_share"] == pytest.approx(4.0 / (4.0 + 0.05 + 0.04))  # at P=2
    assert kernels["max_share"].notna().all()


def test_relearn_application_kernel(measured_data: Path) -> None:
    table, _ = import_profiles("extrap-text", [measured_data / "relearn" / "relearn_data.txt"])
    kernels = by_kernel(classify(points(table, ["n"]), ["n"], app_kernel="main()"))
    assert kernels.loc["main()", "class"] == "application"
    assert kernels.loc["main()", "max_share"] == pytest.approx(1.0)
    assert (kernels.drop(index="main()")["class"] != "application").all()
    # shares are of main()'s time; the nested regions are below it
    assert (kernels["max_share"] <= 1.0 + 1e-9).all()


def test_one_name_per_function_whichever_tool_saw_it() -> None:
    """cachegrind prints C++ parameter lists, perf does not; glibc symbols carry versions."""
    from apmt.kernels import function_name

    assert function_name("LAMMPS_NS::PairLJCut::compute(int, int)") == \
        "LAMMPS_NS::PairLJCut::compute"
    assert function_name("std::vector<int>::push_back(int const&) const") == \
        "std::vector<int>::push_back"
    assert function_name("clock_nanosleep@GLIBC_2.2.5") == "clock_nanosleep"
    assert function_name("Functor::operator()(double)") == "Functor::operator()"
    assert function_name("main") == "main"
