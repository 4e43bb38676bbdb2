"""Kernel classification (paper 000, 3.2) on real profiles and on tables with a known answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.ingest import import_profiles
from apmt.kernels import classify, cost_metric, runtime_buckets, summed_kernels
from apmt.model import build_model
from apmt.names import MPI_RUNTIME, SYSTEM, TRACER, joined_aliases, tracer_callees
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


@pytest.mark.parametrize(("symbol", "name"), [
    ("LAMMPS_NS::PairLJCut::compute(int, int)", "LAMMPS_NS::PairLJCut::compute"),
    ("std::vector<int>::push_back(int const&) const", "std::vector<int>::push_back"),
    ("clock_nanosleep@GLIBC_2.2.5", "clock_nanosleep"),
    ("Functor::operator()(double)", "Functor::operator()"),
    ("main", "main"),
    ("void miniFE::cg_solve<miniFE::CSRMatrix<double, int, int> >",
     "miniFE::cg_solve<miniFE::CSRMatrix<double, int, int> >"),
    ("unsigned long ns::stats<A<int, 2> >(A<int, 2> const&) [clone .isra.0]",
     "ns::stats<A<int, 2> >"),
    ("void (anonymous namespace)::g<int>(int)", "(anonymous namespace)::g<int>"),
    ("bool ns::operator< <int>(X const&, X const&)", "ns::operator< <int>"),
    ("bool std::operator==<char>(std::string const&)", "std::operator==<char>"),
    ("ns::A::operator unsigned long() const", "ns::A::operator unsigned long"),
    ("operator new(unsigned long)", "operator new"),
    ("non-virtual thunk to ns::A::f()", "non-virtual thunk to ns::A::f"),
    ("__sincosf_ifunc", "sincosf"),
    ("sincosf@@GLIBC_2.2.5", "sincosf"),
    ("__sincosf_fma", "__sincosf_fma"),
])
def test_one_name_per_function_whichever_tool_saw_it(symbol: str, name: str) -> None:
    """cachegrind prints C++ parameter lists and a template's return type, perf neither;
    glibc symbols carry versions, gcc's copies a clone suffix; an operator's brackets are
    no brackets, a thunk's words are its own; glibc's IFUNC resolvers go by the symbol they
    resolve, as valgrind names them."""
    from apmt.names import function_name

    assert function_name(symbol) == name


def runtime_table() -> pd.DataFrame:
    """Points where the run-time system takes most of the time (NPB at class S): the OS
    kernel, the ranks' shell and the C library 70%, MPI's internals 10%, the application's
    two functions 18% and 2% (of the whole) at P = 1, 2, 4."""
    rows = []
    for p in (1, 2, 4):
        for kernel, share in (("<kernel>", 0.49), ("<dash>", 0.01), ("<libc>", 0.15),
                              ("<libpthread>", 0.05),
                              ("<libmpi>", 0.05), ("<libevent_pthreads-2.1>", 0.01),
                              ("<libapmt_pmpi>", 0.01), ("<libopen-pal>", 0.03), ("<loader>", 0.02),
                              ("solve", 0.16), ("residual", 0.02)):
            rows.append({"kernel": kernel, "metric": "time", "p": p, "value": share * 10 / p,
                         "reps": 2})
    return pd.DataFrame(rows)


def test_runtime_parts_are_summed_into_named_buckets() -> None:
    table, held = runtime_buckets(runtime_table(), [])
    at_1 = table[table["p"] == 1].set_index("kernel")["value"]
    assert at_1[SYSTEM] == pytest.approx(7.0) and at_1[MPI_RUNTIME] == pytest.approx(1.0)
    assert at_1["<loader>"] == pytest.approx(0.2) and at_1["solve"] == pytest.approx(1.6)
    assert held[SYSTEM] == ["<dash>", "<kernel>", "<libc>", "<libpthread>"]
    assert held[MPI_RUNTIME] == ["<libapmt_pmpi>", "<libevent_pthreads-2.1>", "<libmpi>",
                                 "<libopen-pal>"]
    assert table["value"].sum() == pytest.approx(runtime_table()["value"].sum())
    assert set(table["reps"]) == {2}


def test_the_application_code_is_classified_without_the_runtime() -> None:
    """At 5%, residual (2% of the whole) is 11% of the application's own time: key; the
    buckets are never key, whatever they take."""
    table, _ = runtime_buckets(runtime_table(), [])
    kernels = by_kernel(classify(table, [], threshold=0.05))
    assert kernels.loc["residual", "class"] == "key"
    assert kernels.loc["residual", "max_share"] == pytest.approx(0.02 / 0.18)
    assert "of the application's own time" in kernels.loc["solve", "reason"]
    assert kernels.loc[SYSTEM, "class"] == "runtime"
    assert kernels.loc[SYSTEM, "max_share"] == pytest.approx(0.7)
    assert kernels.loc["<loader>", "class"] == "runtime"
    assert kernels.loc[MPI_RUNTIME, "class"] == "communication"


def test_a_kernel_of_interest_is_key_whatever_its_share() -> None:
    table, _ = runtime_buckets(runtime_table(), [])
    kernels = by_kernel(classify(table, [], threshold=0.95, interest=frozenset({"residual"})))
    assert kernels.loc["residual", "class"] == "key"
    assert "kernels of interest" in kernels.loc["residual", "reason"]
    assert kernels.loc["solve", "class"] != "key"


def test_lammps_model_names_its_runtime_and_ranks_its_own_code(measured_data: Path) -> None:
    """LAMMPS profiled with perf and cachegrind (data/lammps): the OS kernel's samples are
    <system>, Open MPI's libraries <MPI runtime>; the pair force kernel stays key."""
    folder = measured_data / "lammps" / "p1-32"
    table = pd.read_csv(folder / "measurements.csv")
    model = build_model(table, ["size"], source="lammps", app_kernel="<app>",
                        interest=frozenset({"LAMMPS_NS::FixNVE::initial_integrate", "absent_"}))
    classes = {k["kernel"]: k["class"] for k in model.kernels}
    assert classes[SYSTEM] == "runtime" and classes["<loader>"] == "runtime"
    assert classes[MPI_RUNTIME] == "communication"
    assert classes["LAMMPS_NS::PairLJCut::compute"] == "key"
    assert classes["LAMMPS_NS::FixNVE::initial_integrate"] == "key"
    assert "<kernel>" in model.runtime[SYSTEM]
    assert {"<libopen-pal>", "<mca_btl_vader>"} <= set(model.runtime[MPI_RUNTIME])
    assert any("absent_" in note for note in model.notes)
    assert any(entry.kernel == SYSTEM for entry in model.series)


