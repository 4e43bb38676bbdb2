"""Summary statistics of MPI collective latencies (one row per library, operation and P).

The file gives, per (mpi, variable, Ranks), the number of timed calls ``N`` and statistics of
their latency in microseconds. The communication table wants totals, so ``time`` is
``N * mean`` in seconds (exact, unlike a median) and ``calls`` is ``N``; the message size is
not given, so ``bytes`` is NaN.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from apmt.errors import ApmtError
from apmt.inputs import check_file

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
    table["time"] = pd.to_numeric(table.pop("mean"), errors="coerce") * MICROSECOND
    table["time"] *= pd.to_numeric(table["calls"], errors="coerce")
    table["bytes"] = float("nan")
    return table[["op", "library", "calls", "bytes", "time", "p"]]
