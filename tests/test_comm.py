"""Communication models (Hockney) per MPI operation: synthetic recoveries and real collectives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.comm import NO_VOLUME, Operation, comm_points, fit_operations, kind_of
from apmt.evaluate import evaluate
from apmt.fit import Z_INTERVAL
from apmt.ingest import import_profiles
from apmt.model import build_model, load_model, save_model
from apmt.predict import predict
from apmt.tables import check_table, read_table

P = np.array([4, 8, 16, 32, 64])
TARGET = {"p": np.array([1024.0])}


@pytest.mark.parametrize("op", ["MPI_Send", "MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Waitall",
                                "MPI_Sendrecv_replace", "MPI_Put", "PMPI_Isend", "PMPI_Wait"])
def test_point_to_point(op: str) -> None:
    assert kind_of(op) == "p2p"


@pytest.mark.parametrize("op", ["MPI_Allreduce", "MPI_Bcast", "MPI_Alltoallv", "MPI_Barrier",
                                "MPI_Allgather", "MPI_Reduce_scatter", "PMPI_Allreduce"])
def test_collective(op: str) -> None:
    assert kind_of(op) == "collective"


@pytest.mark.parametrize(("op", "kind"), [
    ("MPI_SEND", "p2p"), ("mpi_send", "p2p"), ("mpi_send_", "p2p"), ("mpi_isend__", "p2p"),
    ("mpi_wait_", "p2p"), ("pmpi_wait", "p2p"), ("pmpi_send_", "p2p"), ("MPI_WAITALL", "p2p"),
    ("mpi_allreduce_", "collective"), ("MPI_BCAST", "collective"), ("pmpi_barrier_", "collective"),
    ("mpi_send_f08_", "p2p"), ("mpi_waitall_f08", "p2p"), ("pmpi_recv_f08_", "p2p"),
    ("mpi_allreduce_f08_", "collective"), ("mpi_iallreduce_f08_", "collective"),
    ("MPI_Probe", "p2p"), ("MPI_Iprobe", "p2p"), ("mpi_probe_f08_", "p2p"),
])
def test_fortran_and_profiling_spellings(op: str, kind: str) -> None:
    """Fortran symbols are lower case (or upper) and may end in underscores; the mpi_f08
    module's end in _f08 (mpi_send_f08_). A probe waits for a point-to-point message."""
    assert kind_of(op) == kind


@pytest.mark.parametrize("name", [
    "Ibcast", "Ireduce", "Iallreduce", "Ialltoall", "Ialltoallv", "Iallgather", "Iallgatherv",
    "Igather", "Igatherv", "Iscatter", "Iscatterv", "Ireduce_scatter", "Ireduce_scatter_block",
    "Iscan", "Iexscan", "Ibarrier"])
def test_nonblocking_collectives(name: str) -> None:
    """The tracer writes them under their own names (MPI_Iallreduce): collectives in every
    spelling, and only the barrier without a volume."""
    for op in (f"MPI_{name}", f"PMPI_{name}", f"mpi_{name.lower()}_", f"pmpi_{name.lower()}__",
               f"MPI_{name.upper()}"):
        assert kind_of(op) == "collective"
    assert bool(NO_VOLUME.search(f"MPI_{name}")) == (name == "Ibarrier")


@pytest.mark.parametrize("name", [
    "Send_init", "Ssend_init", "Bsend_init", "Rsend_init", "Recv_init", "Put", "Get",
    "Accumulate", "Get_accumulate", "Fetch_and_op", "Compare_and_swap", "Rput", "Rget",
    "Raccumulate", "Rget_accumulate"])
def test_persistent_and_one_sided_transfers(name: str) -> None:
    """The tracer writes a persistent request's transfers under its init's name (MPI_Send_init)
    and one-sided ones under their own: point-to-point with a volume, in every spelling
    (before, the _init of MPI_Send_init was taken for MPI_Init's, which has no volume)."""
    for op in (f"MPI_{name}", f"PMPI_{name}", f"mpi_{name.lower()}_", f"MPI_{name.upper()}",
               f"mpi_{name.lower()}_f08_"):
        assert kind_of(op) == "p2p"
        assert not NO_VOLUME.search(op)


