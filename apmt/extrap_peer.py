"""Extra-P as a peer modeler: fit every series with Extra-P's default modeler for comparison.

Extra-P pins numpy<2 and an older pandas, so it lives in its own virtualenv. We hand it the data
in its own text input format and run a short script under its interpreter, which reads the files
with Extra-P's text reader, models every series with the modeler Extra-P picks by default (as its
command line does), evaluates the models at the requested points and writes JSON back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.errors import ApmtError
from apmt.extrap_runner import MISSING_EXIT_CODE

EXTRAP_PYTHON_ENV = "APMT_EXTRAP_PYTHON"
EXTRAP_PYTHON_LINK = "extrap-python"
NOT_INSTALLED = "Extra-P is not installed (pip install extrap in its own environment; see README)"
# Extra-P asks for 5 values per parameter but still models fewer (with a warning); below 3 its
# leave-one-out fit of a constant plus one term is underdetermined, so we do not ask it.
MIN_DISTINCT_VALUES = 3
MAX_AXES = 4  # Extra-P's text format takes at most four parameters
SERIES_PER_FILE = 100  # small enough to spread over Extra-P worker processes, large to read fast
# Extra-P's side, run under its interpreter (a copy beside the job's files)
RUNNER = Path(__file__).with_name("extrap_runner.py")



@dataclass
class Series:
    """One (kernel, metric) series: its distinct coordinates and the repetitions at each."""

    kernel: str
    metric: str
    coordinates: tuple[tuple[float, ...], ...]
    values: list[list[float]]


def find_extrap_python() -> str | None:
    """The interpreter with ``extrap`` importable: the env var, else the install script's link."""
    configured = os.environ.get(EXTRAP_PYTHON_ENV)
    if configured:
        return configured
    link = Path(sys.executable).parent / EXTRAP_PYTHON_LINK
    return str(link) if link.exists() else None


def extrap_predict(train: pd.DataFrame, targets: pd.DataFrame,
                   params: list[str]) -> pd.DataFrame:
    """Model every (kernel, metric) series of ``train`` with Extra-P and predict at ``targets``.

    Returns kernel, metric, p, <params>, predicted, model; series Extra-P cannot model get NaN
    and a model string saying why. Raises ApmtError when Extra-P itself is unusable.
    """
    python = find_extrap_python()
    if python is None:
        raise ApmtError(NOT_INSTALLED)
    axes = ["p", *params]
    _check_columns(train, targets, axes)
    points = targets[axes].to_numpy(dtype=float)
    series = _collect_series(train, axes)
    reasons = [_why_not_modelable(s, axes) for s in series]
    modelable = [s for s, reason in zip(series, reasons, strict=True) if reason is None]
    if not len(points):
        return _assemble(series, [np.empty(0)] * len(series), list(reasons), targets, axes)
    results = _run_extrap(python, modelable, points, axes) if modelable else {}
    predicted, models = [], []
    for one, reason in zip(series, reasons, strict=True):
        values, model = results.get((one.kernel, one.metric), (None, reason))
        predicted.append(np.full(len(points), np.nan) if values is None else values)
        models.append(model)
    return _assemble(series, predicted, models, targets, axes)


def _check_columns(train: pd.DataFrame, targets: pd.DataFrame, axes: list[str]) -> None:
    """Fail early with a one-line message instead of a KeyError deep inside."""
    if len(axes) > MAX_AXES:
        raise ApmtError(f"Extra-P takes at most {MAX_AXES} parameters (p and "
                        f"{MAX_AXES - 1} more); got {', '.join(axes)}")
    if len(set(axes)) != len(axes):
        raise ApmtError(f"parameters repeated: {', '.join(axes)}")
    for name, table, needed in (("train", train, ["kernel", "metric", *axes, "value"]),
                                ("targets", targets, axes)):
        missing = [c for c in needed if c not in table.columns]
        if missing:
            raise ApmtError(f"Extra-P peer: the {name} table has no column {missing[0]!r}")


def _collect_series(train: pd.DataFrame, axes: list[str]) -> list[Series]:
    """Gather the repetitions of each series by coordinate; Extra-P averages them itself."""
    rows = train.dropna(subset=["value"])
    keys = ["kernel", "metric", *axes]
    grouped = rows.groupby(keys, sort=True)["value"].agg(list)
    series: list[Series] = []
    current: tuple[str, str] | None = None
    for key, values in grouped.items():
        if key[:2] != current:
            current = key[:2]
            series.append(Series(str(key[0]), str(key[1]), (), []))
        series[-1].coordinates += (tuple(float(x) for x in key[2:]),)
        series[-1].values.append([float(v) for v in values])
    return series


def _why_not_modelable(series: Series, axes: list[str]) -> str | None:
    """Why Extra-P cannot give a meaningful model: p or another parameter has too few values."""
    for index, axis in enumerate(axes):
        count = len({c[index] for c in series.coordinates})
        if count < MIN_DISTINCT_VALUES and (axis == "p" or count > 1):
            return (f"no Extra-P model: {count} value(s) of {axis}, Extra-P needs at least "
                    f"{MIN_DISTINCT_VALUES}")
    return None


