"""The PMPI tracing library: real MPI programs of known traffic, in every binding, traced.

The programs in tests/mpi_programs/ make the same traffic from C, C++, Fortran (mpif.h,
``use mpi``, ``use mpi_f08``) and mpi4py (traffic.*), every other counted call from C and
``use mpi_f08`` (extras.*), every non-blocking collective from C, mpif.h and ``use mpi_f08``
(nonblocking.*), persistent requests from C, mpif.h and ``use mpi_f08`` (persistent.*),
one-sided communication from C and ``use mpi_f08`` (onesided.*) and the neighborhood
collectives from C and mpif.h (neighbors.*); each test runs one with mpirun and compares the
traces with the exact calls, bytes and peers. The parser's checks run without MPI.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from apmt.collect import pmpi
from apmt.errors import ApmtError
from apmt.names import TRACER_CALLS

PROGRAMS = Path(__file__).resolve().parent / "mpi_programs"
MPIRUN = ("mpirun", "--allow-run-as-root", "--oversubscribe")
needs_mpi = pytest.mark.skipif(shutil.which("mpicc") is None or shutil.which("mpirun") is None,
                               reason="needs mpicc and mpirun (Debian: libopenmpi-dev)")

Expected = dict[tuple[int, str, int], tuple[int, int]]  # (rank, op, peer) -> (calls, bytes)


def test_the_tracers_own_calls_are_the_ones_extraction_knows() -> None:
    """Every MPI function the tracer's sources call besides the operations they wrap is in
    apmt.names.TRACER_CALLS, whose sampled time extraction gives the tracer where the
    application never called it: a call added to the tracer and not there would be the
    application's time again."""
    sources = [path.read_text() for path in pmpi.SOURCE_DIR.glob("*.c")]
    called = {name for text in sources for name in re.findall(r"\b(PMPI_\w+)\s*\(", text)}
    wrapped = {f"P{name}" for text in sources
               for name in re.findall(r"\bint\s+(MPI_\w+)\s*\(", text)}
    assert called - wrapped == TRACER_CALLS


# ---- building and running ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The library built from the sources, as the install step builds it, into a test folder."""
    if shutil.which("mpicc") is None:
        pytest.skip("needs mpicc")
    return pmpi.build(tmp_path_factory.mktemp("pmpi-library"))


# how to compile each program: compiler, flags
COMPILERS = {
    "traffic.c": ("mpicc",),
    "traffic.cpp": ("mpicxx",),
    # gfortran 10+ rejects mpif.h calls with buffers of different types unless told not to
    "traffic_mpif.f90": ("mpifort", "-fallow-argument-mismatch"),
    "traffic_usempi.f90": ("mpifort",),
    "traffic_f08.f90": ("mpifort",),
    "extras.c": ("mpicc",),
    "extras_f08.f90": ("mpifort",),
    "nonblocking.c": ("mpicc",),
    "nonblocking_mpif.f90": ("mpifort", "-fallow-argument-mismatch"),
    "nonblocking_f08.f90": ("mpifort",),
    "persistent.c": ("mpicc",),
    "persistent_mpif.f90": ("mpifort", "-fallow-argument-mismatch"),
    "persistent_f08.f90": ("mpifort",),
    "onesided.c": ("mpicc",),
    "onesided_f08.f90": ("mpifort",),
    "neighbors.c": ("mpicc",),
    "neighbors_mpif.f90": ("mpifort", "-fallow-argument-mismatch"),
    "abort.c": ("mpicc",),
}


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[str]]:
    """A function that compiles a program of tests/mpi_programs once and returns its command."""
    folder = tmp_path_factory.mktemp("mpi-programs")
    done: dict[str, list[str]] = {}

    def compile_program(name: str) -> list[str]:
        if name.endswith(".py"):
            if importlib.util.find_spec("mpi4py") is None:
                pytest.skip("needs mpi4py")
            return [sys.executable, str(PROGRAMS / name)]
        if name not in done:
            compiler, *flags = COMPILERS[name]
            if shutil.which(compiler) is None:
                pytest.skip(f"needs {compiler}")
            binary = folder / Path(name).name.replace(".", "_")
            result = subprocess.run([compiler, *flags, "-O1", "-o", str(binary),
                                     str(PROGRAMS / name)], capture_output=True, text=True,
                                    check=False)
            assert result.returncode == 0, result.stderr
            done[name] = [str(binary)]
        return done[name]

    return compile_program


