"""Extra-P's text input format: PARAMETER, POINTS, METRIC, REGION and DATA lines.

Each DATA line holds the repetitions of one point, in the order of the POINTS; a new REGION or
METRIC starts the points again. Region names are stripped of surrounding blanks (RELeARN
indents them to show nesting, but the file carries no call tree, so they are kept flat and
their values are used as given: nested regions are inclusive of their children).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from apmt.errors import ApmtError
from apmt.inputs import check_file, read_text, shown

TUPLE = re.compile(r"\(([^)]*)\)")


def read_extrap_text(paths: list[Path]) -> pd.DataFrame:
    """Read one or more Extra-P text files into the measurements table."""
    return pd.concat([_read_one(Path(path)) for path in paths], ignore_index=True)


def _read_one(path: Path) -> pd.DataFrame:
    check_file(path)
    state = _State(path)
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        state.take(number, line.rstrip("\r"))
    if not state.rows:
        raise ApmtError(f"{path}: no DATA lines (not an Extra-P text file?)")
    return pd.DataFrame(state.rows)


class _State:
    """What the reader knows so far: parameters, points, the current region and metric."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.parameters: list[str] = []
        self.points: list[tuple[float, ...]] = []
        self.region: str | None = None
        self.metric = "time"
        self.next_point = 0
        self.rows: list[dict] = []

    def take(self, number: int, line: str) -> None:
        keyword, _, rest = line.strip().partition(" ")
        if not keyword or keyword.startswith("#"):
            return
        handler = {"PARAMETER": self._parameter, "POINTS": self._points, "METRIC": self._metric,
                   "REGION": self._region, "DATA": self._data, "EXPERIMENT": lambda *_: None}
        if keyword not in handler:
            raise ApmtError(f"{self.path}: line {number}: unknown keyword {keyword!r}")
        handler[keyword](number, rest.strip())

    def _parameter(self, number: int, rest: str) -> None:
        if self.points:
            raise ApmtError(f"{self.path}: line {number}: PARAMETER {rest!r} after POINTS")
        self.parameters.append("p" if rest.lower() in ("p", "processes", "ranks") else rest)

    def _points(self, number: int, rest: str) -> None:
        groups = TUPLE.findall(rest) if "(" in rest else rest.split()
        width = max(len(self.parameters), 1)
        for group in groups:
            values = self._numbers(number, group.split())
            if len(values) != width:
                raise ApmtError(f"{self.path}: line {number}: point {group!r} has {len(values)}"
                                f" values for {width} parameter(s)")
            self.points.append(values)

    def _metric(self, number: int, rest: str) -> None:
        self.metric, self.next_point = rest, 0

    def _region(self, number: int, rest: str) -> None:
        self.region, self.next_point = rest, 0

    def _data(self, number: int, rest: str) -> None:
        if self.region is None:
            raise ApmtError(f"{self.path}: line {number}: DATA before any REGION")
        if self.next_point >= len(self.points):
            raise ApmtError(f"{self.path}: line {number}: region {self.region!r} has more DATA "
                            f"lines than the {len(self.points)} POINTS")
        names = self.parameters or ["p"]
        if "p" not in names:
            raise ApmtError(f"{self.path}: no parameter 'p' among {', '.join(names)}")
        point = dict(zip(names, self.points[self.next_point], strict=True))
        for rep, value in enumerate(self._numbers(number, rest.split()), start=1):
            self.rows.append({"kernel": self.region, "metric": self.metric, **point,
                              "rep": rep, "value": value})
        self.next_point += 1

    def _numbers(self, number: int, tokens: list[str]) -> tuple[float, ...]:
        values = tuple(_number(token) for token in tokens)
        for token, value in zip(tokens, values, strict=True):
            if value is None or not math.isfinite(value):
                kind = "a number" if value is None else "a finite number"
                raise ApmtError(f"{self.path}: line {number}: {shown(token)} is not {kind}")
        return values


def _number(token: str) -> float | None:
    """A number as Extra-P writes them; NaN, inf or 1e400 come out non-finite (no real file
    holds one), and are refused by the caller."""
    try:
        return float(token)
    except ValueError:
        return None