def _run_extrap(python: str, series: list[Series], points: np.ndarray,
                axes: list[str]) -> dict[tuple[str, str], tuple[np.ndarray | None, str]]:
    """Write the series to text files, run Extra-P once over all of them, map results back.

    Series sharing a set of coordinates share a file (the format has one list of points per
    file); files are cut at SERIES_PER_FILE so Extra-P can read and model them in parallel.
    """
    groups: dict[tuple, list[Series]] = {}
    for one in series:
        groups.setdefault(one.coordinates, []).append(one)
    chunks = [members[start:start + SERIES_PER_FILE] for members in groups.values()
              for start in range(0, len(members), SERIES_PER_FILE)]
    with tempfile.TemporaryDirectory(prefix="apmt-extrap-") as directory:
        folder = Path(directory)
        files = [folder / f"series{i}.txt" for i in range(len(chunks))]
        names = [_write_text_file(path, chunk, axes)
                 for path, chunk in zip(files, chunks, strict=True)]
        job = folder / "job.json"
        job.write_text(json.dumps({"files": [str(path) for path in files],
                                   "targets": points.T.tolist(),
                                   "output": str(folder / "result.json")}))
        runner = folder / "runner.py"
        shutil.copyfile(RUNNER, runner)
        _call(python, runner, job, folder)
        results = json.loads((folder / "result.json").read_text())
    out: dict[tuple[str, str], tuple[np.ndarray | None, str]] = {}
    for file_names, file_result in zip(names, results, strict=True):
        for encoded, one in file_names.items():
            out[(one.kernel, one.metric)] = _read_result(file_result, encoded)
    return out


def _write_text_file(path: Path, members: list[Series], axes: list[str]) -> dict[str, Series]:
    """Write series sharing one set of coordinates, named k<i> (REGION) and m<j> (METRIC).

    Extra-P's text reader collapses whitespace and splits call paths at '->', so real kernel and
    metric names never go into the file.
    """
    kernels = {k: i for i, k in enumerate(dict.fromkeys(s.kernel for s in members))}
    metrics = {m: i for i, m in enumerate(dict.fromkeys(s.metric for s in members))}
    lines = [f"PARAMETER {' '.join(_parameter_names(axes))}", ""]
    lines += [_points_line(c) for c in members[0].coordinates]
    names: dict[str, Series] = {}
    last_region = None
    for one in sorted(members, key=lambda s: (kernels[s.kernel], metrics[s.metric])):
        region, metric = f"k{kernels[one.kernel]}", f"m{metrics[one.metric]}"
        if region != last_region:
            lines += ["", f"REGION {region}"]
            last_region = region
        lines.append(f"METRIC {metric}")
        lines += ["DATA " + " ".join(repr(v) for v in values) for values in one.values]
        names[f"{region}|{metric}"] = one
    path.write_text("\n".join(lines) + "\n")
    return names


def _parameter_names(axes: list[str]) -> list[str]:
    """Real names in Extra-P's model strings if its reader keeps them intact, else x0, x1, ..."""
    safe = all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", a) for a in axes)
    return list(axes) if safe else [f"x{i}" for i in range(len(axes))]


def _points_line(coordinate: tuple[float, ...]) -> str:
    """One POINTS line; the parenthesised form is what the reader expects for several axes."""
    numbers = " ".join(repr(x) for x in coordinate)
    return f"POINTS {numbers}" if len(coordinate) == 1 else f"POINTS ( {numbers} )"


def _read_result(file_result: dict, encoded: str) -> tuple[np.ndarray | None, str]:
    """Predictions and model string of one series, or None and the reason it has none."""
    if "__error__" in file_result:
        return None, f"no Extra-P model: {file_result['__error__']}"
    entry = file_result.get(encoded)
    if entry is None:
        return None, "no Extra-P model: Extra-P returned no model for this series"
    if "error" in entry:
        return None, f"no Extra-P model: {entry['error']}"
    return np.asarray(entry["predicted"], dtype=float), entry["model"]


def _call(python: str, runner: Path, job: Path, folder: Path) -> None:
    """Run the runner; -E keeps apmt's PYTHONPATH (numpy 2) out of Extra-P's interpreter."""
    try:
        done = subprocess.run([python, "-E", str(runner), str(job)], cwd=folder,
                              capture_output=True, text=True, check=False)
    except OSError:
        raise ApmtError(NOT_INSTALLED) from None
    if done.returncode == MISSING_EXIT_CODE:
        raise ApmtError(NOT_INSTALLED)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise ApmtError(f"Extra-P failed: {lines[-1] if lines else f'exit code {done.returncode}'}")


def _assemble(series: list[Series], predicted: list[np.ndarray], models: list[str],
              targets: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Cross every series with every target point, without building thousands of small frames."""
    count = len(targets)
    out = pd.DataFrame({
        "kernel": _repeat([s.kernel for s in series], count),
        "metric": _repeat([s.metric for s in series], count),
    })
    for axis in axes:
        out[axis] = np.tile(targets[axis].to_numpy(), len(series))
    out["predicted"] = np.concatenate(predicted) if series else np.array([], dtype=float)
    out["model"] = _repeat(models, count)
    return out


def _repeat(texts: list[str], count: int) -> pd.Series:
    """Repeat each string; an object array keeps names exactly (numpy's str type would not)."""
    return pd.Series(np.repeat(np.array(texts, dtype=object), count))
