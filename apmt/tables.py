"""The tidy tables that pass between apmt's stages: their columns, checks, and file I/O.

measurements: one row per observation.
    kernel   str    function or call path (call paths joined with '/')
    metric   str    metric name: ``time`` in seconds, or a counter (see ``COUNTER_METRICS``)
    p        int    number of MPI processes
    <param>  float  further parameters of the run, e.g. ``size`` (any other numeric column)
    rep      int    optional: repetition number
    rank     int    optional: MPI rank; without it a value is already per rank (mean over ranks)
    value    float  the observation; per rank, not summed over ranks

communication: one row per MPI operation and run (and rank, and peer when known).
    op       str    MPI operation, e.g. ``MPI_Allreduce``
    calls    float  number of calls
    bytes    float  bytes moved by these calls (sent for point-to-point, message size times
                    calls for collectives); NaN when not known
    time     float  seconds spent in these calls
    p        int    number of MPI processes
    <param>  float  further parameters of the run
    library  str    optional: MPI library, when a file mixes several
    rep, rank, peer int  optional

Every number is finite: p a whole number from 1 to 2**31 - 1, rep and rank whole numbers >= 0
(rank below p), peer >= -3, parameters >= 0, value, calls, bytes and time >= 0 and at most
2**64 (apmt.inputs.MAX_VALUE); ``true`` is no number. bytes alone may be NaN (not known).

measurements may hold a kernel ``<app>``: the measured application (wall) time per rank.

kernels (model.json "kernels"): one row per kernel, from apmt.kernels.classify.
    kernel, class (key, non-scalable, communication, aggregated, application, nested: inside
    another region, apmt.nesting), reason (the numbers that decided it), max_share (largest
    share of the cost in a run), slope (b of cost ~ P^b)

predictions: one row per series and requested point.
    kernel, metric, <params>, predicted, lower, upper  (lower/upper: 90% prediction interval),
    trust (interpolated, extrapolated or unsupported: apmt.trust) and trust_reason (one short
    sentence); a series the model could not fit has rows too, without numbers, its reason in
    trust_reason; kernel ``<app>`` holds the assembled application time (metric ``time``) and
    its parts (``comp_time``, ``mem_time``, ``comm_time``, ``others_time``, seconds per
    rank); the fit of a measured ``<app>`` kernel, if any, comes beside them as metric
    ``fitted_time``, and the assembled time is then Eq. 2's sum reconciled with it (their
    geometric mean, the parts adding up to it: apmt.predict._reconciled), and no kernel's
    time nor any term of the sum exceeds that fit, end by end (apmt.predict.within; a row
    it bounded says so in trust_reason, with what its own fit gave). In
    counter mode each kernel also has ``mem_total_time`` (T_mem, Eq. 3) and, where its path
    gave one (apmt.counters), ``bf_mem``.

evaluation: one row per held-out point, series and method (apmt.evaluate).
    kernel, metric, p, <params>, method (apmt, analytic, amdahl, powerlaw, extrap), measured,
    predicted, lower, upper (apmt's 90% interval, NaN for the others), ape (percent). Rows of
    kernel ``<app>`` with method apmt validate the assembled model: metrics time,
    computation_time (every computing kernel), comm_time and, where the model has a term for
    the time outside kernels and MPI, others_time, measured and predicted alike
    (apmt.model.measured_parts); apmt's own fit of a measured ``<app>`` time is metric
    fitted_time, so each method has one ``<app>``/time row per point.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.errors import ApmtError
from apmt.inputs import MAX_P, MAX_VALUE, shown

TIME_METRIC = "time"
COUNTER_METRICS = (
    "cycles", "instructions", "stall_cycles", "l1_hits", "l2_hits", "llc_hits",
    "mem_loads", "mem_stores", "llc_misses", "l1i_accesses", "l1i_misses", "l2i_accesses",
    "l2i_misses", "dtlb_misses", "itlb_misses", "branches", "branch_misses", "fp_ops", "visits",
    "l1d_misses", "lli_misses",   # cachegrind: L1 data misses (loads+stores), last-level I-misses
)
APP_KERNEL = "<app>"

MEASUREMENT_KEYS = ("kernel", "metric")
MEASUREMENT_REQUIRED = ("kernel", "metric", "p", "value")
COMM_KEYS = ("op", "library")
COMM_REQUIRED = ("op", "calls", "bytes", "time", "p")
OPTIONAL_INTEGER = ("rep", "rank", "peer")
# whole-number columns and their bounds (peer: -1 none, -2 any source, -3 MPI_PROC_NULL)
INTEGER_BOUNDS = {"p": (1, MAX_P), "rep": (0, MAX_P), "rank": (0, MAX_P - 1),
                  "peer": (-3, MAX_P - 1)}
TIME_UNITS_IN_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def parameter_columns(table: pd.DataFrame, kind: str = "measurements") -> list[str]:
    """Columns that hold run parameters besides ``p``: whatever is not a documented column."""
    known = set(_known_columns(kind)) | {"unit"}
    return [c for c in table.columns if c not in known]


def _known_columns(kind: str) -> tuple[str, ...]:
    if kind == "measurements":
        return (*MEASUREMENT_REQUIRED, "rep", "rank")
    return (*COMM_REQUIRED, "library", "rep", "rank", "peer")


def check_table(table: pd.DataFrame, source: str, kind: str = "measurements",
                params: Iterable[str] | None = None) -> pd.DataFrame:
    """Validate a table against its contract and return it with canonical dtypes.

    ``params`` lists the allowed parameter columns; when None, every further numeric column is
    taken as a parameter. Raises ApmtError naming the file, row and value of the first problem.
    """
    required = MEASUREMENT_REQUIRED if kind == "measurements" else COMM_REQUIRED
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise ApmtError(f"{source}: missing column {missing[0]!r} (a {kind} table needs "
                        f"{', '.join(required)})")
    table = _normalise_units(table, source, kind)
    extra = parameter_columns(table, kind)
    allowed = set(extra) if params is None else set(params)
    for column in extra:
        if column not in allowed:
            raise ApmtError(f"{source}: unknown column {column!r} (known: "
                            f"{', '.join(_known_columns(kind))}; parameters given: "
                            f"{', '.join(sorted(allowed)) or 'none'})")
    for column in params or ():
        if column not in table.columns:
            raise ApmtError(f"{source}: parameter column {column!r} not found")
    text_columns = MEASUREMENT_KEYS if kind == "measurements" else ("op", "library")
    numeric = [c for c in table.columns if c not in text_columns]
    out = table.copy()
    for column in numeric:
        out[column] = _numeric_column(table[column], column, source)
    for column in [c for c in text_columns if c in table.columns]:
        empty = (table[column].isna() | table[column].astype(str).str.strip().eq("")).to_numpy()
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            raise ApmtError(f"{source}: row {row + 2}, column {column!r} is empty")
        out[column] = table[column].astype(str)
    _check_values(out, source, kind)
    return _number_repetitions(out, kind)


def _number_repetitions(table: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Without a ``rep`` column, a row that repeats another's series, point (and rank) is a
    further run of that point: number the runs, or they would be taken as one run (averaged,
    or with ranks, summed) instead of repetitions."""
    if "rep" in table.columns:
        return table
    keys = MEASUREMENT_KEYS if kind == "measurements" else COMM_KEYS
    identity = [*(k for k in keys if k in table.columns), "p", *parameter_columns(table, kind),
                *(c for c in ("rank", "peer") if c in table.columns)]
    rep = table.groupby(identity, sort=False, dropna=False).cumcount() + 1
    return table.assign(rep=rep.astype("int64")) if rep.max() > 1 else table


