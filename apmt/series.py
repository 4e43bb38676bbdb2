"""From a measurements table to series: one mean value per kernel, metric and point.

A point is one combination of ``p`` and the parameters. Ranks are averaged within a run
(a rank that has no row for a kernel never entered it and counts as zero); repetitions are
averaged across runs and counted, since duplicate points are repetitions, not errors.

Parameters are total amounts (a problem size) unless named as per-rank amounts. A total that
is the same in every run enters the fit only as the compute per rank ``size/p``: in P that is
the same fit, and it lets the model predict other sizes at the same work per rank (APMT,
paper 000, 4.2). When P is the same in every run, the first varying parameter takes its place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from pandas.api.typing import DataFrameGroupBy

from apmt.errors import ApmtError
from apmt.fit import PER_RANK_SUFFIX, NoPlausibleFit, SeriesFit, fit_series
from apmt.tables import TIME_METRIC
from apmt.work import evaluate_work

MIN_DISTINCT_P = 3
LOG_COLUMN = "log_value"   # with_logs' column of the runs' logs
EXTRAPOLATION = 8   # figures and the diagnosis go on to this multiple of the largest P


def run_columns(params: list[str]) -> list[str]:
    """Columns that identify a run: P, parameters and repetition."""
    return ["p", *params, "rep"]


def per_run(table: pd.DataFrame, params: list[str], keys: tuple[str, ...] = ("kernel", "metric"),
            value: str = "value") -> pd.DataFrame:
    """One value per series and run: the mean over all ranks of the run."""
    table = table if "rep" in table.columns else table.assign(rep=1)
    runs = run_columns(params)
    if "rank" not in table.columns:
        return table.groupby([*keys, *runs], as_index=False, sort=False)[value].mean()
    ranks = table.groupby(runs, sort=False)["rank"].nunique().rename("ranks")
    summed = table.groupby([*keys, *runs], as_index=False, sort=False)[value].sum()
    summed = summed.join(ranks, on=runs)
    summed[value] = summed[value] / summed.pop("ranks")
    return summed


def points(table: pd.DataFrame, params: list[str], keys: tuple[str, ...] = ("kernel", "metric"),
           value: str = "value") -> pd.DataFrame:
    """One row per series and point: ``value`` (mean over runs), ``reps`` and ``spread``
    (log_spread of the runs)."""
    runs = with_logs(per_run(table, params, keys, value), value)
    grouped = runs.groupby([*keys, "p", *params], as_index=False, sort=False)
    found = grouped[value].agg(**{value: "mean", "reps": "count"})
    found["spread"] = log_spread(grouped)
    return found


def with_logs(runs: pd.DataFrame, value: str) -> pd.DataFrame:
    """The runs with LOG_COLUMN, the log of ``value`` where it is positive (else missing),
    which log_spread reads."""
    return runs.assign(**{LOG_COLUMN: np.log(runs[value].where(runs[value] > 0))})


def log_spread(grouped: DataFrameGroupBy) -> np.ndarray:
    """Per point (a group of runs with_logs, in the groups' order), the standard error of the
    mean of its runs' logs: how uncertain a measured mean is in itself, whatever a model
    makes of it (0 from one run, or where a run is not positive). Timing on shared or
    oversubscribed cores scatters: NPB IS class B's MPI_Bcast took 0.77 and 0.05 ms in the
    two runs at P = 4, whose mean a fit then follows as if it were exact."""
    logs = grouped[LOG_COLUMN].agg(["std", "count"])
    return np.nan_to_num((logs["std"] / np.sqrt(logs["count"])).to_numpy(float))


def fit_plan(rows: pd.DataFrame | Mapping[str, np.ndarray], params: list[str],
             per_rank_params: frozenset[str] = frozenset(),
             work: str | None = None) -> tuple[str, tuple[str, ...]]:
    """The primary variable (the one to extrapolate in) and the variables to try, from a
    series' points (a table, or its columns as arrays). A study's work expression (apmt.work)
    takes the place of every ``size/p`` where it varies."""
    varying = [param for param in params if _distinct(rows, param) > 1]
    totals = [param for param in params if param not in per_rank_params]
    if work is not None:
        return _work_plan(rows, params, varying, work)
    if _distinct(rows, "p") == 1 and varying:
        return varying[0], tuple(varying)
    per_rank = [f"{param}{PER_RANK_SUFFIX}" for param in totals]
    if not varying and per_rank:
        return "p", (per_rank[0],)
    varying_per_rank = [f"{param}{PER_RANK_SUFFIX}" for param in varying if param in totals]
    return "p", ("p", *varying, *varying_per_rank)


def _distinct(rows: pd.DataFrame | Mapping[str, np.ndarray], name: str) -> int:
    return len(np.unique(np.asarray(rows[name])))


def _work_plan(rows: pd.DataFrame | Mapping[str, np.ndarray], params: list[str],
               varying: list[str], work: str) -> tuple[str, tuple[str, ...]]:
    """fit_plan with a work expression: P (or the first varying parameter where P is fixed)
    and the varying parameters, then the work per rank; the work alone where nothing else
    varies, as ``size/p`` is; left out where it is the same at every point."""
    values = evaluate_work(work, {c: np.asarray(rows[c], float) for c in ["p", *params]})
    moves = bool(np.ptp(values) > 0) and work not in ("p", *varying)
    if _distinct(rows, "p") == 1 and varying:
        return varying[0], (*varying, *((work,) if moves else ()))
    if not varying:
        return "p", (work,) if moves else ("p",)
    return "p", ("p", *varying, *((work,) if moves else ()))


class UnfittableSeries(ApmtError):
    """A series the data cannot give a model of; ``reason`` says why, without the source."""

    def __init__(self, source: str, name: str, reason: str) -> None:
        super().__init__(f"{source}: series {name!r} {reason}")
        self.reason = reason


def unfittable_reason(rows: pd.DataFrame, primary: str = "p", value: str = "value",
                      params: Sequence[str] = ()) -> str | None:
    """Why a series' points cannot be fitted, or None: fewer than 3 distinct values of the
    primary variable, or values that are not all positive (the fits weigh relative errors).
    A zero is a measured value (cachegrind counted no miss there), so a series that is zero
    at some points and positive at others is named, not fitted on its positive part."""
    distinct = rows[primary].nunique()
    if distinct < MIN_DISTINCT_P:
        return (f"has {distinct} distinct {primary} ({listed(rows[primary])}); at least "
                f"{MIN_DISTINCT_P} are needed to fit it")
    negative = rows[value] < 0
    if negative.any():
        first = rows[negative].iloc[0]
        return f"is negative at p={first['p']:g} (mean {value} {first[value]!r})"
    zero = rows[value] == 0
    if zero.all():
        return f"is zero at every {primary} ({listed(rows[primary])}): nothing to fit"
    if zero.any():
        names = [primary, *(c for c in dict.fromkeys(["p", *params])
                            if c != primary and rows[c].nunique() > 1)]
        return (f"is zero at {_points(rows[zero], names)} and positive at "
                f"{_points(rows[~zero], names)}: a fit of relative errors needs "
                "positive values throughout")
    return None


def _points(rows: pd.DataFrame, names: list[str], at_most: int = 6) -> str:
    """The points of ``rows`` in words: the values of ``names`` (the primary variable, and
    those of P and the parameters that vary in the series), as tuples where there are
    several (a value of x alone can be both zero and positive, at two values of y)."""
    if len(names) == 1:
        return f"{names[0]} = {listed(rows[names[0]])}"
    points = sorted(set(map(tuple, rows[names].to_numpy(float))))
    tuples = ", ".join("(" + ", ".join(f"{v:g}" for v in point) + ")"
                       for point in points[:at_most])
    more = f" and {len(points) - at_most} more" if len(points) > at_most else ""
    return f"({', '.join(names)}) = {tuples}{more}"


def listed(values: pd.Series) -> str:
    """The distinct values, sorted, as a reader wants them: 1, 2, 4."""
    return ", ".join(f"{v:g}" for v in sorted(values.unique()))


def series_name(key: tuple | str) -> str:
    """A series' (or an operation's) key as users read it: ``kernel/metric``."""
    return key if isinstance(key, str) else "/".join(map(str, key))


def check_series(key: tuple, rows: pd.DataFrame, source: str, primary: str = "p",
                 value: str = "value", params: Sequence[str] = ()) -> None:
    """Raise UnfittableSeries when the series cannot be fitted (see unfittable_reason)."""
    reason = unfittable_reason(rows, primary, value, params)
    if reason is not None:
        raise UnfittableSeries(source, series_name(key), reason)


def fit_points(key: tuple, rows: pd.DataFrame, params: list[str], source: str,
               per_rank_params: frozenset[str] = frozenset(), value: str = "value",
               work: str | None = None) -> SeriesFit:
    """Check and fit one series' points over P and its parameters (and its work per rank,
    where a work expression gives it)."""
    primary, variables = fit_plan(rows, params, per_rank_params, work)
    check_series(key, rows, source, primary, value, params)
    values = {column: rows[column].to_numpy(float) for column in ["p", *params]}
    try:
        return fit_series(values, rows[value].to_numpy(float), variables, primary)
    except NoPlausibleFit as error:
        raise UnfittableSeries(source, series_name(key),
                               f"has no plausible fit ({error})") from None


def point_values(frame: pd.DataFrame, params: list[str]) -> dict[str, np.ndarray]:
    """The columns of requested points as arrays, as SeriesFit.predict wants them."""
    return {column: frame[column].to_numpy(float) for column in ["p", *params]}


def measured_points(measurements: pd.DataFrame, params: list[str], kernel: str,
                    metric: str = TIME_METRIC) -> pd.DataFrame:
    """Per point of one series: the mean over repetitions and their min and max (each
    repetition first averaged over ranks, as the model sees it)."""
    rows = measurements[(measurements["kernel"] == kernel) & (measurements["metric"] == metric)]
    if rows.empty:
        return pd.DataFrame(columns=["p", *params, "mean", "low", "high"])
    runs = per_run(rows, params)
    grouped = runs.groupby(["p", *params], as_index=False)["value"]
    return grouped.agg(mean="mean", low="min", high="max").sort_values("p")


def scale_points(measured_p: Sequence[float]) -> list[float]:
    """The measured P and the doublings after them up to EXTRAPOLATION times the largest."""
    measured = sorted(set(float(p) for p in measured_p))
    extra, p = [], measured[-1] * 2
    while p <= measured[-1] * EXTRAPOLATION:
        extra.append(p)
        p *= 2
    return measured + extra
