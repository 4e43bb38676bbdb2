"""Score-P CUBE4 profiles (``profile.cubex``) into the measurements table.

One row per call path, metric and MPI rank, with the EXCLUSIVE value: what the call path itself
spent, without its callees, so that the rows of a rank add up to the rank's total. Kernel names
are call paths from the root joined with '/' (``main/foo/MPI_Send``); cnodes that end up with the
same path (e.g. Score-P parameter instances) are summed. Metric names go through
``apmt/data/metric_aliases.yaml``; a metric not listed there keeps its name, lower-cased.

What is read, and what is left out:

* Only metrics whose values are plain sums: integer and DOUBLE types. MINDOUBLE/MAXDOUBLE metrics
  (Score-P's ``min_time``, ``max_time``, ``maximum_heap_memory_allocated``) are extremes per
  visit, not additive over call paths, and have no exclusive value; histograms, rates, TAU
  atomics and complex values are not numbers per call path either. Only the roots of the metric
  tree are read (Score-P's metrics are flat), as Extra-P does. Metrics the file lists but stores
  no data for are skipped (in data/scorep_counters: those the cube_dump files show as all zero).
* A negative exclusive value of an unsigned counter (counter noise: the callees counted more than
  the caller, e.g. 7 values of -1 or -2 in hw_counter/L3_DCA_negative.cubex) comes out as 0:
  pycubexr clamps when it subtracts the callees.
* The locations (threads) of one process are summed into its MPI rank, the rank of the process
  location group; pycubexr's ``Location.rank`` is the thread number, not the MPI rank. Location
  groups that are not processes (e.g. accelerators) are left out.
* Rows of a call path on a rank that never entered it (zero visits there) are left out: they are
  zero in every metric and no observation, and the table forbids zero time. This also drops call
  paths no rank entered. Zero counters of entered call paths stay: they are measured zeros (e.g.
  no floating-point operations in MPI_Send), and a series may be zero in one run but not in
  another; ``apmt.ingest.drop_empty_series`` drops series that are zero in every run. A time row
  is also left out when its exclusive time is not positive (no such row in data/scorep_counters).

Run parameters come from the name of the directory holding the profile, in Extra-P's cube-set
naming (see ``parse_run_name``), also when a profile file is given. A name without ``p<P>`` takes
p from the profile: its number of MPI ranks (distinct ranks of its process location groups).
A name without a '.' that is not in that naming either (Score-P's own experiment directories,
``scorep-20251127_1030_4417``) carries no parameters: such runs take p from their profiles.
Runs whose names give no repetition are numbered, in the order given, among the runs of the
same p and parameters: two runs at one P are two repetitions, not one run of twice the ranks.
A run directory without a ``profile.cubex`` stands for each of its ``.cubex`` files, as in
Extra-P's cube sets (``mm.x1y1z1/profile1.cubex``, ``profile2.cubex``): repetitions of its point,
numbered so.
"""

from __future__ import annotations

import re
import struct
import tarfile
import zlib
from collections import Counter
from pathlib import Path
from xml.etree.ElementTree import ParseError

import numpy as np
import pandas as pd
from pycubexr import CubexParser
from pycubexr.classes import Metric
from pycubexr.utils.custom_tarinfo import TarInfoWithoutCheck
from pycubexr.utils.exceptions import (
    CorruptIndexError,
    MissingMetricError,
    UnsupportedMetricFormatError,
)

from apmt.errors import ApmtError
from apmt.ingest.metrics import metric_name
from apmt.inputs import MAX_P, shown

PROFILE = "profile.cubex"
# Additive scalar data types: values add up over call paths and ranks.
ADDITIVE_TYPES = {
    "DOUBLE", "FLOAT", "INT", "INT8", "INT16", "INT32", "INT64", "INTEGER", "SIGNED INT",
    "SIGNED INTEGER", "SHORT INT", "SIGNED SHORT INT", "UINT8", "UINT16", "UINT32", "UINT64",
    "UNSIGNED INT", "UNSIGNED INTEGER", "UNSIGNED SHORT INT",
}
TIME_UNITS = {"sec": 1.0, "s": 1.0}
RESERVED = {"kernel", "metric", "value", "rep", "rank", "unit"}
PAIR = r"([A-Za-z_]+)(\d+(?:[.,]\d+)?)"
PAIRS = re.compile(rf"(?:{PAIR}[.,]?)*")
REPETITION = re.compile(r"\.r(\d+)$")
# pycubexr's exceptions on a damaged profile: its own, the archive's and the XML's, and those
# of the values it trusts (a missing attribute is None; a size field too large to allocate)
UNREADABLE = (tarfile.TarError, OSError, EOFError, KeyError, IndexError, ParseError,
              AssertionError, ValueError, struct.error, zlib.error, CorruptIndexError,
              UnsupportedMetricFormatError, AttributeError, TypeError, OverflowError,
              MemoryError)