def _normalise_units(table: pd.DataFrame, source: str, kind: str) -> pd.DataFrame:
    """Accept a ``unit`` column only if each metric has one unit; convert time to seconds."""
    if "unit" not in table.columns:
        return table
    if kind != "measurements":
        raise ApmtError(f"{source}: unknown column 'unit' (communication time is in seconds)")
    table = table.copy()
    for metric, rows in table.groupby("metric", sort=False):
        units = rows["unit"].astype(str).unique()
        if len(units) > 1:
            row = int(np.flatnonzero(table["metric"].eq(metric).to_numpy()
                                     & table["unit"].astype(str).ne(units[0]).to_numpy())[0])
            raise ApmtError(f"{source}: row {row + 2}: metric {metric!r} in {units[1]!r}, but "
                            f"in {units[0]!r} before: mixed units")
        if metric == TIME_METRIC:
            if units[0] not in TIME_UNITS_IN_SECONDS:
                raise ApmtError(f"{source}: metric 'time' has unit {units[0]!r}; "
                                f"expected one of {', '.join(TIME_UNITS_IN_SECONDS)}")
            table.loc[rows.index, "value"] = (pd.to_numeric(rows["value"], errors="coerce")
                                              * TIME_UNITS_IN_SECONDS[units[0]])
    return table.drop(columns="unit")


