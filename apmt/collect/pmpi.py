"""The PMPI tracing library: build it, put it into a run, and read what it wrote.

The library (C sources in ``apmt/pmpi/``) is loaded into every rank with LD_PRELOAD. It wraps
the MPI functions of the C bindings (C, C++, mpi4py) and of the Fortran bindings (mpif.h,
``use mpi``, ``use mpi_f08``), which do not go through the C ones, and counts per rank,
operation and peer the calls, bytes and seconds. At MPI_Finalize each rank writes
``$APMT_PMPI_DIR/pmpi.<rank>.tsv``::

    # apmt-pmpi 1 rank=<r> size=<P> pid=<pid> host=<hostname>
    op      peer    calls   bytes   time
    MPI_Send        1       3       24000   0.000123
    # end

Peers are MPI_COMM_WORLD ranks; -1 means none (collectives, waits, tests, window
synchronisation but for the calls naming a target), -2 an MPI_ANY_SOURCE the library could
not resolve (MPI_Irecv, MPI_Recv_init), -3 MPI_PROC_NULL. Bytes are the message sizes for
point-to-point calls (MPI_Recv: what arrived; MPI_Irecv: the posted count), the origin's for
one-sided ones (MPI_Put, MPI_Get, ..., the target as the peer), and the rank's send volume for
collectives (per operation in ``apmt/pmpi/collectives.c``). Non-blocking calls, point-to-point
and collective (MPI_Isend, MPI_Iallreduce, ...), have their own names, their bytes and the
time of the call that starts them; the time spent completing them goes to the waits and
tests. A persistent request's transfers are counted at each MPI_Start or MPI_Startall, under
the name of the call that made it (MPI_Send_init, MPI_Recv_init, ...).
The file is renamed into place when complete, so a rank that never reaches MPI_Finalize
(a crash, MPI_Abort, a time limit) leaves none: ``missing_ranks`` names those ranks, and
``read_traces`` refuses a run that lacks some.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from apmt.errors import ApmtError
from apmt.inputs import MAX_P, MAX_VALUE, read_text, shown
from apmt.names import TRACER_LIBRARY
from apmt.tables import write_atomic, write_text_atomic

SOURCE_DIR = Path(__file__).resolve().parent.parent / "pmpi"
LIBRARY_NAME = f"{TRACER_LIBRARY}.so"
COMPILE_FLAGS = ("-shared", "-fPIC", "-O2", "-Wall")
DIRECTORY_VARIABLE = "APMT_PMPI_DIR"
MPICC_MISSING = "mpicc not found: install Open MPI's development package (Debian: libopenmpi-dev)"

TRACE_NAME = re.compile(r"pmpi\.(\d+)\.tsv")
HEADER = re.compile(r"# apmt-pmpi 1 rank=([0-9]{1,12}) size=([0-9]{1,12}) pid=([0-9]{1,12}) "
                    r"host=(\S+)")
COLUMNS_LINE = "op\tpeer\tcalls\tbytes\ttime"
END_LINE = "# end"
OPERATION = re.compile(r"MPI_[A-Za-z_]+")
TRACE_COLUMNS = ("op", "rank", "peer", "calls", "bytes", "time")


# ---- building ---------------------------------------------------------------------------------


def sources() -> list[Path]:
    """The library's C sources and headers, in a stable order (the stamp hashes them)."""
    return sorted([*SOURCE_DIR.glob("*.c"), *SOURCE_DIR.glob("*.h")])


def build(destination: Path) -> Path:
    """Compile the library into ``destination/libapmt_pmpi.so`` and return its path.

    A stamp beside it holds the hash of the sources and flags: when it matches, nothing is
    compiled (and mpicc is not needed), so calling this before every run costs a few reads.
    """
    destination = Path(destination)
    library = destination / LIBRARY_NAME
    stamp = destination / f"{LIBRARY_NAME}.stamp"
    key = _source_key()
    if library.is_file() and stamp.is_file() and stamp.read_text().strip() == key:
        return library
    _compile(_mpicc(), library)
    write_text_atomic(key + "\n", stamp)
    return library


