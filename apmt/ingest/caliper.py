"""Caliper ``.cali`` files (region profiles: the spot channel, with MPI profiling or without,
and Caliper's own aggregating channels) into the measurements table.

A spot file holds one record per call-tree node with the node's time aggregated over the ranks:
min, max and average per rank ("Min/Max/Avg time/rank") and the sum over ranks ("Total time").
The LULESH files on hand carry only INCLUSIVE times (``<op>#inclusive#sum#time.duration``, unit
``sec``). The table wants the EXCLUSIVE time per rank, so this module takes the sum over ranks,
preferring an exclusive one (``sum#sum#time.duration``) and otherwise deriving it from the
inclusive one (``sum#inclusive#sum#time.duration``) by subtracting the children's sums, and
divides by P: the mean over all ranks, a rank that never entered the node counting 0, which is
what a value without a rank column means. Why not the "Avg time/rank" attribute: it averages over
the ranks that entered the node only (its count, ``avg.count``, is a hidden attribute that
caliper-reader drops), so the averages of a node and of its children cover different ranks
(26 of 27 for some MPI calls in the 27-rank file) and cannot be subtracted. Min and max are left
out: the table has no column for them and they are not metrics of their own.

Files of Caliper's aggregating channels (a ``CALI_CONFIG`` of its own services, as hatchet's
tests carry: ``sum#time.duration``, Caliper 2.10's ``sum#time.duration.ns``) hold the exclusive
time per path already, in records per rank, thread or time-series snapshot: they are summed per
path as the spot channel's are. Without a unit in the file, a ``.ns`` attribute is in
nanoseconds and a floating-point ``time.duration`` in seconds (Caliper 2, or Caliper 1 with
``CALI_TIMER_UNIT=sec``; Caliper 1's integer microseconds are refused, naming the attribute).

Kernel = the node's path (nested ``function``/``loop``/``mpi.function`` regions) joined with '/'.
The record without a path (time outside any annotated region) is no node and is left out, as are
nodes whose derived exclusive time is not positive (rounding of the file's 6 decimals; the table
forbids zero time).

P is the ``mpi.world.size`` global (else adiak's ``jobsize``); only when neither is there does it
come from the file name (``p<P>`` or ``<P>_cores``/``_ranks``/``_procs``), or from the caller
(``processes``: the count every run used; a program without MPI, such as RAJAPerf's sequential
variants, says none). A ``problem_size`` or ``size`` global, else one whose name holds
"problem size" in any spelling (RAJAPerf's ``ProblemSizeRunParam``), becomes the ``size``
parameter column when every file has a numeric one: runs of two sizes are not repetitions.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
from caliperreader import CaliperReader
from caliperreader.readererror import ReaderError

from apmt.errors import ApmtError
from apmt.ingest import process_count
from apmt.inputs import MAX_P, MAX_VALUE, check_file, read_text, shown

EXCLUSIVE_SUM = "sum#sum#time.duration"
INCLUSIVE_SUM = "sum#inclusive#sum#time.duration"
# the exclusive time of Caliper's aggregating channels (per rank, thread or snapshot)
AGGREGATED = ("sum#time.duration", "sum#time.duration.ns")
TIME_ATTRIBUTES = (EXCLUSIVE_SUM, INCLUSIVE_SUM, *AGGREGATED)
SECONDS_PER_UNIT = {"sec": 1.0, "s": 1.0, "ms": 1e-3, "msec": 1e-3, "usec": 1e-6, "us": 1e-6,
                    "nsec": 1e-9, "ns": 1e-9}
P_GLOBALS = ("mpi.world.size", "jobsize")
SIZE_GLOBALS = ("problem_size", "size")
SIZE_IN_NAME = re.compile(r"problem[^a-z]?size", re.IGNORECASE)
P_IN_NAME = re.compile(r"(?:^|[._-])p(\d+)(?:$|[._-])|(\d+)_(?:cores|ranks|procs)")
# caliperreader's exceptions on damaged text: its own, and those of the records it trusts
# (a node whose metadata is missing gives AttributeError on None, a bad id ValueError)
UNREADABLE = (ReaderError, UnicodeDecodeError, OSError, KeyError, IndexError, ValueError,
              StopIteration, AttributeError, TypeError)
NODE_FIELD = re.compile(r"(?:^|,)(id|parent)=([^,]*)")


def read_caliper(paths: list[Path], processes: str | None = None) -> pd.DataFrame:
    """Read spot-channel .cali files into one measurements table (kernel, metric, p, value);
    ``processes``: the process count of runs whose files do not say it."""
    runs = [_read_file(Path(path), processes) for path in paths]
    if all(size is not None for _, size in runs):
        for table, size in runs:
            table.insert(3, "size", size)
    return pd.concat([table for table, _ in runs], ignore_index=True)


def _read_file(path: Path, processes: str | None = None) -> tuple[pd.DataFrame, float | None]:
    """One file's rows, and its problem size when the globals give a number."""
    reader = _load(path)
    attribute = _time_attribute(reader, path)
    totals = _totals(reader.records, attribute, path)
    if attribute == INCLUSIVE_SUM:
        totals = _exclusive(totals)
    p = _processes(reader.globals, path, processes)
    scale = _seconds_per_unit(reader, attribute, path) / p
    rows = [("/".join(node), "time", p, total * scale)
            for node, total in totals.items() if total > 0]
    table = pd.DataFrame(rows, columns=["kernel", "metric", "p", "value"])
    return table, _number(reader.globals, _size_globals(reader.globals))