@pytest.mark.parametrize(("name", "kind"), [
    ("Win_fence", "collective"), ("Win_lock", "p2p"), ("Win_unlock", "p2p"),
    ("Win_lock_all", "p2p"), ("Win_unlock_all", "p2p"), ("Win_flush", "p2p"),
    ("Win_flush_all", "p2p"), ("Win_flush_local", "p2p"), ("Win_flush_local_all", "p2p"),
    ("Win_sync", "p2p"), ("Win_post", "p2p"), ("Win_start", "p2p"), ("Win_complete", "p2p"),
    ("Win_wait", "p2p"), ("Win_test", "p2p"), ("Win_create", "collective"),
    ("Win_free", "collective"), ("Start", "p2p"), ("Startall", "p2p")])
def test_window_synchronisation_and_starts(name: str, kind: str) -> None:
    """A window's synchronisation completes one-sided transfers with some targets, as a wait
    completes a send: point-to-point; the fence, over the window's group, and the window's
    creation and freeing are collectives. MPI_Start[all] start persistent point-to-point
    requests (the tracer writes them only for requests it did not see made). None has a volume
    of its own."""
    for op in (f"MPI_{name}", f"mpi_{name.lower()}_", f"mpi_{name.lower()}_f08_"):
        assert kind_of(op) == kind
        assert NO_VOLUME.search(op)


@pytest.mark.parametrize("name", [
    "Neighbor_allgather", "Neighbor_allgatherv", "Neighbor_alltoall", "Neighbor_alltoallv",
    "Neighbor_alltoallw", "Ineighbor_allgather", "Ineighbor_allgatherv", "Ineighbor_alltoall",
    "Ineighbor_alltoallv", "Ineighbor_alltoallw"])
def test_neighborhood_collectives(name: str) -> None:
    """Blocking and non-blocking, collectives with a volume (a rank's blocks to its
    neighbours), in every spelling."""
    for op in (f"MPI_{name}", f"mpi_{name.lower()}_", f"mpi_{name.lower()}_f08_"):
        assert kind_of(op) == "collective"
        assert not NO_VOLUME.search(op)


@pytest.mark.parametrize("op", ["MPI_Init", "PMPI_Init", "mpi_init_", "MPI_INIT_THREAD",
                                "mpi_init_thread_f08_", "MPI_Finalize"])
def test_init_and_finalize_have_no_volume(op: str) -> None:
    """MPI_Init is told from the persistent inits (MPI_Send_init) by its prefix."""
    assert NO_VOLUME.search(op)


def comm_table(op: str, calls: float, bytes_: np.ndarray, time: np.ndarray) -> pd.DataFrame:
    table = pd.DataFrame({"op": op, "calls": calls, "bytes": bytes_, "time": time, "p": P})
    return check_table(table, "synthetic", "communication")


def fitted(table: pd.DataFrame) -> dict:
    [operation], left_out, _ = fit_operations(table, [], "synthetic")
    assert not left_out
    return operation


def p2p_truth(bytes_: np.ndarray) -> np.ndarray:
    return 2e-10 * bytes_ + 1e-5


def p2p_bytes(p: np.ndarray) -> np.ndarray:
    return 1e6 * np.sqrt(p)


@pytest.fixture(scope="module")
def isend() -> dict:
    """Hockney's a*s + b over the bytes per rank, which grow as sqrt(P)."""
    return fitted(comm_table("MPI_Isend", 100.0, p2p_bytes(P), p2p_truth(p2p_bytes(P))))


def test_hockney_point_to_point_recovered(isend: dict) -> None:
    predicted, lower, upper = isend.predict(TARGET)
    truth = p2p_truth(p2p_bytes(1024.0))
    assert predicted[0] == pytest.approx(truth, rel=0.05)
    assert lower[0] <= predicted[0] <= upper[0]
    assert isend.kind == "p2p" and isend.uses_volume