def run(command: list[str], ranks: int, run_dir: Path | None, library: Path,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run command on ranks ranks with the library preloaded, traced into run_dir (if given)."""
    env = {k: v for k, v in os.environ.items() if k not in ("APMT_PMPI_DIR", "LD_PRELOAD")}
    env.update(pmpi.environment(run_dir or Path("unused"), library))
    if run_dir is None:
        del env["APMT_PMPI_DIR"]
    return subprocess.run([*MPIRUN, "-np", str(ranks), *command], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def observed(table: pd.DataFrame) -> Expected:
    return {(int(r.rank), r.op, int(r.peer)): (int(r.calls), int(r.bytes))
            for r in table.itertuples()}


# ---- the same traffic from every binding -------------------------------------------------------


def traffic_expected() -> Expected:
    """The traffic of tests/mpi_programs/traffic.c with 2 ranks (see its comment)."""
    every_rank = {
        ("MPI_Test", -1): (1, 0),
        ("MPI_Allreduce", -1): (4, 4 * 10 * 4),   # 4 calls of 10 ints
        ("MPI_Bcast", -1): (1, 100),
        ("MPI_Barrier", -1): (1, 0),
        ("MPI_Alltoall", -1): (1, 2 * 3 * 4),      # 3 ints to each of 2 ranks
        ("MPI_Reduce", -1): (1, 7 * 8),
        ("MPI_Gather", -1): (1, 2 * 4),
        ("MPI_Scatter", -1): (1, 2 * 4),
        ("MPI_Allgather", -1): (1, 8),             # in place: the rank's 1 double
    }
    rank0 = {
        ("MPI_Send", 1): (3, 3 * 8000),
        ("MPI_Isend", 1): (2, 2 * 8000),
        ("MPI_Wait", -1): (2, 0),
        ("MPI_Recv", 1): (1, 5 * 4),               # MPI_ANY_SOURCE, status ignored: resolved
        ("MPI_Iprobe", 1): (1, 0),
    }
    rank1 = {
        ("MPI_Recv", 0): (3, 3 * 8000),
        ("MPI_Irecv", -2): (2, 2 * 8000),          # MPI_ANY_SOURCE, unknown at the post
        ("MPI_Waitall", -1): (1, 0),
        ("MPI_Send", 0): (1, 5 * 4),
        ("MPI_Iprobe", 0): (1, 0),
    }
    return {(rank, op, peer): value
            for rank, ops in ((0, rank0), (1, rank1))
            for (op, peer), value in {**every_rank, **ops}.items()}


@needs_mpi
@pytest.mark.parametrize("program", ["traffic.c", "traffic.cpp", "traffic_mpif.f90",
                                     "traffic_usempi.f90", "traffic_f08.f90", "traffic.py"])
def test_every_binding_is_traced_exactly(program: str, library: Path, compiled,
                                         tmp_path: Path) -> None:
    result = run(compiled(program), 2, tmp_path, library)
    assert result.returncode == 0, result.stderr
    table = pmpi.read_traces(tmp_path)
    assert observed(table) == traffic_expected()
    assert (table["time"] > 0).all()
    assert table.attrs["size"] == 2
    assert sorted(table.attrs["pid"]) == [0, 1] and len(set(table.attrs["pid"].values())) == 2
    assert set(table.attrs["host"].values()) == {socket.gethostname().split()[0]}
    assert pmpi.missing_ranks(tmp_path, 2) == []


# ---- every other call, with 3 ranks -------------------------------------------------------------


def extras_expected() -> Expected:
    """The traffic of tests/mpi_programs/extras.c with 3 ranks (see its comment)."""
    expected: Expected = {}
    for rank in range(3):
        nxt, mine = (rank + 1) % 3, rank + 1
        ops = {
            ("MPI_Send", -3): (1, 0), ("MPI_Recv", -3): (1, 0),   # MPI_PROC_NULL
            ("MPI_Sendrecv", nxt): (1, 8 * 8), ("MPI_Sendrecv_replace", nxt): (1, 2 * 4),
            ("MPI_Testall", -1): (1, 0), ("MPI_Testany", -1): (1, 0),
            ("MPI_Testsome", -1): (1, 0), ("MPI_Barrier", -1): (1, 0),
            ("MPI_Alltoallv", -1): (1, 3 * mine * 4),    # r+1 ints to each of 3 ranks
            ("MPI_Allgatherv", -1): (1, mine * 8), ("MPI_Gatherv", -1): (1, mine * 4),
            ("MPI_Scatterv", -1): (1, mine * 4),
            ("MPI_Reduce_scatter", -1): (1, (1 + 2 + 3) * 8),
            ("MPI_Reduce_scatter_block", -1): (1, 3 * 2 * 4),
            ("MPI_Scan", -1): (1, 3 * 4), ("MPI_Exscan", -1): (1, 3 * 4),
            ("MPI_Alltoall", -1): (2, 3 * 2 * 8 + 3 * 4),  # 2 doubles each; 1 int in place
            ("MPI_Allgather", -1): (1, 4 * 4),
            ("MPI_Gather", -1): (1, 2 * 8),               # the root in place: its own block
            ("MPI_Bcast", -1): (1, 5 * 4),
        }
        ops.update({
            0: {("MPI_Ssend", 1): (1, 10), ("MPI_Rsend", 2): (1, 5 * 4),
                ("MPI_Issend", 2): (1, 6 * 4), ("MPI_Wait", -1): (1, 0)},
            1: {("MPI_Recv", 2): (1, 4 * 4),              # world 2 is rank 0 of the reversed
                ("MPI_Probe", 0): (1, 0), ("MPI_Recv", 0): (1, 10),  # 10 of 100 chars came
                ("MPI_Bsend", 2): (1, 3 * 8)},
            2: {("MPI_Send", 1): (1, 4 * 4), ("MPI_Irecv", 1): (1, 3 * 8),
                ("MPI_Waitany", -1): (1, 0), ("MPI_Irecv", 0): (1, 5 * 4),
                ("MPI_Waitsome", -1): (1, 0), ("MPI_Recv", 0): (1, 6 * 4)},
        }[rank])
        expected.update({(rank, op, peer): value for (op, peer), value in ops.items()})
    return expected


@needs_mpi
@pytest.mark.parametrize("program", ["extras.c", "extras_f08.f90"])
def test_every_other_call_is_traced_exactly(program: str, library: Path, compiled,
                                            tmp_path: Path) -> None:
    result = run(compiled(program), 3, tmp_path, library)
    assert result.returncode == 0, result.stderr
    assert observed(pmpi.read_traces(tmp_path)) == extras_expected()


# ---- the non-blocking collectives, with 3 ranks ------------------------------------------------


def nonblocking_expected() -> Expected:
    """The traffic of tests/mpi_programs/nonblocking.c with 3 ranks (see its comment): each
    non-blocking collective once under its own name, with the bytes of its blocking form."""
    expected: Expected = {}
    for rank in range(3):
        mine = rank + 1
        ops = {
            "MPI_Ibarrier": (1, 0), "MPI_Wait": (2, 0), "MPI_Waitall": (1, 0),
            "MPI_Iallreduce": (1, 6 * 4),         # in place: the 6 ints of the receive buffer
            "MPI_Allreduce": (1, 4),              # the blocking one, counted apart
            "MPI_Ibcast": (1, 7 * 4), "MPI_Ireduce": (1, 5 * 8),
            "MPI_Ialltoall": (1, 3 * 2 * 8),      # 2 doubles to each of 3 ranks
            "MPI_Ialltoallv": (1, 3 * mine * 4),  # r+1 ints to each of 3 ranks
            "MPI_Iallgather": (1, 3 * 8),         # in place: the rank's 3 doubles
            "MPI_Iallgatherv": (1, mine * 8),
            "MPI_Igather": (1, 4 * 4),            # the root in place: its own block
            "MPI_Igatherv": (1, mine * 4),
            "MPI_Iscatter": (1, 10),
            "MPI_Iscatterv": (1, mine * 4),       # the root in place: its own block
            "MPI_Ireduce_scatter": (1, (1 + 2 + 3) * 8),
            "MPI_Ireduce_scatter_block": (1, 3 * 2 * 4),
            "MPI_Iscan": (1, 3 * 4), "MPI_Iexscan": (1, 2 * 8),
        }
        expected.update({(rank, op, -1): value for op, value in ops.items()})
    return expected


@needs_mpi
@pytest.mark.parametrize("program", ["nonblocking.c", "nonblocking_mpif.f90",
                                     "nonblocking_f08.f90"])
def test_every_nonblocking_collective_is_traced_exactly(program: str, library: Path, compiled,
                                                        tmp_path: Path) -> None:
    """The call that starts a non-blocking collective is counted with its bytes (not its
    completion, which is the waits'), under its own name."""
    result = run(compiled(program), 3, tmp_path, library)
    assert result.returncode == 0, result.stderr
    table = pmpi.read_traces(tmp_path)
    assert observed(table) == nonblocking_expected()
    assert (table["time"] > 0).all()


# ---- persistent requests, one-sided communication, neighborhood collectives, with 3 ranks ------


def persistent_expected() -> Expected:
    """The traffic of tests/mpi_programs/persistent.c with 3 ranks (see its comment): each
    request that MPI_Start or MPI_Startall starts is one call under its init's name, with the
    request's peer and bytes; nothing under MPI_Start, MPI_Startall or MPI_Request_free."""
    expected: Expected = {}
    for rank in range(3):
        nxt, prev = (rank + 1) % 3, (rank + 2) % 3
        ops = {
            # 4 MPI_Start of 100 doubles, then made again and started once: 50 (60) doubles
            ("MPI_Send_init", nxt): (4 + 1, 4 * 100 * 8 + 50 * 8),
            ("MPI_Recv_init", prev): (4 + 1, 4 * 100 * 8 + 60 * 8),
            ("MPI_Send_init", prev): (3, 3 * 20 * 4),      # MPI_Startall 3 times
            ("MPI_Recv_init", nxt): (3, 3 * 20 * 4),
            ("MPI_Send_init", -3): (1, 0),                 # MPI_PROC_NULL
            ("MPI_Waitall", -1): (4 + 3 + 1, 0),
            ("MPI_Barrier", -1): (1, 0),
        }
        ops.update({
            0: {("MPI_Wait", -1): (2, 0), ("MPI_Rsend_init", 2): (1, 3 * 8),
                ("MPI_Recv", 1): (1, 4 * 4)},
            1: {("MPI_Wait", -1): (4, 0),
                ("MPI_Recv_init", -2): (2, 2 * 10 * 4),    # MPI_ANY_SOURCE: the 10 ints posted
                ("MPI_Bsend_init", 0): (1, 4 * 4)},
            2: {("MPI_Wait", -1): (4, 0),
                ("MPI_Ssend_init", 1): (2, 2 * 5 * 4),     # world 1 is rank 1 of the reversed
                ("MPI_Recv_init", -2): (1, 3 * 8)},
        }[rank])
        expected.update({(rank, op, peer): value for (op, peer), value in ops.items()})
    return expected


@needs_mpi
@pytest.mark.parametrize("program", ["persistent.c", "persistent_mpif.f90", "persistent_f08.f90"])
def test_every_start_of_a_persistent_request_is_traced_exactly(program: str, library: Path,
                                                               compiled, tmp_path: Path) -> None:
    """A persistent request is counted at each start, with the time of the start call (split
    over the requests of an MPI_Startall), also where a freed request's handle is reused."""
    result = run(compiled(program), 3, tmp_path, library)
    assert result.returncode == 0, result.stderr
    table = pmpi.read_traces(tmp_path)
    assert observed(table) == persistent_expected()
    assert (table["time"] > 0).all()


def onesided_expected() -> Expected:
    """The traffic of tests/mpi_programs/onesided.c with 3 ranks (see its comment), the same on
    every rank: the origin's bytes with the target as the peer, a world rank though the window
    is on the ranks reversed; synchronisation with the target as the peer where it names one."""
    expected: Expected = {}
    for rank in range(3):
        nxt, prev = (rank + 1) % 3, (rank + 2) % 3
        ops = {
            ("MPI_Win_fence", -1): (2, 0),
            ("MPI_Put", nxt): (2, 10 * 8 + 4 * 8),         # in the fence and the PSCW epochs
            ("MPI_Put", -3): (1, 0),                       # MPI_PROC_NULL
            ("MPI_Get", prev): (1, 6 * 8),
            ("MPI_Accumulate", nxt): (1, 3 * 8),
            ("MPI_Win_lock", nxt): (1, 0), ("MPI_Win_unlock", nxt): (1, 0),
            ("MPI_Get_accumulate", nxt): (2, 4 * 8 + 5 * 8),   # MPI_NO_OP: the 5 doubles read
            ("MPI_Win_flush", nxt): (1, 0), ("MPI_Win_flush_local", nxt): (1, 0),
            ("MPI_Fetch_and_op", nxt): (1, 8), ("MPI_Compare_and_swap", nxt): (1, 8),
            ("MPI_Barrier", -1): (2, 0),
            ("MPI_Win_lock_all", -1): (1, 0), ("MPI_Win_unlock_all", -1): (1, 0),
            ("MPI_Rput", prev): (1, 5 * 8), ("MPI_Rget", nxt): (1, 2 * 8),
            ("MPI_Raccumulate", prev): (1, 8), ("MPI_Rget_accumulate", nxt): (1, 3 * 8),
            ("MPI_Waitall", -1): (1, 0),
            ("MPI_Win_flush_all", -1): (1, 0), ("MPI_Win_flush_local_all", -1): (1, 0),
            ("MPI_Win_sync", -1): (1, 0),
            ("MPI_Win_post", -1): (1, 0), ("MPI_Win_start", -1): (1, 0),
            ("MPI_Win_complete", -1): (1, 0), ("MPI_Win_wait", -1): (1, 0),
        }
        expected.update({(rank, op, peer): value for (op, peer), value in ops.items()})
    return expected


@needs_mpi
@pytest.mark.parametrize("program", ["onesided.c", "onesided_f08.f90"])
def test_every_one_sided_call_is_traced_exactly(program: str, library: Path, compiled,
                                               tmp_path: Path) -> None:
    result = run(compiled(program), 3, tmp_path, library)
    assert result.returncode == 0, result.stderr
    assert observed(pmpi.read_traces(tmp_path)) == onesided_expected()


def neighbors_expected() -> Expected:
    """The traffic of tests/mpi_programs/neighbors.c with 3 ranks (see its comment): each
    rank's blocks to its out-neighbours, none to MPI_PROC_NULL."""
    # the line: rank 0 sends only after it, rank 2 only before it (counts r+1, r+2)
    line_elements = {0: 2, 1: 2 + 3, 2: 3}
    line_blocks = {0: 1, 1: 2, 2: 1}
    # the directed graph: out-degrees 2, 1, 0; alltoallw: 1 int to 1 and 2 doubles to 2 from
    # rank 0, 3 doubles to 2 from rank 1
    graph_blocks = {0: 2, 1: 1, 2: 0}
    alltoallw = {0: 1 * 4 + 2 * 8, 1: 3 * 8, 2: 0}
    expected: Expected = {}
    for rank in range(3):
        ops = {
            "MPI_Neighbor_allgather": (1, 2 * 2 * 4),
            "MPI_Neighbor_alltoall": (2, 2 * 3 * 8 + 2 * 5),   # the ring, the triangle
            "MPI_Ineighbor_alltoall": (1, 2 * 4),
            "MPI_Neighbor_alltoallv": (1, line_elements[rank] * 4),
            "MPI_Ineighbor_allgather": (1, line_blocks[rank] * 8),
            "MPI_Ineighbor_alltoallv": (1, line_elements[rank] * 8),
            "MPI_Neighbor_allgatherv": (1, graph_blocks[rank] * 4 * 4),
            "MPI_Ineighbor_allgatherv": (1, graph_blocks[rank] * 2 * 8),
            "MPI_Neighbor_alltoallw": (1, alltoallw[rank]),
            "MPI_Ineighbor_alltoallw": (1, alltoallw[rank]),
            "MPI_Waitall": (1, 0),
        }
        expected.update({(rank, op, -1): value for op, value in ops.items()})
    return expected


@needs_mpi
@pytest.mark.parametrize("program", ["neighbors.c", "neighbors_mpif.f90"])
def test_every_neighborhood_collective_is_traced_exactly(program: str, library: Path, compiled,
                                                         tmp_path: Path) -> None:
    result = run(compiled(program), 3, tmp_path, library)
    assert result.returncode == 0, result.stderr
    assert observed(pmpi.read_traces(tmp_path)) == neighbors_expected()


# ---- runs that write nothing, or not everything ------------------------------------------------


@needs_mpi
def test_without_the_directory_nothing_is_written(library: Path, compiled,
                                                  tmp_path: Path) -> None:
    result = run(compiled("traffic.c"), 2, None, library, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == []
    assert "apmt" not in result.stdout + result.stderr


@needs_mpi
def test_a_rank_that_aborts_leaves_no_trace(library: Path, compiled, tmp_path: Path) -> None:
    """Rank 1 finalizes (and writes), rank 0 calls MPI_Abort: the run's traces are refused,
    and missing_ranks names rank 0; no temporary file is taken for a trace."""
    result = run(compiled("abort.c"), 2, tmp_path, library)
    assert result.returncode != 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pmpi.1.tsv"]
    assert pmpi.missing_ranks(tmp_path, 2) == [0]
    with pytest.raises(ApmtError, match=r"no MPI trace of rank 0 of 2"):
        pmpi.read_traces(tmp_path)


# ---- the parser, without MPI -------------------------------------------------------------------

HEADER = ("# apmt-pmpi 1 rank={rank} size={size} pid={pid} host=node7\n"
          "op\tpeer\tcalls\tbytes\ttime\n")


def write_trace(folder: Path, rank: int, rows: str, size: int = 2, end: bool = True) -> Path:
    path = folder / f"pmpi.{rank}.tsv"
    text = HEADER.format(rank=rank, size=size, pid=100 + rank) + rows
    path.write_text(text + ("# end\n" if end else ""))
    return path


def test_read_traces_gives_communication_rows(tmp_path: Path) -> None:
    write_trace(tmp_path, 0, "MPI_Send\t1\t3\t24000\t0.5\nMPI_Barrier\t-1\t1\t0\t0.25\n")
    write_trace(tmp_path, 1, "")
    (tmp_path / ".pmpi.1.tsv.4242").write_text("half a fil")   # a writer's temporary file
    table = pmpi.read_traces(tmp_path)
    assert list(table.columns) == ["op", "rank", "peer", "calls", "bytes", "time"]
    assert table.to_dict("records") == [
        {"op": "MPI_Send", "rank": 0, "peer": 1, "calls": 3.0, "bytes": 24000.0, "time": 0.5},
        {"op": "MPI_Barrier", "rank": 0, "peer": -1, "calls": 1.0, "bytes": 0.0, "time": 0.25}]
    assert table.attrs == {"pid": {0: 100, 1: 101}, "host": {0: "node7", 1: "node7"}, "size": 2}


@pytest.mark.parametrize(("rows", "message"), [
    ("MPI_Send\t1\t3\t24000\n", r"pmpi\.0\.tsv:3: 4 fields, expected 5"),
    ("MPI_Send\t1\tthree\t24000\t0.5\n", r"pmpi\.0\.tsv:3: peer, calls and bytes must be"),
    ("send\t1\t3\t24000\t0.5\n", r"pmpi\.0\.tsv:3: 'send' is not an MPI operation"),
    ("MPI_Send\t1\t3\t-5\t0.5\n", r"pmpi\.0\.tsv:3: peer below -3, or a negative"),
    ("MPI_Send\t1\t3\t5\t0.5\nMPI_Send\t1\t1\t5\t0.5\n", r"pmpi\.0\.tsv:4: a second row"),
])
def test_a_malformed_row_is_named_by_file_and_line(tmp_path: Path, rows: str,
                                                   message: str) -> None:
    write_trace(tmp_path, 0, rows, size=1)
    with pytest.raises(ApmtError, match=message):
        pmpi.read_traces(tmp_path)


def test_a_truncated_trace_is_not_taken_as_complete(tmp_path: Path) -> None:
    write_trace(tmp_path, 0, "MPI_Send\t1\t3\t24000\t0.5\n", size=1, end=False)
    assert pmpi.missing_ranks(tmp_path, 1) == [0]
    with pytest.raises(ApmtError, match=r"pmpi\.0\.tsv: no '# end' line"):
        pmpi.read_traces(tmp_path)


def test_headers_must_fit_the_file_and_each_other(tmp_path: Path) -> None:
    bad, mixed, misnamed = (tmp_path / name for name in ("bad", "mixed", "misnamed"))
    for folder in (bad, mixed, misnamed):
        folder.mkdir()
    (bad / "pmpi.0.tsv").write_text("rank 0\n")
    with pytest.raises(ApmtError, match=r"pmpi\.0\.tsv:1: expected '# apmt-pmpi 1"):
        pmpi.read_traces(bad)
    write_trace(mixed, 0, "", size=2)
    write_trace(mixed, 1, "", size=3)
    with pytest.raises(ApmtError, match=r"size=3 but pmpi\.0\.tsv size=2"):
        pmpi.read_traces(mixed)
    write_trace(misnamed, 1, "", size=2).rename(misnamed / "pmpi.5.tsv")
    with pytest.raises(ApmtError, match=r"pmpi\.5\.tsv:1: rank=1 size=2 does not fit"):
        pmpi.read_traces(misnamed)


def test_a_run_without_traces_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ApmtError, match="no MPI trace"):
        pmpi.read_traces(tmp_path)
    assert pmpi.missing_ranks(tmp_path, 3) == [0, 1, 2]


# ---- building and the environment, without running MPI -----------------------------------------


def test_environment_appends_the_library_to_ld_preload(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    library = tmp_path / "libapmt_pmpi.so"
    monkeypatch.setenv("LD_PRELOAD", "/opt/other.so")
    env = pmpi.environment(tmp_path / "run", library)
    assert env == {"LD_PRELOAD": f"/opt/other.so:{library}",
                   "APMT_PMPI_DIR": str((tmp_path / "run").resolve())}
    monkeypatch.setenv("LD_PRELOAD", str(library))
    assert pmpi.environment(tmp_path, library)["LD_PRELOAD"] == str(library)


def test_build_without_mpicc_says_what_to_install(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPICC", "no-such-mpicc")
    with pytest.raises(ApmtError, match=r"^mpicc not found: install Open MPI's development"):
        pmpi.build(tmp_path)


@needs_mpi
def test_build_reports_the_first_compiler_error(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "broken.c").write_text("int f(void) { return undeclared_name; }\n")
    monkeypatch.setattr(pmpi, "SOURCE_DIR", sources)
    with pytest.raises(ApmtError, match=r"failed: .*broken\.c:1:.*error.*undeclared_name"):
        pmpi.build(tmp_path / "out")
    assert not (tmp_path / "out" / pmpi.LIBRARY_NAME).exists()


@needs_mpi
def test_build_compiles_only_when_the_sources_change(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "small.c").write_text("int apmt_small(void) { return 1; }\n")
    monkeypatch.setattr(pmpi, "SOURCE_DIR", sources)
    library = pmpi.build(tmp_path / "out")
    first = library.stat().st_mtime_ns
    monkeypatch.setenv("MPICC", "no-such-mpicc")   # not needed while up to date
    assert pmpi.build(tmp_path / "out") == library
    assert library.stat().st_mtime_ns == first
    monkeypatch.delenv("MPICC")
    (sources / "small.c").write_text("int apmt_small(void) { return 2; }\n")
    pmpi.build(tmp_path / "out")
    assert library.stat().st_mtime_ns != first