def _load(path: Path) -> CaliperReader:
    check_file(path)
    lines = read_text(path).splitlines(keepends=True)
    _check_no_cycle(lines, path)
    reader = CaliperReader()
    try:
        reader.read(iter(lines))
        reader.attributes()
    except UNREADABLE as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ApmtError(f"{path}: not a readable Caliper .cali file ({shown(reason, 80)})"
                        ) from None
    return reader


def _check_no_cycle(lines: list[str], path: Path) -> None:
    """caliperreader follows a node's parents until there is none: a node that names itself
    as its parent (the one cycle its node table can hold, as a parent must exist before its
    child) would keep it walking for ever."""
    for number, line in enumerate(lines, start=1):
        if line.startswith("__rec=node"):
            fields = dict(NODE_FIELD.findall(line.rstrip("\r\n")))
            if "parent" in fields and fields.get("id") == fields["parent"]:
                raise ApmtError(f"{path}: line {number}: node {shown(fields['id'])} is its own "
                                "parent (a damaged file)")


def _value(record: dict, attribute: str, path: Path) -> float:
    """A record's time as a finite number of at most MAX_VALUE; else one line naming it."""
    value = record[attribute]
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not math.isfinite(number) or abs(number) > MAX_VALUE:
        raise ApmtError(f"{path}: node {'/'.join(map(str, record.get('path', ())))!r}: "
                        f"{attribute} is {shown(value)}, not a finite number")
    return number


def _time_attribute(reader: CaliperReader, path: Path) -> str:
    """The time attribute: the spot channel's sum over ranks, exclusive if the file has one,
    else inclusive; else an aggregating channel's exclusive sum."""
    for attribute in TIME_ATTRIBUTES:
        if attribute in reader.attributes():
            return attribute
    raise ApmtError(f"{path}: no {' or '.join(map(repr, TIME_ATTRIBUTES))} attribute (is it a "
                    "region profile, of the spot channel or of Caliper's aggregate service?)")


def _seconds_per_unit(reader: CaliperReader, attribute: str, path: Path) -> float:
    try:
        unit = reader.attribute(attribute).get("attribute.unit") or _implied_unit(
            attribute, reader.attribute(attribute).metadata())
    except UNREADABLE:
        unit = None
    if not isinstance(unit, str) or unit not in SECONDS_PER_UNIT:
        raise ApmtError(f"{path}: attribute {attribute!r} has unit {shown(unit)}; expected one of "
                        f"{', '.join(SECONDS_PER_UNIT)}")
    return SECONDS_PER_UNIT[unit]


def _implied_unit(attribute: str, metadata: dict) -> str | None:
    """The unit of a time attribute without one: Caliper 2.10's ``time.duration.ns`` is in
    nanoseconds, Caliper 2's floating-point ``time.duration`` in seconds."""
    if attribute.endswith(".ns"):
        return "ns"
    kind = metadata.get("cali.attribute.type")
    named = kind[1] if isinstance(kind, tuple) and len(kind) > 1 else metadata.get("type")
    return "sec" if attribute in AGGREGATED and named == "double" else None


def _totals(records: list[dict], attribute: str, path: Path) -> dict[tuple[str, ...], float]:
    """Sum of the attribute per call-tree path, over the region-profile records."""
    totals: dict[tuple[str, ...], float] = {}
    for record in records:
        if "path" in record and attribute in record and _is_profile(record):
            node = tuple(map(str, _as_list(record["path"])))
            totals[node] = totals.get(node, 0.0) + _value(record, attribute, path)
    return totals


def _as_list(path: object) -> list:
    """A record's path: caliperreader gives a list, or a single value for one level."""
    return path if isinstance(path, list) else [path]


def _is_profile(record: dict) -> bool:
    """Spot files may hold other channels (e.g. time series) next to the region profile."""
    return record.get("spot.channel", "regionprofile") == "regionprofile"


def _exclusive(inclusive: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    """Exclusive totals: each node's inclusive total less its children's."""
    exclusive = dict(inclusive)
    for node, total in inclusive.items():
        if node[:-1] in exclusive:
            exclusive[node[:-1]] -= total
    return exclusive


def _processes(globals_: dict, path: Path, processes: str | None = None) -> int:
    """P from the globals, or from the file name when the globals lack it, or from the
    caller when neither says; where the file says, the caller must agree."""
    number = _number(globals_, P_GLOBALS)
    if number is None:
        match = P_IN_NAME.search(path.stem)
        number = float(match.group(1) or match.group(2)) if match else None
    given = process_count(processes)
    if processes is not None and given is None:
        raise ApmtError(f"processes={processes}: a Caliper file has no parameter to name; "
                        "give the number of processes every run used")
    if number is not None and given is not None and number != given:
        raise ApmtError(f"{path}: the file says p={number:g}, processes={processes}")
    number = given if number is None else number
    if number is None or not 1 <= number <= MAX_P or number % 1:
        raise ApmtError(f"{path}: no valid process count (mpi.world.size or jobsize global, "
                        f"or p in the file name, a whole number from 1 to {MAX_P}; found "
                        f"{shown(number)}); without MPI, say how many ran (apmt import "
                        "--processes 1)")
    return int(number)


def _size_globals(globals_: dict) -> tuple[str, ...]:
    """The globals that may hold the problem size, in order: the usual names, then those
    whose names say "problem size" in another spelling."""
    return (*SIZE_GLOBALS, *sorted(key for key in globals_ if SIZE_IN_NAME.search(key)))


def _number(globals_: dict, keys: tuple[str, ...]) -> float | None:
    """The first of the keys the globals hold as a number."""
    for key in keys:
        try:
            number = float(globals_[key])
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        return number if math.isfinite(number) else None
    return None