@pytest.mark.parametrize("ratio", [2.0, 4.0])
def test_volume_ratio_scales_the_bytes_as_hockney_says(isend: dict, ratio: float) -> None:
    """a*(ratio*s) + b: the time grows with the volume (a shape that only follows the trend of
    s in P, such as p * s^-1, would fall)."""
    base = isend.predict(TARGET)[0][0]
    scaled = isend.predict(TARGET, volume_ratio=ratio)[0][0]
    assert scaled > base
    assert scaled == pytest.approx(p2p_truth(ratio * p2p_bytes(1024.0)), rel=0.05)


def test_hockney_collective_recovered() -> None:
    """Time per call 3e-6*log2(P) + 1e-9*s + 2e-6, s = 8 KiB per call, fixed calls."""
    calls, size = 50.0, 8192.0
    per_call = 3e-6 * np.log2(P) + 1e-9 * size + 2e-6
    operation = fitted(comm_table("MPI_Allreduce", calls, size * calls * np.ones(len(P)),
                                  per_call * calls))
    predicted, lower, upper = operation.predict(TARGET)
    truth = (3e-6 * 10 + 1e-9 * size + 2e-6) * calls
    assert operation.kind == "collective"
    assert predicted[0] == pytest.approx(truth, rel=0.1)
    assert lower[0] <= predicted[0] <= upper[0]
    assert "log2(p)" in operation.fits["time"].function
    assert "log2(p)" in operation.describe() and "per call" in operation.describe()


def test_hockney_collective_with_volume_growing_with_p() -> None:
    calls = 50.0
    size = 256.0 * P
    operation = fitted(comm_table("MPI_Allgather", calls, size * calls,
                                  (3e-6 * np.log2(P) + 1e-9 * size + 2e-6) * calls))
    predicted = operation.predict(TARGET)[0][0]
    assert predicted == pytest.approx((3e-6 * 10 + 1e-9 * 256 * 1024 + 2e-6) * calls, rel=0.1)


def test_waits_are_fitted_over_p_alone() -> None:
    operation = fitted(comm_table("MPI_Waitall", 100.0, np.zeros(len(P)), 1e-4 * np.log2(P)))
    assert operation.kind == "p2p"
    assert not operation.uses_volume and operation.volume is None
    assert operation.predict(TARGET)[0][0] == pytest.approx(1e-3, rel=0.05)


@pytest.mark.parametrize(("op", "kind", "volume"), [
    ("MPI_Send_init", "p2p", "bytes"), ("MPI_Rput", "p2p", "bytes"),
    ("mpi_ineighbor_alltoall_f08_", "collective", "size_per_call")])
def test_traced_persistent_one_sided_and_neighborhood_operations_are_fitted_with_their_volume(
        op: str, kind: str, volume: str) -> None:
    """The tracer's rows for persistent transfers, one-sided ones and neighborhood collectives
    are modelled as the point-to-point or collective operations they are, bytes included."""
    operation = fitted(comm_table(op, 100.0, p2p_bytes(P), p2p_truth(p2p_bytes(P))))
    assert operation.kind == kind
    assert operation.volume == volume and operation.uses_volume


def test_per_rank_means_over_ranks_and_repetitions() -> None:
    rows = [{"op": "MPI_Send", "calls": 10.0, "bytes": 1e3 * (rank + 1), "time": t * (rank + 1),
             "p": 4, "rank": rank, "rep": rep}
            for rank in range(4) for rep, t in ((1, 1.0), (2, 3.0))]
    table = comm_points(check_table(pd.DataFrame(rows), "ranks", "communication"), [])
    [row] = table.to_dict("records")
    assert row["time"] == pytest.approx(2.0 * 2.5)             # mean rank 2.5, mean rep 2.0
    assert row["bytes"] == pytest.approx(2.5e3)
    assert row["reps"] == 2
    assert row["size_per_call"] == pytest.approx(250.0)


