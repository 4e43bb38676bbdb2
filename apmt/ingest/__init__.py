"""Importers: each reads one format users already have into a tidy apmt table."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from apmt.errors import ApmtError
from apmt.tables import MEASUREMENT_KEYS, check_table

log = logging.getLogger(__name__)


def _caliper(paths: list[Path], processes: str | None = None) -> pd.DataFrame:
    from apmt.ingest.caliper import read_caliper
    return read_caliper(paths, processes)


def _cube(paths: list[Path]) -> pd.DataFrame:
    from apmt.ingest.cube import read_cube
    return read_cube(paths)


def _collectives(paths: list[Path]) -> pd.DataFrame:
    from apmt.ingest.collectives import read_collectives
    return read_collectives(paths)


def _extrap_text(paths: list[Path], processes: str | None = None) -> pd.DataFrame:
    from apmt.ingest.extrap_text import read_extrap_text
    return read_extrap_text(paths, processes)


# format name -> (reader, kind of table it produces)
FORMATS: dict[str, tuple[Callable[[list[Path]], pd.DataFrame], str]] = {
    "extrap-text": (_extrap_text, "measurements"),
    "cube": (_cube, "measurements"),
    "caliper": (_caliper, "measurements"),
    "collectives": (_collectives, "communication"),
}
# what a call path's value holds, where the reader makes it so: Cube's and Caliper's readers
# subtract the callees (apmt.ingest.cube, .caliper); an Extra-P text file does not say
CALL_PATH_VALUES = {"cube": "exclusive", "caliper": "exclusive"}


# formats whose files may not say how many processes ran (``processes``)
NAMED_PROCESSES = ("extrap-text", "caliper")


def process_count(processes: str | None) -> int | None:
    """The number of processes every run used, where ``processes`` is a whole number; None for
    a name (of the parameter that counts them) or nothing. A count below 1 is refused."""
    try:
        number = float(processes) if processes is not None else math.nan
    except ValueError:
        return None
    if not math.isfinite(number) or number % 1:
        return None
    if number < 1:
        raise ApmtError(f"processes={processes}: a count of processes is 1 or more")
    return int(number)


def import_profiles(fmt: str, paths: list[Path], processes: str | None = None
                    ) -> tuple[pd.DataFrame, str]:
    """Read files of one format and return the validated table and its kind. ``processes``
    (extrap-text and caliper; Cube's profiles know their ranks): the parameter that counts
    the processes, or how many every run used."""
    if fmt not in FORMATS:
        raise ApmtError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if processes is not None and fmt not in NAMED_PROCESSES:
        raise ApmtError(f"processes={processes}: only for {', '.join(NAMED_PROCESSES)}; "
                        f"{fmt} profiles say how many ranks they ran")
    reader, kind = FORMATS[fmt]
    paths = [Path(path) for path in paths]
    check_distinct(paths)
    table = reader(paths) if processes is None else reader(paths, processes)
    if table.empty:
        raise ApmtError(f"{', '.join(str(p) for p in paths)}: no rows in the {fmt} input")
    if kind == "measurements":
        table = drop_empty_series(table)
    return check_table(table, ", ".join(str(p) for p in paths), kind), kind


def check_distinct(paths: list[Path]) -> None:
    """Refuse a file given twice (under any name): its rows would count twice, and weigh
    double in every fit, with nothing in the table to show it."""
    seen: dict[Path, Path] = {}
    for path in paths:
        key = _resolved(path)
        if key in seen:
            also = "" if seen[key] == path else f" (also as {seen[key]})"
            raise ApmtError(f"{path}: given twice{also}; name each input once")
        seen[key] = path


def _resolved(path: Path) -> Path:
    """The path with links and .. resolved, to compare; as given if the system cannot (a
    name with a NUL byte, a link loop): the reader then says what is wrong with it."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path.absolute()


def drop_empty_series(table: pd.DataFrame) -> pd.DataFrame:
    """Drop series that are zero in every observation: the region never ran, nothing to model."""
    values = pd.to_numeric(table["value"], errors="coerce").fillna(1.0)
    nonzero = values.ne(0).groupby([table[k] for k in MEASUREMENT_KEYS]).transform("any")
    for kernel, metric in table.loc[~nonzero, list(MEASUREMENT_KEYS)].drop_duplicates().values:
        log.warning("dropped %r/%r: zero in every run (never executed)", kernel, metric)
    return table[nonzero].reset_index(drop=True)


def input_files(fmt: str, paths: list[Path]) -> list[Path]:
    """The files behind the inputs, to hash: a directory stands for its profile files."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
        elif fmt == "cube":
            from apmt.ingest.cube import find_profiles
            files += find_profiles(path)
        else:
            files += sorted(p for p in path.rglob("*") if p.is_file())
    return files