ZDATA = b"ZCUBEX.DATA"
INDEX_HEADER = b"CUBEX.INDEX"
# what one metric's compressed blocks may inflate to: 64 million values, far more than a
# profile of 100,000 call paths at 1,000 ranks holds per rank group; a zlib bomb (1,000:1)
# would otherwise take the memory pycubexr asks for without a bound
MAX_INFLATED_BYTES = 512 * 2 ** 20
INFLATE_STEP = 2 ** 20


def read_cube(paths: list[Path]) -> pd.DataFrame:
    """Read profiles, run directories or cube-set directories into one measurements table.

    All runs must carry the same parameters in their names, as in Extra-P's cube sets.
    """
    runs = [run for path in paths for run in find_profiles(Path(path))]
    shared = {folder for folder, count in Counter(run.parent for run in runs).items()
              if count > 1}
    tables = _numbered([_read_run(run, run.parent in shared) for run in runs])
    _check_same_parameters(runs, tables)
    return pd.concat(tables, ignore_index=True)


def _numbered(tables: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """Each run without a repetition in its name gets one: the next after those its point
    (p and parameters) already has, in the order given (1, 2, ...)."""
    used: dict[tuple, set[int]] = {}
    for table in tables:
        if "rep" in table.columns and len(table):
            used.setdefault(_point(table), set()).add(int(table["rep"].iloc[0]))
    numbered = []
    for table in tables:
        if "rep" not in table.columns:
            taken = used.setdefault(_point(table), set())
            rep = next(number for number in range(1, len(taken) + 2) if number not in taken)
            taken.add(rep)
            table = table.assign(rep=rep)
        numbered.append(table)
    return numbered


def _point(table: pd.DataFrame) -> tuple:
    """The run's p and parameters by name, whatever the order of its columns."""
    names = sorted(name for name in _param_names(table) if name != "rep")
    return tuple((name, table[name].iloc[0]) for name in names) if len(table) else ()


def find_profiles(path: Path) -> list[Path]:
    """The profiles a path stands for: itself; a run directory's (run_profiles); else those of
    its subdirectories, each a run; else the directory's own .cubex files."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ApmtError(f"{path}: no such file or directory")
    if (path / PROFILE).is_file():
        return [path / PROFILE]
    runs = [profile for folder in sorted(p for p in path.iterdir() if p.is_dir())
            for profile in run_profiles(folder)] or run_profiles(path)
    if not runs:
        raise ApmtError(f"{path}: no {PROFILE} (nor another .cubex file) in it or in its "
                        "subdirectories")
    return runs


def run_profiles(folder: Path) -> list[Path]:
    """A run directory's profiles: its profile.cubex, Score-P's (Scalasca's summary.cubex
    beside it analyses the same run); without one, each of its .cubex files is a repetition
    of the run's point, as Extra-P's cube reader takes them (``profile1.cubex``,
    ``profile2.cubex``)."""
    if (folder / PROFILE).is_file():
        return [folder / PROFILE]
    return sorted(f for f in folder.glob("[!.]*.cubex") if f.is_file())


def parse_run_name(directory: Path) -> dict[str, float]:
    """Parameters of a run directory named as in Extra-P's cube sets.

    ``[<prefix>.]<param><value>[.<param><value>...][.r<rep>]``, as Extra-P's cube reader splits
    it: the prefix is what precedes the first '.', at least one pair must follow, pairs may also
    follow each other directly (``x1y1z1``) or be separated by ',', and a value may have a
    decimal '.' or ',' (``x1.5``, ``x1,5``). Returns float values keyed by parameter name, with
    ``p`` and ``rep`` when given (both whole numbers).
    """
    repetition = REPETITION.search(directory.name)
    rest = directory.name[:repetition.start()] if repetition else directory.name
    body = rest.split(".", 1)[1] if "." in rest else rest
    if not body or not PAIRS.fullmatch(body):
        raise ApmtError(f"{directory}: directory name not in Extra-P's cube-set naming "
                        "(<name>.p<P>.<param><value>....r<rep>, or <name>.x<v>y<v>z<v>.r<rep>)")
    values: dict[str, float] = {}
    for key, text in re.findall(PAIR, body):
        if key in values or key in RESERVED:
            raise ApmtError(f"{directory}: parameter {key!r} in the name is repeated or reserved")
        values[key] = float(text.replace(",", "."))
    if repetition:
        values["rep"] = float(repetition.group(1))
    if not 1 <= values.get("p", 1) <= MAX_P or values.get("p", 1) % 1:
        raise ApmtError(f"{directory}: p={values['p']:g} in the name is not a whole number "
                        f"from 1 to {MAX_P}")
    return values


def _run_parameters(directory: Path) -> dict[str, float]:
    """The run's parameters from its directory's name (parse_run_name); none for a name
    with no '.' outside that naming (Score-P's ``scorep-<date>_<time>_<id>``)."""
    if "." not in directory.name and not PAIRS.fullmatch(directory.name):
        return {}
    return parse_run_name(directory)


def _read_run(profile: Path, shared: bool = False) -> pd.DataFrame:
    """One profile's rows, with the run's p, parameters and repetition from its directory.
    A directory ``shared`` by several profiles names no single repetition: each is
    numbered (_numbered)."""
    params = _run_parameters(profile.parent)
    if shared:
        params.pop("rep", None)
    matrices, paths, ranks = _read_profile(profile)
    count = len(np.unique(ranks[ranks >= 0]))
    p = int(params.pop("p", count))
    if p != count:
        raise ApmtError(f"{profile}: directory name says p={p} but the profile has "
                        f"{count} MPI ranks")
    table = _rows(matrices, paths, ranks)
    table.insert(2, "p", p)
    for position, (key, value) in enumerate(params.items(), start=3):
        table.insert(position, key, int(value) if key == "rep" else value)
    return table


def _read_profile(profile: Path) -> tuple[dict[str, np.ndarray], list[str], np.ndarray]:
    """Exclusive values per metric (cnodes x locations), call paths, and the rank per location."""
    _check_compressed_sizes(profile)
    try:
        with CubexParser(profile) as cube:
            paths = _call_paths(cube)
            ranks = _location_ranks(cube, profile)
            matrices = {metric_name(m.name): _exclusive(cube, m)
                        for m in _additive_metrics(cube, profile)}
    except UNREADABLE as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ApmtError(f"{profile}: not a readable CUBE4 profile ({reason})") from None
    matrices = {name: values for name, values in matrices.items() if values is not None}
    if not matrices:
        raise ApmtError(f"{profile}: no metric with additive values stored in the profile")
    return matrices, paths, ranks


def _check_compressed_sizes(profile: Path) -> None:
    """Before pycubexr decompresses a metric: the entry count and block sizes in the header
    of each compressed ``<id>.data`` must fit in the member. pycubexr allocates what a damaged
    header says (a count of 2**62 entries asks for exabytes) before checking anything."""
    try:
        with tarfile.open(profile, tarinfo=TarInfoWithoutCheck) as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            for name, member in members.items():
                index = members.get(name.removesuffix(".data") + ".index")
                if name.endswith(".data") and index is not None:
                    _check_data_member(tar, member, index, profile)
    except (tarfile.TarError, OSError, EOFError, ValueError, struct.error, zlib.error) as error:
        raise ApmtError(f"{profile}: not a readable CUBE4 profile ({shown(str(error), 80)})"
                        ) from None


def _check_data_member(tar: tarfile.TarFile, member: tarfile.TarInfo, index: tarfile.TarInfo,
                       profile: Path) -> None:
    with tar.extractfile(member) as data:
        if data.read(len(ZDATA)) != ZDATA:
            return
        with tar.extractfile(index) as stream:
            one = stream.read(len(INDEX_HEADER) + 4)[len(INDEX_HEADER):]
        order = "<" if one == struct.pack("<i", 1) else ">"
        count = struct.unpack(f"{order}q", data.read(8))[0]
        room = member.size - len(ZDATA) - 8
        if not 0 <= count <= room // 24:
            raise ApmtError(f"{profile}: member {member.name}: {count} compressed blocks "
                            f"claimed in {member.size} bytes (a damaged profile)")
        headers = struct.unpack(f"{order}{3 * count}q", data.read(24 * count))
        sizes = headers[2::3]
        if min(sizes, default=0) < 0 or sum(sizes) > room - 24 * count:
            raise ApmtError(f"{profile}: member {member.name}: compressed blocks of "
                            f"{sum(sizes)} bytes claimed in {member.size} bytes (a damaged "
                            "profile)")
        inflated = 0
        for size in (size for size in sizes if size):
            inflated += _inflated_size(data.read(size), MAX_INFLATED_BYTES - inflated)
            if inflated > MAX_INFLATED_BYTES:
                raise ApmtError(f"{profile}: member {member.name}: its compressed blocks "
                                f"inflate beyond {MAX_INFLATED_BYTES // 2 ** 20} MiB (a "
                                "damaged profile, or a zlib bomb)")


def _inflated_size(block: bytes, limit: int) -> int:
    """How many bytes a zlib block inflates to, counted in steps and stopped past ``limit``:
    nothing of the size a damaged or hostile block claims is ever held."""
    inflater = zlib.decompressobj()
    total = len(inflater.decompress(block, INFLATE_STEP))
    while inflater.unconsumed_tail and total <= limit:
        total += len(inflater.decompress(inflater.unconsumed_tail, INFLATE_STEP))
    return total


def _call_paths(cube: CubexParser) -> list[str]:
    """Each cnode's call path from the root, joined with '/', in ``all_cnodes`` order."""
    names: dict[int, str] = {}
    for cnode in cube.all_cnodes():
        parent = names.get(cnode.parent.id) if cnode.parent is not None else None
        names[cnode.id] = f"{parent}/{cnode.region.name}" if parent else cnode.region.name
    return [names[cnode.id] for cnode in cube.all_cnodes()]


def _location_ranks(cube: CubexParser, profile: Path) -> np.ndarray:
    """MPI rank of each location, indexed by location id; -1 for non-process locations.

    pycubexr has no public accessor for location groups, which hold the MPI rank, so this reads
    its parsed system tree.
    """
    ranks = np.full(len(cube.get_locations()), -1)
    for group in cube._anchor_result.system_tree_nodes[0].all_location_groups():
        if group.type == "process":
            ranks[[location.id for location in group.all_locations()]] = int(group.rank)
    if (ranks < 0).all():
        raise ApmtError(f"{profile}: no process locations (MPI ranks) in the system tree")
    return ranks


def _additive_metrics(cube: CubexParser, profile: Path) -> list[Metric]:
    """The root metrics with additive values; time must be in seconds."""
    metrics = [m for m in cube.get_metrics() if m.data_type in ADDITIVE_TYPES]
    for metric in metrics:
        if metric_name(metric.name) == "time" and metric.units not in TIME_UNITS:
            raise ApmtError(f"{profile}: metric {metric.name!r} has unit {metric.units!r}, "
                            "expected seconds")
    names = [metric_name(m.name) for m in metrics]
    if len(set(names)) < len(names):
        raise ApmtError(f"{profile}: two metrics map to one apmt name in {names}")
    return metrics


def _exclusive(cube: CubexParser, metric: Metric) -> np.ndarray | None:
    """Exclusive values (cnodes x locations) as floats; None when the file stores no data."""
    try:
        values = cube.get_metric_values(metric, cache=False)
    except MissingMetricError:
        return None
    rows = [values.cnode_values(cnode, convert_to_exclusive=True) for cnode in cube.all_cnodes()]
    return np.asarray(rows, dtype=float)


def _rows(matrices: dict[str, np.ndarray], paths: list[str], ranks: np.ndarray) -> pd.DataFrame:
    """The long table of one profile: per-rank sums, then the rows worth keeping."""
    frames = {name: _per_rank_and_path(values, paths, ranks) for name, values in matrices.items()}
    entered = frames["visits"] > 0 if "visits" in frames else None
    tables = [_long(name, frame, entered) for name, frame in frames.items()]
    table = pd.concat(tables, ignore_index=True)
    bad_time = (table["metric"] == "time") & (table["value"] <= 0)
    return table[~bad_time].reset_index(drop=True)


def _per_rank_and_path(values: np.ndarray, paths: list[str], ranks: np.ndarray) -> pd.DataFrame:
    """Sum the locations (threads) of each rank and the cnodes sharing one call path."""
    frame = pd.DataFrame(values[:, ranks >= 0], columns=ranks[ranks >= 0])
    frame = frame.T.groupby(level=0).sum().T
    return frame.groupby(np.asarray(paths), sort=False).sum()


def _long(metric: str, frame: pd.DataFrame, entered: pd.DataFrame | None) -> pd.DataFrame:
    """Rows (kernel, metric, rank, value) of one metric, for the entered (path, rank) pairs."""
    keep = np.ones(frame.size, bool) if entered is None else entered.to_numpy().ravel()
    return pd.DataFrame({
        "kernel": np.repeat(frame.index.to_numpy(), frame.shape[1])[keep],
        "metric": metric,
        "rank": np.tile(frame.columns.to_numpy(), frame.shape[0])[keep],
        "value": frame.to_numpy().ravel()[keep],
    })


def _check_same_parameters(runs: list[Path], tables: list[pd.DataFrame]) -> None:
    """Refuse to mix runs whose names carry different parameters (one table, one column set)."""
    first = set(tables[0].columns)
    for run, table in zip(runs, tables, strict=True):
        if set(table.columns) != first:
            raise ApmtError(f"{run.parent}: parameters {_params(table)} differ from "
                            f"{runs[0].parent}'s {_params(tables[0])}; a cube set needs the "
                            "same parameters in every run name")


def _params(table: pd.DataFrame) -> str:
    return ", ".join(_param_names(table))


def _param_names(table: pd.DataFrame) -> list[str]:
    """A run's columns that say which run it is: p, the parameters and the repetition."""
    return [c for c in table.columns if c not in ("kernel", "metric", "rank", "value")]