def test_model_with_a_communication_table_predicts_its_operations(tmp_path: Path) -> None:
    comm = comm_table("MPI_Isend", 100.0, p2p_bytes(P), p2p_truth(p2p_bytes(P)))
    measurements = check_table(pd.DataFrame(
        [{"kernel": "solve", "metric": "time", "p": int(p), "value": 10.0 / p} for p in P]), "m")
    model = build_model(measurements, [], source="synthetic", comm=comm)
    targets = pd.DataFrame({"p": [1024]})
    table = predict(model, targets, {"p2p": 2.0})
    comm_time = table.query("kernel == '<app>' and metric == 'comm_time'")["predicted"].iloc[0]
    assert model.bf_comm == 1.0
    assert comm_time == pytest.approx(p2p_truth(2.0 * p2p_bytes(1024.0)), rel=0.05)
    save_model(model, tmp_path / "model.json")
    pd.testing.assert_frame_equal(predict(load_model(tmp_path / "model.json"), targets,
                                          {"MPI_Isend": 2.0, "collective": 5.0}),
                                  table, check_exact=True)
    unscaled = predict(model, targets, {"collective": 2.0})
    assert unscaled.query("metric == 'comm_time'")["predicted"].iloc[0] == pytest.approx(
        p2p_truth(p2p_bytes(1024.0)), rel=0.05)


@pytest.fixture(scope="module")
def collectives(measured_data: Path) -> pd.DataFrame:
    table, kind = import_profiles("collectives",
                                  [measured_data / "mpi_collectives" / "mpi_data.csv"])
    assert kind == "communication"
    return comm_points(table, [])


def test_real_collectives_have_fourteen_series(collectives: pd.DataFrame) -> None:
    series = collectives.groupby(["op", "library"]).size()
    assert len(series) == 14
    assert set(collectives["library"]) == {"IntelMPI", "OpenMPI"}
    assert (series == 5).all()
    assert collectives["bytes"].isna().all()


def test_real_collectives_extrapolate_to_512(measured_data: Path) -> None:
    table, _ = import_profiles("collectives", [measured_data / "mpi_collectives" / "mpi_data.csv"])
    at_512 = {"p": np.array([512.0])}
    operations, left_out, _ = fit_operations(table[table["p"] < 512], [], "collectives")
    assert len(operations) == 14 and not left_out
    for operation in operations:
        assert operation.kind == "collective" and not operation.uses_volume
        predicted, lower, upper = (float(v[0]) for v in operation.predict(at_512))
        assert predicted > 0, operation.key
        assert lower <= predicted <= upper, operation.key


def test_a_single_process_does_not_communicate(measured_data: Path) -> None:
    """LAMMPS' MPI operations took no time in its single-process runs: at P = 1 they predict
    none, not their fits' extrapolation below the measured P (MPI_Send's came to 2.8 s in a
    2.7 s run); at the measured P > 1 they still predict time."""
    comm = read_table(measured_data / "lammps/p1-32/comm.csv", "communication")
    operations, _, _ = fit_operations(comm[comm["p"] <= 8], ["size"], "lammps")
    values = {"p": np.array([1.0, 4.0]), "size": np.array([0.6, 0.6])}
    send = next(operation for operation in operations if operation.op == "MPI_Send")
    assert not send.alone
    for side in send.predict(values):
        assert side[0] == 0.0 and side[1] > 0.0
    assert Operation.from_dict(send.to_dict()).alone is False


def test_a_communication_table_is_evaluated_as_the_model_predicts_it(
        measured_data: Path) -> None:
    """apmt evaluate on LAMMPS' MPI operations (fit P <= 8, hold out 16): apmt's rows are the
    model's operations (calls, volume and Hockney or LogGP time, what the workflow sums into
    its communication time), each operation's time per rank, and the baselines are fitted to
    the same per-rank times."""
    comm = read_table(measured_data / "lammps/p1-32/comm.csv", "communication")
    comm = comm[comm["p"] <= 16]
    evaluation = evaluate(comm, "communication", ["size"], "p=16", ["powerlaw"], "lammps")
    ours = evaluation[evaluation["method"] == "apmt"].set_index("kernel")
    operations, _, _ = fit_operations(comm[comm["p"] < 16], ["size"], "lammps")
    assert set(ours.index) == {operation.name for operation in operations}
    assert set(evaluation["metric"]) == {"time"}
    measured = comm_points(comm[comm["p"] == 16], ["size"]).set_index("op")["time"]
    at_16 = {"p": np.array([16.0]), "size": np.array([0.6])}
    for operation in operations:
        predicted, lower, upper = (float(v[0]) for v in operation.predict(at_16))
        row = ours.loc[operation.name]
        assert row["predicted"] == pytest.approx(predicted, rel=1e-12), operation.name
        assert (row["lower"], row["upper"]) == pytest.approx((lower, upper), rel=1e-12)
        assert row["measured"] == pytest.approx(measured[operation.op], rel=1e-12)
    baseline = evaluation[evaluation["method"] == "powerlaw"]
    assert sorted(baseline["kernel"]) == sorted(ours.index)


