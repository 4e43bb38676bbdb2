"""Extra-P's text input format: PARAMETER, POINTS, METRIC, REGION and DATA lines.

Each DATA line holds the repetitions of one point, in the order of the POINTS; a new REGION or
METRIC starts the points again. Region names are stripped of surrounding blanks (RELeARN
indents them to show nesting, but the file carries no call tree, so they are kept flat and
their values are used as given: nested regions are inclusive of their children).

The grammar is Extra-P's own reader's (extrap/fileio/file_reader/text_file_reader.py): any run
of blanks, tabs included, separates fields and counts as one space, so a region name keeps
single spaces only; one PARAMETER line may name several parameters; a point of several
parameters is written in parentheses. The process count must be one of them (p, processes,
ranks or another of PROCESS_NAMES), or be named by the caller (``processes``: the parameter
that counts them, or the one count every run used, for a file that names none, such as a
problem-size study on one node): apmt models how time changes with it.

A file's metric takes apmt's name where ``apmt/data/metric_aliases.yaml`` lists its own
(apmt.ingest.metrics: Extra-P's examples call the time ``runtime`` in some files, ``time`` in
others; a file exported from Score-P names PAPI's counters), so that a kernel's time is known
as time; any other keeps its name as written.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from apmt.errors import ApmtError
from apmt.ingest import process_count
from apmt.ingest.metrics import with_aliases
from apmt.inputs import check_file, read_text, shown

TUPLE = re.compile(r"\(([^)]*)\)")
BLANKS = re.compile(r"\s+")
PROCESS_NAMES = ("p", "processes", "ranks", "procs", "nprocs", "nproc", "np", "nranks",
                 "num_procs", "mpi_ranks")


def read_extrap_text(paths: list[Path], processes: str | None = None) -> pd.DataFrame:
    """Read one or more Extra-P text files into the measurements table. ``processes`` names
    the parameter that counts the processes, or is the whole number of processes of every
    run (a file that names none); by default one of PROCESS_NAMES is."""
    return pd.concat([_read_one(Path(path), processes) for path in paths], ignore_index=True)


def _read_one(path: Path, processes: str | None) -> pd.DataFrame:
    check_file(path)
    state = _State(path, processes)
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        state.take(number, line.rstrip("\r"))
    if not state.rows:
        raise ApmtError(f"{path}: no DATA lines (not an Extra-P text file?)")
    return with_aliases(pd.DataFrame(state.rows), str(path))


class _State:
    """What the reader knows so far: parameters, points, the current region and metric."""

    def __init__(self, path: Path, processes: str | None = None) -> None:
        self.path = path
        self.processes = processes
        self.fixed_p = process_count(processes)
        self.named_processes = False      # whether a parameter is the one ``processes`` names
        self.parameters: list[str] = []
        self.points: list[tuple[float, ...]] = []
        self.region: str | None = None
        self.metric = "time"
        self.next_point = 0
        self.rows: list[dict] = []

    def take(self, number: int, line: str) -> None:
        """Hand one line to its keyword's handler; blank lines and comments carry nothing."""
        keyword, rest = _fields(line)
        if not keyword or keyword.startswith("#"):
            return
        handler = {"PARAMETER": self._parameter, "POINTS": self._points, "METRIC": self._metric,
                   "REGION": self._region, "DATA": self._data, "EXPERIMENT": lambda *_: None}
        if keyword not in handler:
            raise ApmtError(f"{self.path}: line {number}: unknown keyword {keyword!r}")
        handler[keyword](number, rest)

    def _parameter(self, number: int, rest: str) -> None:
        """Add the line's parameters: Extra-P reads every word after PARAMETER as one."""
        if self.points:
            raise ApmtError(f"{self.path}: line {number}: PARAMETER {rest!r} after POINTS")
        if not rest:
            raise ApmtError(f"{self.path}: line {number}: PARAMETER names no parameter")
        for name in (self._parameter_name(word) for word in rest.split(" ")):
            if name in self.parameters:  # two columns of one name: a point would lose a value
                raise ApmtError(f"{self.path}: line {number}: parameter {name!r} named twice")
            self.parameters.append(name)

    def _points(self, number: int, rest: str) -> None:
        """Add the line's points, each as wide as the parameters, so DATA can be matched."""
        width = max(len(self.parameters), 1)
        for group in self._groups(number, rest):
            values = self._numbers(number, group.split())
            if len(values) != width:
                raise ApmtError(f"{self.path}: line {number}: point {group.strip()!r} has "
                                f"{len(values)} values for {width} parameter(s)")
            self.points.append(values)

    def _groups(self, number: int, rest: str) -> list[str]:
        """The points of a POINTS line: in parentheses, or one number each without them;
        text between parentheses would otherwise be dropped unseen."""
        if "(" not in rest:
            return rest.split()
        stray = TUPLE.sub(" ", rest).strip()
        if stray:
            raise ApmtError(f"{self.path}: line {number}: {shown(stray)} outside the "
                            "parentheses of the points")
        return TUPLE.findall(rest)

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
        names = self._names()
        point = dict(zip(names, self.points[self.next_point], strict=True))
        if self.fixed_p is not None:
            point = {"p": self.fixed_p, **point}
        for rep, value in enumerate(self._numbers(number, rest.split()), start=1):
            self.rows.append({"kernel": self.region, "metric": self.metric, **point,
                              "rep": rep, "value": value})
        self.next_point += 1

    def _parameter_name(self, name: str) -> str:
        """The column of a parameter: the process count is always p, whatever the file (or
        the caller, ``processes``) calls it."""
        if self.processes is not None:
            counts = name.lower() == self.processes.lower()
            self.named_processes |= counts
            return "p" if counts else name
        return "p" if name.lower() in PROCESS_NAMES else name

    def _names(self) -> list[str]:
        """The columns of a point; without the process count there is nothing for apmt to
        model, and the user has to name it (Extra-P itself accepts any names)."""
        names = self.parameters or ([] if self.fixed_p is not None else ["p"])
        if self.fixed_p is not None and "p" in names:
            raise ApmtError(f"{self.path}: the file names its process count ('p' among "
                            f"{', '.join(self.parameters)}): processes={self.processes} is for "
                            "a file that names none")
        found = "p" in names and (self.processes is None or self.named_processes)
        if self.fixed_p is None and not found:
            missing = f"processes={self.processes!r} is not" if self.processes is not None \
                else "no parameter 'p' is"
            raise ApmtError(f"{self.path}: {missing} among {', '.join(names)}: name the process "
                            "count p (or processes, ranks) on the PARAMETER line, or say "
                            "which parameter counts them, or how many every run used "
                            "(apmt import --processes)")
        return names

    def _numbers(self, number: int, tokens: list[str]) -> tuple[float, ...]:
        values = tuple(_number(token) for token in tokens)
        for token, value in zip(tokens, values, strict=True):
            if value is None or not math.isfinite(value):
                kind = "a number" if value is None else "a finite number"
                raise ApmtError(f"{self.path}: line {number}: {shown(token)} is not {kind}")
        return values


def _fields(line: str) -> tuple[str, str]:
    """A line's keyword and the rest, every run of blanks (tabs too) one space, as Extra-P
    reads it: its own test files separate fields by tabs."""
    keyword, _, rest = BLANKS.sub(" ", line).strip().partition(" ")
    return keyword, rest


def _number(token: str) -> float | None:
    """A number as Extra-P writes them; NaN, inf or 1e400 come out non-finite (no real file
    holds one), and are refused by the caller."""
    try:
        return float(token)
    except ValueError:
        return None