def test_a_sum_of_kernels_is_as_spread_as_its_parts_in_quadrature() -> None:
    """Parts of 3 and 1 whose means' logs scatter by 0.1 and 0.2: their sum of 4 scatters by
    the root of 0.3^2 + 0.2^2 over 4, as independent errors add; the fewest runs count."""
    parts = pd.DataFrame({"kernel": "<libmpi>", "metric": "time", "p": 2.0,
                          "value": [3.0, 1.0], "reps": [2, 3], "spread": [0.1, 0.2]})
    [summed] = summed_kernels(parts, []).to_dict("records")
    assert summed["value"] == 4.0 and summed["reps"] == 2
    assert summed["spread"] == pytest.approx(np.hypot(0.3, 0.2) / 4)


def test_aliases_two_tools_saw_apart_are_joined() -> None:
    """A name with leading underscores that only one tool saw, beside the same name without
    them that only another saw, is one function under its shorter name; not where a tool saw
    both, or both tools one of them, nor a bucket."""
    assert joined_aliases([{"__fmod", "main"}, {"fmod", "main"}]) == {"__fmod": "fmod"}
    assert joined_aliases([{"fmod", "main"}, {"__fmod", "main"}, {"fmod"}]) == {"__fmod": "fmod"}
    assert joined_aliases([{"__fmod", "fmod"}, {"fmod"}]) == {}
    assert joined_aliases([{"__fmod"}, {"fmod", "__fmod"}]) == {}
    assert joined_aliases([{"_start"}, {"start_"}]) == {}
    assert joined_aliases([{"<__libc>"}, {"<libc>"}]) == {}
    assert joined_aliases([{"__fmod"}]) == {}


def test_the_tracers_own_calls_join_the_tracer_only_where_the_application_made_none() -> None:
    """A function the tracer calls, sampled in the traced pass and never seen by an untraced
    one, is the tracer's, in either spelling; not where the application called it too (the
    untraced pass saw it), not the application's MPI calls, and nothing without an untraced
    pass to tell."""
    traced = {"PMPI_Get_count", "MPI_Type_size", "PMPI_Recv", "PMPI_Comm_rank", "main"}
    assert tracer_callees(traced, [{"PMPI_Recv", "MPI_Comm_rank", "main"}]) == {
        "PMPI_Get_count": TRACER, "MPI_Type_size": TRACER}
    assert tracer_callees(traced, [set(), {"PMPI_Recv"}])["PMPI_Comm_rank"] == TRACER
    assert tracer_callees({"PMPI_Recv", "main"}, [{"main"}]) == {}
    assert tracer_callees(traced, []) == {}