def _numeric_column(column: pd.Series, name: str, source: str) -> pd.Series:
    """A column as numbers: every cell a finite number within its column's bounds (see
    ``INTEGER_BOUNDS``, ``apmt.inputs.MAX_VALUE``); NaN only where ``_check_values`` or the
    column allows it. ``true`` is not a number, though pandas would read it as 1."""
    values = as_numbers(column)
    bad = (values.isna() & column.notna()) | _flags(column)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ApmtError(f"{source}: row {row + 2}, column {name!r}: "
                        f"{_cell(column.iloc[row])} is not a number")
    numbers = values.to_numpy(dtype=float)
    low, high = INTEGER_BOUNDS.get(name, (None, MAX_VALUE))
    outside = ~np.isnan(numbers) & ((numbers > high) | (numbers < (low if low is not None
                                                                   else -np.inf)))
    outside |= np.isinf(numbers)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        span = (f"whole number from {low} to {high}" if low is not None
                else f"finite number of at most {high:.3g}")
        raise ApmtError(f"{source}: row {row + 2}, column {name!r}: "
                        f"{_cell(column.iloc[row])} is not a {span}")
    if name in INTEGER_BOUNDS:
        missing = np.isnan(numbers)
        if missing.any() and name != "p":        # p's NaN is named with its series below
            row = int(np.flatnonzero(missing)[0])
            raise ApmtError(f"{source}: row {row + 2}, column {name!r} is empty")
        if missing.any():
            return values.astype("float64")
        if (numbers != np.round(numbers)).any():
            row = int(np.flatnonzero(numbers != np.round(numbers))[0])
            raise ApmtError(f"{source}: row {row + 2}, column {name!r}: "
                            f"{_cell(column.iloc[row])} is not a whole number")
        return values.astype("int64")
    return values.astype("float64")


def as_numbers(column: pd.Series) -> pd.Series:
    """pandas' numbers of a column; cell by cell when a whole number is too large for a
    float (hundreds of digits), which then is NaN like any other bad cell."""
    try:
        return pd.to_numeric(column, errors="coerce")
    except (OverflowError, TypeError, ValueError):
        return pd.to_numeric(column.map(_number_or_nan), errors="coerce")


def _number_or_nan(value: object) -> float:
    """A cell as a float: infinite when too large for one (then refused as such), NaN when
    no number."""
    try:
        return float(value)
    except OverflowError:
        return float("-inf") if str(value).lstrip().startswith("-") else float("inf")
    except (TypeError, ValueError):
        return float("nan")


def _flags(column: pd.Series) -> np.ndarray:
    """Which cells are true/false; only a bool or mixed column can hold one (fast path for
    the numeric columns of a large table)."""
    if column.dtype != bool and column.dtype != object:
        return np.zeros(len(column), dtype=bool)
    return column.map(lambda value: isinstance(value, bool | np.bool_)).to_numpy(dtype=bool)


def _cell(value: object) -> str:
    """A cell as the user wrote it (``-2.0``, not numpy's ``np.float64(-2.0)``), cut short."""
    return shown(value.item() if isinstance(value, np.generic) else value)


def _check_values(table: pd.DataFrame, source: str, kind: str) -> None:
    value_columns = ("value",) if kind == "measurements" else ("time", "calls")
    for column in (*value_columns, "p"):
        values = table[column].to_numpy(dtype=float)
        nan = np.isnan(values)
        if nan.any():
            row = int(np.flatnonzero(nan)[0])
            raise ApmtError(f"{source}: row {row + 2}, {_describe_row(table, row, kind)}: "
                            f"{column} is NaN")
        if column == "p":
            bad = values < 1
        elif kind == "measurements":
            # a rank that never entered a kernel has zero time; a whole run cannot
            zero_time = (table["metric"] == TIME_METRIC).to_numpy() & (values == 0)
            bad = (values < 0) | (zero_time & ("rank" not in table.columns))
        else:
            bad = values < 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            if column == "p":
                what = f"p must be at least 1, not {float(values[row])!r}"
            elif values[row] == 0:
                what = f"zero time {float(values[row])!r}"
            else:
                what = f"negative {column} {float(values[row])!r}"
            raise ApmtError(f"{source}: row {row + 2}, {_describe_row(table, row, kind)}: "
                            f"{what}")
    _check_parameters(table, source, kind)


