"""Summary statistics of MPI collective latencies (one row per library, operation and P).

The file gives, per (mpi, variable, Ranks), the number of timed calls ``N`` and statistics of
their latency in microseconds. The communication table wants totals, so ``time`` is
``N * mean`` in seconds (exact, unlike a median) and ``calls`` is ``N``; the message size is
not given, so ``bytes`` is NaN.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from apmt.errors import ApmtError
from apmt.inputs import MAX_VALUE, check_file, shown
from apmt.tables import as_numbers

COLUMNS = {"mpi": "library", "variable": "op", "Ranks": "p", "N": "calls", "mean": "mean"}
MICROSECOND = 1e-6


def read_collectives(paths: list[Path]) -> pd.DataFrame:
    """Read collectives CSV files into the communication table."""
    return pd.concat([_read_one(Path(path)) for path in paths], ignore_index=True)


def _read_one(path: Path) -> pd.DataFrame:
    check_file(path)
    try:
        raw = pd.read_csv(path)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ApmtError(f"{path}: not a CSV file ({str(error).splitlines()[0]})") from None
    missing = [column for column in COLUMNS if column not in raw.columns]
    if missing:
        raise ApmtError(f"{path}: missing column {missing[0]!r} of a collectives file "
                        f"(needs {', '.join(COLUMNS)})")
    table = raw[list(COLUMNS)].rename(columns=COLUMNS)
    for column in ("N", "mean"):
        _check_finite(raw[column], column, path)
    table["time"] = as_numbers(table.pop("mean")) * MICROSECOND
    table["time"] *= as_numbers(table["calls"])
    table["bytes"] = float("nan")
    return table[["op", "library", "calls", "bytes", "time", "p"]]


def _check_finite(column: pd.Series, name: str, path: Path) -> None:
    """N and mean multiply into the time: each a finite number of at most MAX_VALUE (NaN,
    1e400 or a 400-digit number would give a time of NaN or infinity, named by no row)."""
    values = as_numbers(column).to_numpy(dtype=float)
    bad = ~(np.abs(values) <= MAX_VALUE)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ApmtError(f"{path}: row {row + 2}, column {name!r}: {shown(column.iloc[row])} is "
                        f"not a finite number of at most {MAX_VALUE:.3g}")