def _source_key() -> str:
    digest = hashlib.sha256(" ".join(COMPILE_FLAGS).encode())
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _mpicc() -> str:
    """The MPI C compiler wrapper: $MPICC if set, else mpicc from PATH."""
    mpicc = shutil.which(os.environ.get("MPICC") or "mpicc")
    if mpicc is None:
        raise ApmtError(MPICC_MISSING)
    return mpicc


def _compile(mpicc: str, library: Path) -> None:
    """Compile into a temporary file and rename it, so a running program never sees half."""
    def compile_into(temporary: str) -> None:
        command = [mpicc, *COMPILE_FLAGS, "-o", temporary, *map(str, sources())]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ApmtError(f"compiling the PMPI library failed: {_first_error(result)}")

    try:
        write_atomic(library, compile_into, mode=0o755)
    except OSError as error:
        raise ApmtError(f"compiling the PMPI library with {mpicc} failed: {error}") from None


def _first_error(result: subprocess.CompletedProcess) -> str:
    lines = [line.strip() for line in (result.stderr + result.stdout).splitlines()]
    lines = [line for line in lines if line]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or [f"exit status {result.returncode}"])[0]


def library_file() -> Path:
    """Where the install step puts the library (``<venv>/lib/apmt``), built or not."""
    return Path(sys.prefix) / "lib" / "apmt" / LIBRARY_NAME


def library_path() -> Path:
    """The library at ``library_file()``, built on demand."""
    return build(library_file().parent)


def environment(run_dir: Path, library: Path | None = None) -> dict[str, str]:
    """The variables a run needs for tracing: LD_PRELOAD (the library appended to any set
    already) and APMT_PMPI_DIR (absolute, since ranks may start elsewhere). Launchers that
    do not pass the environment on to remote ranks must export both (mpirun -x)."""
    library = library_path() if library is None else Path(library)
    preload = [part for part in re.split(r"[:\s]+", os.environ.get("LD_PRELOAD", "")) if part]
    if str(library) not in preload:
        preload.append(str(library))
    return {"LD_PRELOAD": ":".join(preload), DIRECTORY_VARIABLE: str(Path(run_dir).resolve())}


# ---- reading ----------------------------------------------------------------------------------


@dataclass
class Trace:
    """One rank's trace file."""

    rank: int
    size: int
    pid: int
    host: str
    rows: list[tuple] = field(default_factory=list)