def npb_operations_at_16(measured_data: Path, folder: str, param: str
                         ) -> tuple[list[Operation], pd.Series, list[str]]:
    """An NPB folder's MPI operations fitted at P < 16, their measured time per rank at
    P = 16 (by operation) and the fit's notes."""
    comm = read_table(measured_data / f"npb/{folder}/comm.csv", "communication")
    operations, _, notes = fit_operations(comm[comm["p"] < 16], [param], f"npb {folder}")
    measured = comm_points(comm[comm["p"] == 16], [param]).set_index("op")["time"]
    return operations, measured, notes


def test_a_shape_negative_at_a_point_does_not_pull_the_average_to_nothing(
        measured_data: Path) -> None:
    """NPB IS W's MPI_Alltoall sends 4 bytes to every rank (its volume per call is 4P) and
    took 0.026, 0.11, 0.91 and 2.2 ms per rank at P = 1..8, 6.4 ms at 16. Two of the shapes
    averaged with its time per call fall below zero at P = 16, and their logs, clamped to
    the tiniest float, made the prediction 1.4e-104 s; the average is of the shapes
    positive there."""
    operations, measured, _ = npb_operations_at_16(measured_data, "is-W", "keys")
    alltoall = next(operation for operation in operations if operation.op == "MPI_Alltoall")
    at_16 = {"p": np.array([16.0]), "keys": np.array([2.0 ** 20])}
    predicted, lower, upper = (float(v[0]) for v in alltoall.predict(at_16))
    assert 1 / 3 < predicted / measured["MPI_Alltoall"] < 3
    assert lower <= measured["MPI_Alltoall"] <= upper


def test_four_operations_calibrate_their_intervals_for_one_more(measured_data: Path) -> None:
    """NPB SP S measured 4 collectives at P = 1, 4 and 9: 4 backtests, fewer than the 9 a
    conformal 90% rank needs. The largest of 4 ratios bounds one more with probability 4/5
    at best, and the intervals held 2 of the 4 values at P = 16; Student's t bound of one
    more holds 3, and the time table says how it was calibrated."""
    operations, measured, notes = npb_operations_at_16(measured_data, "sp-S", "grid")
    at_16 = {"p": np.array([16.0]), "grid": np.array([12.0])}
    inside = []
    for operation in operations:
        if operation.kind != "p2p":
            _, lower, upper = (float(v[0]) for v in operation.predict(at_16))
            inside.append(lower <= measured[operation.op] <= upper)
    assert len(inside) == 4 and sum(inside) >= 3
    assert any("time" in note and "fewer than a 90% quantile needs" in note for note in notes)


def test_an_exploding_backtest_does_not_make_every_interval_infinite(
        measured_data: Path) -> None:
    """miniFE's MPI operations, fitted at P = 1..8 (on 2 cores: from P = 3 on the ranks wait
    for each other's turn, and their times jump 100-fold): one backtest forecast e^-700, and
    every operation's interval at P = 16 spanned 1e-131 to 1e129 s. Capped as a fold's error
    is, the intervals stay finite and hold every measured time."""
    comm = read_table(measured_data / "minife/comm.csv", "communication")
    operations, _, _ = fit_operations(comm[comm["p"] < 16], ["nx"], "minife")
    measured = comm_points(comm[comm["p"] == 16], ["nx"]).set_index("op")["time"]
    assert len(operations) == 7
    for operation in operations:
        _, lower, upper = (float(v[0]) for v in operation.predict(
            {"p": np.array([16.0]), "nx": np.array([64.0])}))
        assert lower <= measured[operation.op] <= upper
        assert upper / lower < 1e16