def _check_parameters(table: pd.DataFrame, source: str, kind: str) -> None:
    """Parameters (a problem size, ...) are measured quantities too: not NaN or negative;
    bytes may be unknown (NaN) but not negative; ranks lie below P."""
    if kind != "measurements":
        negative = (table["bytes"] < 0).to_numpy()
        if negative.any():
            row = int(np.flatnonzero(negative)[0])
            raise ApmtError(f"{source}: row {row + 2}, {_describe_row(table, row, kind)}: "
                            f"negative bytes {float(table['bytes'].iloc[row])!r}")
    for column in parameter_columns(table, kind):
        values = table[column].to_numpy(dtype=float)
        bad = np.isnan(values) | (values < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ApmtError(f"{source}: row {row + 2}, {_describe_row(table, row, kind)}: "
                            f"parameter {column!r} is {float(values[row])!r}, not a number "
                            ">= 0")
    if "rank" in table.columns:
        beyond = (table["rank"] >= table["p"]).to_numpy()
        if beyond.any():
            row = int(np.flatnonzero(beyond)[0])
            raise ApmtError(f"{source}: row {row + 2}, {_describe_row(table, row, kind)}: "
                            f"rank {table['rank'].iloc[row]} is not below p")


def _describe_row(table: pd.DataFrame, row: int, kind: str) -> str:
    record = table.iloc[row]
    if kind == "measurements":
        return f"series {record['kernel']!r}/{record['metric']!r} at p={record['p']}"
    return f"operation {record['op']!r} at p={record['p']}"


def read_table(path: str | Path, kind: str = "measurements",
               params: Iterable[str] | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet table and validate it."""
    path = Path(path)
    if not path.exists():
        raise ApmtError(f"{path}: no such file")
    try:
        if path.suffix == ".parquet":
            table = pd.read_parquet(path)
        else:
            table = pd.read_csv(path, dtype={"kernel": str, "metric": str, "op": str})
            _check_no_implicit_index(table, path)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OSError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise ApmtError(f"{path}: not a readable {kind} table ({first_line})") from None
    if table.empty:
        raise ApmtError(f"{path}: the {kind} table has no rows")
    return check_table(table, str(path), kind, params)


def _check_no_implicit_index(table: pd.DataFrame, path: Path) -> None:
    """pandas takes a first data row with one field too many as a sign that the first column
    is an index, and shifts every column by one; that is a malformed row, not an index."""
    if not isinstance(table.index, pd.RangeIndex):
        raise ApmtError(f"{path}: row 2 has {len(table.columns) + 1} fields but the header "
                        f"has {len(table.columns)} columns")


def _new_file_mode() -> int:
    """The mode ``open`` would give a new file (0666 less the umask); mkstemp gives 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | Path, write: Callable[[str], None],
                 mode: int | None = None) -> None:
    """Let ``write`` fill a temporary file beside ``path``, then rename it into place, so no
    partial output is ever left; the file gets ``mode`` (default: what ``open`` would give)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(handle)
    try:
        write(temporary)
        os.chmod(temporary, _new_file_mode() if mode is None else mode)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write a table (CSV, or Parquet by its suffix) atomically."""
    if Path(path).suffix == ".parquet":
        write_atomic(path, lambda temporary: table.to_parquet(temporary, index=False))
    else:
        write_atomic(path, lambda temporary: table.to_csv(temporary, index=False))


def write_text_atomic(text: str, path: str | Path) -> None:
    """Write a text file atomically, as write_table does for tables."""
    write_atomic(path, lambda temporary: Path(temporary).write_text(text))


def read_json(path: str | Path) -> dict:
    """A JSON record apmt wrote (a decision, a provenance); a bad one is one clear line."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ApmtError(f"{path}: not readable JSON ({error})") from None


def describe_table(table: pd.DataFrame, kind: str) -> str:
    """One line: rows, series and the process counts, to see at a glance what was read."""
    keys = [k for k in (MEASUREMENT_KEYS if kind == "measurements" else COMM_KEYS)
            if k in table.columns]
    series = len(table[keys].drop_duplicates())
    ps = sorted(int(p) for p in table["p"].unique())
    span = f" ({ps[0]}..{ps[-1]})" if len(ps) > 1 else f" ({ps[0]})"
    return f"{len(table)} rows, {series} series, {len(ps)} distinct P{span}"


def table_kind(path: Path) -> str:
    """``communication`` when the header has op, calls, bytes and time, else measurements."""
    try:
        columns = _header(path)
    except (OSError, ValueError, ImportError, pd.errors.ParserError, UnicodeDecodeError):
        return "measurements"  # read_table reports the problem with the file
    return "communication" if set(COMM_REQUIRED[:4]) <= set(columns) else "measurements"


def _header(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        return list(pd.read_parquet(path).columns)
    return list(pd.read_csv(path, nrows=0).columns)