def trace_files(run_dir: Path) -> dict[int, Path]:
    """The complete-looking trace files of a run by rank (temporary files are hidden)."""
    found = {}
    for path in Path(run_dir).glob("pmpi.*.tsv"):
        match = TRACE_NAME.fullmatch(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def missing_ranks(run_dir: Path, p: int) -> list[int]:
    """Ranks 0..p-1 without a complete trace: they did not reach MPI_Finalize (or the run was
    not traced)."""
    files = trace_files(run_dir)
    return [rank for rank in range(p) if rank not in files or not _ends(files[rank])]


def _ends(path: Path) -> bool:
    lines = path.read_text(errors="replace").rstrip("\n").splitlines()
    return bool(lines) and lines[-1] == END_LINE


def read_traces(run_dir: Path) -> pd.DataFrame:
    """All ranks' traces of a run as communication rows without run columns: op, rank, peer,
    calls, bytes, time. ``attrs`` holds per rank the ``pid`` and ``host`` (to map processes
    to ranks) and the run's ``size``. Raises ApmtError for a malformed file (naming it and
    the line) or a run some of whose ranks left no trace."""
    run_dir = Path(run_dir)
    files = trace_files(run_dir)
    if not files:
        raise ApmtError(f"{run_dir}: no MPI trace (pmpi.<rank>.tsv): the run was not traced "
                        f"(LD_PRELOAD of the PMPI library and {DIRECTORY_VARIABLE})")
    traces = [_read_trace(path, rank) for rank, path in sorted(files.items())]
    _check_complete(run_dir, traces)
    rows = [(op, trace.rank, *numbers) for trace in traces for op, *numbers in trace.rows]
    table = pd.DataFrame(rows, columns=list(TRACE_COLUMNS))
    table = table.astype({"op": str, "rank": "int64", "peer": "int64", "calls": "float64",
                          "bytes": "float64", "time": "float64"})
    table.attrs = {"pid": {t.rank: t.pid for t in traces},
                   "host": {t.rank: t.host for t in traces},
                   "size": traces[0].size}
    return table


def _check_complete(run_dir: Path, traces: list[Trace]) -> None:
    first = traces[0]
    for trace in traces[1:]:
        if trace.size != first.size:
            raise ApmtError(f"{run_dir}: pmpi.{trace.rank}.tsv says size={trace.size} but "
                            f"pmpi.{first.rank}.tsv size={first.size}: traces of different runs")
    ranks = {trace.rank for trace in traces}
    # some rank below len(ranks) + 1 is missing when any is: no walk over a size of 2**31
    missing = [rank for rank in range(min(first.size, len(ranks) + 10)) if rank not in ranks]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise ApmtError(f"{run_dir}: no MPI trace of rank {shown} of {first.size}: a rank "
                        f"that does not reach MPI_Finalize writes none")


def _read_trace(path: Path, rank: int) -> Trace:
    lines = read_text(path).splitlines()
    trace = _read_header(path, rank, lines)
    if len(lines) < 3 or lines[-1] != END_LINE:
        raise ApmtError(f"{path}: no '{END_LINE}' line at the end: the trace is incomplete")
    seen: set[tuple[str, int]] = set()
    for number, line in enumerate(lines[2:-1], start=3):
        row = _parse_row(path, number, line)
        if row[:2] in seen:
            raise ApmtError(f"{path}:{number}: a second row for {row[0]} peer {row[1]}")
        seen.add(row[:2])
        trace.rows.append(row)
    return trace


def _read_header(path: Path, rank: int, lines: list[str]) -> Trace:
    match = HEADER.fullmatch(lines[0]) if lines else None
    if match is None:
        found = shown(lines[0], 80) if lines else "nothing"
        raise ApmtError(f"{path}:1: expected '# apmt-pmpi 1 rank=<r> size=<P> pid=<pid> "
                        f"host=<host>', found {found}")
    trace = Trace(int(match[1]), int(match[2]), int(match[3]), match[4])
    if not 1 <= trace.size <= MAX_P:
        raise ApmtError(f"{path}:1: size={trace.size} is not a process count from 1 to {MAX_P}")
    if trace.rank != rank or trace.rank >= trace.size:
        raise ApmtError(f"{path}:1: rank={trace.rank} size={trace.size} does not fit the "
                        f"file name (rank {rank})")
    if len(lines) < 2 or lines[1] != COLUMNS_LINE:
        found = repr(lines[1][:80]) if len(lines) > 1 else "nothing"
        raise ApmtError(f"{path}:2: expected the columns {COLUMNS_LINE!r}, found {found}")
    return trace


def _parse_row(path: Path, number: int, line: str) -> tuple[str, int, int, int, float]:
    fields = line.split("\t")
    where = f"{path}:{number}"
    if len(fields) != 5:
        raise ApmtError(f"{where}: {len(fields)} fields, expected 5 (op, peer, calls, bytes, "
                        f"time separated by tabs)")
    op, peer, calls, volume, time = fields
    if not OPERATION.fullmatch(op):
        raise ApmtError(f"{where}: {op!r} is not an MPI operation name")
    try:
        numbers = int(peer), int(calls), int(volume), float(time)
    except ValueError:
        raise ApmtError(f"{where}: peer, calls and bytes must be integers and time a number, "
                        f"found {peer!r}, {calls!r}, {volume!r}, {time!r}") from None
    if numbers[0] < -3 or min(numbers[1:]) < 0 or not math.isfinite(numbers[3]):
        raise ApmtError(f"{where}: peer below -3, or a negative or NaN count, size or time")
    if numbers[0] >= MAX_P or max(numbers[1:]) > MAX_VALUE:
        raise ApmtError(f"{where}: peer, count, size or time beyond any real run "
                        f"({shown(peer)}, {shown(calls)}, {shown(volume)}, {shown(time)})")
    return (op, *numbers)