def test_an_operation_whose_runs_scatter_gets_their_scatter(measured_data: Path) -> None:
    """NPB IS class B's MPI_Bcast took 0.77 and 0.05 ms in the two runs at P = 4, 5.8 and
    1.0 ms at P = 8: its time fit's scatter (the log standard error of a measured mean) is
    near 0.8, and its interval at P = 16 is at least as wide as that scatter alone makes it;
    its calls, the same in every run, have none. The notes name it among the most
    scattered."""
    operations, _, notes = npb_operations_at_16(measured_data, "is-B", "keys")
    bcast = next(operation for operation in operations if operation.op == "MPI_Bcast")
    assert 0.7 < bcast.fits["time"].scatter < 0.9
    assert bcast.fits["calls"].scatter == 0.0
    _, lower, upper = (float(v[0]) for v in bcast.predict({"p": np.array([16.0]),
                                                           "keys": np.array([2.0 ** 25])}))
    assert np.log(upper / lower) >= 2 * Z_INTERVAL * bcast.fits["time"].scatter
    [note] = [note for note in notes if "runs that scatter" in note]
    assert "MPI_Bcast" in note


def test_an_operation_whose_bytes_fall_with_p_is_not_predicted_to_vanish(
        measured_data: Path) -> None:
    """The ParRes transpose at order 3072: each rank sends its blocks, 8 * 3072^2 (P - 1) / P^2
    bytes, falling with P. Fitted at P <= 8, MPI_Irecv's time chose 0.24 - 0.46 p^-2 log2(p)^2
    - 0.065 s^-1/2, which the shape check, holding the bytes where they were measured, let
    pass: it is negative where the bytes fall on, and the time at P = 16 and 32 came out as
    2e-308 s (measured 7.2 and 4.3 ms), the interval's upper end 4e-178 s. The check follows
    the bytes along their trend in P now: every operation is positive there, and the
    intervals of the two transfers hold their measured times."""
    comm = read_table(measured_data / "prk_transpose/comm.csv", "communication")
    operations, _, _ = fit_operations(comm[comm["p"] <= 8], ["order"], "prk_transpose")
    at = {"p": np.array([16.0, 32.0]), "order": np.array([3072.0, 3072.0])}
    for operation in operations:
        predicted, lower, upper = operation.predict(at)
        measured = comm_points(comm[comm["p"] >= 16], ["order"])
        times = measured[measured["op"] == operation.op].sort_values("p")["time"].to_numpy()
        assert (predicted > 1e-3 * times).all(), operation.op
        if operation.op in ("MPI_Irecv", "MPI_Isend"):
            assert ((lower <= times) & (times <= upper)).all(), operation.op


def test_a_time_no_shape_follows_with_its_bytes_is_fitted_over_p_alone(
        measured_data: Path) -> None:
    """NPB IS W's MPI_Send sends 4 (P - 1) / P bytes per rank (2 to 3.5 at P = 2..8) while its
    time fell from 16 to 3 us: every shape over P and the bytes turns negative where the
    bytes grow on with P, so the operation would be left out. Its time is fitted over P
    alone, as a wait's, it says so, and its interval at P = 16 holds the measured time."""
    operations, measured, notes = npb_operations_at_16(measured_data, "is-W", "keys")
    send = next(operation for operation in operations if operation.op == "MPI_Send")
    assert not send.uses_volume
    assert not any(term.variable == "s" for basis in send.fits["time"].hypothesis.bases
                   for term in basis)
    assert any("fitted over P alone" in note and "MPI_Send" in note for note in notes)
    _, lower, upper = (float(v[0]) for v in send.predict(
        {"p": np.array([16.0]), "keys": np.array([2.0 ** 20])}))
    assert 0 < lower <= measured["MPI_Send"] <= upper
