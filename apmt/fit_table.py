"""Fit every series of a table together: where its regime starts, and how far to trust it.

A table's series come from the same runs, so the table knows things that no single series
does, and apmt asks it three questions by backtesting (predicting each series' largest
measured value of the primary variable from its smaller ones, as the user's question one
step back):

- **Where the regime starts.** Runs at the smallest P often behave differently from the
  rest: a single rank does not communicate, ranks beyond a node's (or a VM's) cores share
  them. Fitting across the change bends every shape, and the bend is what the model then
  extrapolates. When the backtests err clearly less (median error below ``REGIME_GAIN``
  times) with the smallest values left out, pooled over the table's series, the fits start
  at the value that does best, and the model says so. The backtests fit as the model does
  (apmt.fit.fit_series): a smooth bend that a shape of the family follows is no regime.
- **How wide the intervals are beyond the data.** The backtests' errors, each relative to
  its series' own cross-validated error plus the table's typical backtest error, calibrate a
  multiplier by the split-conformal rule (the ceil((n + 1) * 0.9)-th smallest of n; from
  fewer than 9, which that rank exceeds, Student's t bound of one more); a series' interval
  at one step beyond its data is that multiplier times its own error scale, and it widens
  with the log distance (apmt.fit.SeriesFit.beyond).
- **Which forecast to carry beyond the data.** Where a series' latest trend (the power law
  through its two largest values) predicted its largest value clearly better than its
  function did, that trend is its forecast beyond the data (``latest_trends``); a kernel's
  time with an instruction count is forecast through the count (``counted_times``).

Fits run in parallel processes when there are many series.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats

from apmt import varpro
from apmt.fit import (
    CAPPED_LOG_ERROR,
    INTERVAL_LEVEL,
    MAX_LOG_EXPONENT,
    MISFIT_NOTED,
    SHAPE_LEVELS,
    Hypothesis,
    SeriesFit,
    fit_many,
    linear_law,
    power_law,
    t_quantile,
)
from apmt.series import (
    MIN_DISTINCT_P,
    UnfittableSeries,
    check_series,
    fit_plan,
    series_name,
)
from apmt.tables import APP_KERNEL, TIME_METRIC

CHUNK = 64          # series fitted at once: large enough that numpy's per-call cost fades
PARALLEL_FROM = 256  # below this many fits, one process is faster
LATEST_GAIN = 0.5    # the latest trend's backtest must err at most half the function's
LATEST_LEVELS = SHAPE_LEVELS + 1   # the function's backtest must have had a shape chosen
REGIME_GAIN = 0.7    # a later start must cut the median backtest error by 30% to be taken
BACKTESTS = 256      # series backtested per table at most (evenly spread over its keys)
MIN_REGIME_SERIES = 3  # a regime is a table's property: not judged from fewer series
REGIME_FLOOR = 0.005   # median backtest errors below half a percent leave nothing to gain
REGIME_CHANCE = 0.05   # the sign test's p-value a later start must stay below
NAMED = 5              # the worst series that a note names
COUNT_METRIC = "instructions"   # the count a kernel's time is forecast through
COUNTED_BY = ("its instruction count (the count's forecast times the time per instruction "
              "at the largest measured P")


@dataclass(frozen=True)
class SeriesData:
    """What one series' fit needs: its points (``p`` and parameters), their mean values, the
    variables to try (the primary first), the primary one (folds and backtests run over its
    values), and the shapes theory prefers (Hockney's, for communication)."""

    values: dict[str, np.ndarray]
    y: np.ndarray
    variables: tuple[str, ...]
    primary: str = "p"
    preferred: Callable[[Hypothesis], bool] | None = None
    strata_by: tuple[str, ...] = ()   # the parameters whose measured values are fitted apart
    alone: tuple[str, ...] = ()       # the variables of a table at one value of them
    # the fit only summarises the series (its strata predict it everywhere): the power law
    summary: bool = False
    spread: np.ndarray | None = None   # per point, apmt.series.log_spread (None: not known)

    @property
    def levels(self) -> np.ndarray:
        return np.unique(self.values[self.primary])

    def where(self, keep: np.ndarray) -> SeriesData:
        return replace(self, values={k: v[keep] for k, v in self.values.items()},
                       y=self.y[keep], spread=None if self.spread is None else self.spread[keep])

    @property
    def scatter(self) -> float:
        """The root mean square of its points' spreads: the log standard error of a mean
        measured at any point (apmt.fit.SeriesFit.scatter)."""
        if self.spread is None or not len(self.spread):
            return 0.0
        return float(np.sqrt(np.mean(np.square(np.nan_to_num(self.spread)))))

    def from_level(self, start: float) -> SeriesData:
        return self.where(self.values[self.primary] >= start)


@dataclass
class TableFit:
    """The fits of a table's series, those left out with why, what the table decided (its
    regime and the intervals' calibration, for the model's notes and provenance)."""

    fits: dict[tuple, SeriesFit]
    left_out: dict[tuple, str]
    regime: dict = field(default_factory=dict)
    calibration: dict = field(default_factory=dict)

    @property
    def notes(self) -> list[str]:
        notes = [self.regime["note"]] if self.regime.get("note") else []
        anchored = self.calibration.get("anchored", 0)
        if anchored:
            notes.append(f"{anchored} of {len(self.fits)} series were fitted from "
                         f"{SHAPE_LEVELS} values of P, and their backtests from "
                         f"{SHAPE_LEVELS - 1} could check only the classic laws (power law, "
                         "c + a/P): beyond the data their intervals hold those laws' forecast "
                         "as well")
        latest = self.calibration.get("latest", 0)
        if latest:
            notes.append(_forecast_note(
                latest, "series", "value", "by {their} latest trend (the power law through "
                "{their} two largest values), which predicted that value from the smaller "
                f"ones at most {LATEST_GAIN:g} times as far off as {{their}} function did",
                "the function's forecast"))
        counted = self.calibration.get("counted", 0)
        if counted:
            notes.append(_forecast_note(
                counted, "kernel time" + ("s" if counted > 1 else ""), "P",
                "through {their} kernel's instruction count: the count's forecast times the "
                "time per instruction at that P", "the time's own forecast"))
        if self.calibration.get("multiplier_rule") == "student-t":
            notes.append(f"the intervals beyond the data were calibrated on "
                         f"{self.calibration['backtests']} backtests, fewer than a 90% "
                         "quantile needs (9): their multiplier is Student's t bound of one "
                         "more, or their largest ratio if that is larger")
        stratified = self.calibration.get("stratified", 0)
        if stratified:
            notes.append(f"{stratified} of {len(self.fits)} series were measured at several "
                         f"values of {', '.join(self.calibration['stratified_by'])} with enough "
                         "P at each: there they are predicted from each value's own fit (its "
                         "intervals calibrated on its own backtests); between and beyond them, "
                         "at each P, by the power law in them through the two nearest values' "
                         "fits (over several parameters: the function of them all that the "
                         "model shows, times those fits' ratios to it, interpolated)")
        return notes + self._scatter_notes() + self._misfit_notes()

    def _scatter_notes(self) -> list[str]:
        """The series measured in runs that scatter, whose intervals hold that scatter too
        (apmt.fit.SeriesFit.scatter), the most scattered named."""
        scattered = sorted(((fit.scatter, key) for key, fit in self.fits.items()
                            if fit.scatter > 0), key=lambda item: -item[0])
        if not scattered:
            return []
        typical = float(np.median([scatter for scatter, _ in scattered]))
        named = "; ".join(f"{series_name(key)} ({math.exp(scatter):.3g}x)"
                          for scatter, key in scattered[:NAMED])
        return [f"{len(scattered)} of {len(self.fits)} series were measured in runs that "
                f"scatter: a measured mean is uncertain by a factor of {math.exp(typical):.3g} "
                f"(its standard error, median), and their intervals hold that besides the "
                f"function's error; the most: {named}"]

    def _misfit_notes(self) -> list[str]:
        """The series whose function misses one of its own measured values by more than
        MISFIT_NOTED: a change of regime that no shape follows, or scatter; the worst named,
        with where (near there the prediction is not the measurement)."""
        missed = sorted(((fit.misfit, key, fit.misfit_at) for key, fit in self.fits.items()
                         if fit.misfit > MISFIT_NOTED), key=lambda item: -item[0])
        if not missed:
            return []
        named = "; ".join(
            series_name(key)
            + (" at " + ", ".join(f"{v} = {x:g}" for v, x in at.items()) if at else "")
            + f" ({factor:.3g}x)" for factor, key, at in missed[:NAMED])
        more = f"; and {len(missed) - NAMED} more" if len(missed) > NAMED else ""
        verb = "misses one of its" if len(missed) == 1 else "miss one of their"
        return [f"{len(missed)} of {len(self.fits)} series {verb} own measured "
                f"values by more than a factor of {MISFIT_NOTED:g} (a change of regime that "
                f"no shape follows, or scattered values): {named}{more}"]


def _forecast_note(count: int, subject: str, largest: str, how: str, held: str) -> str:
    """A note of ``count`` series forecast beyond the data otherwise than by their function
    (``how``, with {their} where its pronoun goes), whose intervals hold ``held`` as well."""
    are, their = ("is", "its") if count == 1 else ("are", "their")
    return (f"{count} {subject} {are} forecast beyond {their} largest measured {largest} "
            f"{how.format(their=their)}; {their} intervals hold {held} as well")


def series_data(points: pd.DataFrame, params: list[str], source: str,
                per_rank_params: frozenset[str] = frozenset(),
                keys: tuple[str, ...] = ("kernel", "metric"), value: str = "value",
                work: str | None = None
                ) -> tuple[dict[tuple, SeriesData], dict[tuple, str]]:
    """The series of a points table (apmt.series.points) as fits want them, and those that
    cannot be fitted with why (too few P, zeros among positive values); ``work``: the
    work per rank as an expression (apmt.work), in place of ``size/p``."""
    data, left_out = {}, {}
    for key, rows in points.groupby(list(keys), sort=True):
        key = tuple(np.atleast_1d(key))
        columns = {c: rows[c].to_numpy(float) for c in ["p", *params]}
        primary, variables = fit_plan(columns, params, per_rank_params, work)
        strata_by = tuple(c for c in ["p", *params]
                          if c != primary and np.ptp(columns[c]) > 0)
        one_value = {**columns, **{c: np.full(len(rows), columns[c][0]) for c in strata_by}}
        spread = rows["spread"].to_numpy(float) if "spread" in rows else None
        series = SeriesData(columns, rows[value].to_numpy(float), variables, primary,
                            strata_by=strata_by, spread=spread,
                            alone=fit_plan(one_value, params, per_rank_params, work)[1])
        if len(series.levels) < MIN_DISTINCT_P or not np.all(series.y > 0):
            try:      # the reason in words (apmt.series), for what the quick test doubts
                check_series(key, rows, source, primary, value, params)
            except UnfittableSeries as error:
                left_out[key] = error.reason
                continue
        data[key] = series
    return data, left_out


def fit_all(points: pd.DataFrame, params: list[str], source: str,
            per_rank_params: frozenset[str] = frozenset(), jobs: int | None = None,
            keys: tuple[str, ...] = ("kernel", "metric"), work: str | None = None) -> TableFit:
    """Fits of every series of a points table, keyed by ``keys`` (see fit_table)."""
    data, left_out = series_data(points, params, source, per_rank_params, keys, work=work)
    table = fit_table(data, jobs)
    table.left_out = {**left_out, **table.left_out}
    return table


def fit_table(data: dict[tuple, SeriesData], jobs: int | None = None) -> TableFit:
    """Fit the series of one table: from the start of its regime, with intervals calibrated
    on its backtests. A series no shape follows is left out with why; real profiles have
    them, and one must not stop the rest. A series measured at several values of its other
    parameters is also fitted at each of them alone (``strata``); the backtests and the
    calibration then judge those fits, which make its predictions there."""
    regime = regime_start(data)
    cut = {key: _from_start(series, regime.get("start")) for key, series in data.items()}
    found = {key: strata(series) for key, series in cut.items()}
    cut = {key: replace(series, summary=_predicted_by_strata(series, found[key]))
           for key, series in cut.items()}
    parts = {Stratum(key, at): part for key, pairs in found.items() for at, part in pairs}
    units = {**{key: cut[key] for key in cut if not found[key]}, **parts}
    sampled = _sample(sorted(key for key in units if key not in parts)
                      + sorted(parts, key=lambda part: (part.key, part.at)))
    # the latest trend is judged on every series that may take one, not on a sample
    backtested = sampled + sorted((key for key in set(units) - set(sampled)
                                   if _trend_judged(units[key])), key=str)
    work = list(cut.items()) + list(parts.items()) + [
        (("backtest", key), _before_last(units[key])) for key in backtested
        if len(units[key].levels) > 3]
    outcomes = dict(_fit_many(work, jobs))
    # a summary the power law cannot give (no fold within a factor of 20: NPB BT's
    # copy_faces_, which misses no cache line at P = 1) is searched for
    unsummarised = [(key, replace(cut[key], summary=False)) for key in cut
                    if cut[key].summary and isinstance(outcomes[key], str)]
    outcomes.update(_fit_many(unsummarised, jobs))
    cut.update(unsummarised)
    fits = {key: outcomes[key] for key in cut if isinstance(outcomes[key], SeriesFit)}
    left_out = {key: outcomes[key] for key in cut if isinstance(outcomes[key], str)}
    unit_fits = {key: outcomes[key] for key in units if isinstance(outcomes[key], SeriesFit)}
    fitted_series = {**cut, **units}
    for key, fit in (*fits.items(), *unit_fits.items()):
        fit.scatter = fitted_series[key].scatter
    errors = {key: _backtest_error(units[key], outcomes.get(("backtest", key)),
                                   classic_forecast)
              for key in backtested if key in unit_fits}
    calibration = calibrate({**fits, **unit_fits},
                            {key: errors[key] for key in sampled
                             if key in errors and np.isfinite(errors[key])},
                            fitted_series)
    latest_trends(units, unit_fits, errors)
    counted = counted_times(units, unit_fits)   # after them: a count's trend carries its time
    if counted:
        calibration["counted"] = counted
    trends = sum(bool(fit.latest) and not fit.ahead_by for fit in unit_fits.values())
    if trends:
        calibration["latest"] = trends
    for part, fit in unit_fits.items():
        if isinstance(part, Stratum):
            fit.observed = _observed(data[part.key], part.at)
    for key, fit in fits.items():
        fit.strata = [(dict(at), unit_fits[Stratum(key, at)]) for at, _ in found[key]
                      if Stratum(key, at) in unit_fits]
        if _predicted_by_strata(cut[key], fit.strata):
            _misfit_of_strata(fit)
    anchored = sum(bool(fit.anchors) for fit in fits.values())
    if anchored:
        calibration["anchored"] = anchored
    stratified = [fit for fit in fits.values() if fit.strata]
    if stratified:
        calibration["stratified"] = len(stratified)
        calibration["stratified_by"] = sorted({name for fit in stratified
                                               for at, _ in fit.strata for name in at})
    return TableFit(fits, left_out, regime, calibration)


@dataclass(frozen=True)
class Stratum:
    """One series at one measured value of its other parameters (``at``: name, value pairs)."""

    key: tuple
    at: tuple[tuple[str, float], ...]


def strata(series: SeriesData) -> list[tuple[tuple[tuple[str, float], ...], SeriesData]]:
    """The series at each measured value of its other parameters (``strata_by``) that has
    enough values of the primary variable to be fitted alone, with the variables a table of
    that value alone would have (``alone``, apmt.series.fit_plan's: the work per rank, or P).

    Why: a function of P and the problem size must follow both at once, and where the size
    acts in a way no shape of the family follows (NPB CG's classes change the nonzeros per
    row with the rows), it bends the P dependence too. Fitted jointly, NPB CG S, W and A
    predicted P = 16 from P <= 8 with 10% median error, each class alone with 3.9%; RELeARN
    (5 sizes) 14.9% and 6.8%. Between and beyond the measured values the strata predict
    too, through a power law in the size at each P (apmt.fit.SeriesFit.predict): class A
    from S and W erred by 19.2% (CG) and 12.8% (MG), where the joint function times the
    nearest class's ratio to it erred by 22.3% and 12.6% (and its intervals held 65% on CG,
    now 79%); through the classes' measured values at each P, 14.5% and 11.1%."""
    if not series.strata_by:
        return []
    columns = np.column_stack([series.values[name] for name in series.strata_by])
    found = []
    for row in np.unique(columns, axis=0):
        part = series.where(np.all(columns == row, axis=1))
        if len(part.levels) >= MIN_DISTINCT_P:
            at = tuple(zip(series.strata_by, map(float, row), strict=True))
            found.append((at, replace(part, variables=series.alone, strata_by=(), alone=())))
    return found


def _observed(series: SeriesData, at: tuple[tuple[str, float], ...]) -> dict[str, list[float]]:
    """The series' measured points at one value of its other parameters, also those before
    the regime's start (apmt.fit.SeriesFit.through_observed: a measured value at a P is what
    the size did there, whatever the trend in P)."""
    rows = np.logical_and.reduce([series.values[name] == value for name, value in at])
    return {**{name: values[rows].tolist() for name, values in series.values.items()},
            "value": series.y[rows].tolist()}


def _predicted_by_strata(series: SeriesData, found: list) -> bool:
    """Whether the strata predict the series everywhere (at least two of them, along one
    parameter: apmt.fit.SeriesFit.predict), so that its function of P and that parameter
    only summarises it for the reader. It is then the power law in both (c + a/P would leave
    the parameter out): the search of shapes over two variables took three quarters of the
    fitting time of NPB CG S+W+A, and nothing it chose was used."""
    return len(series.strata_by) == 1 and len(found) >= 2


def _misfit_of_strata(fit: SeriesFit) -> None:
    """A series its strata predict misses its measured values as they do."""
    worst = max((stratum for stratum in fit.strata), key=lambda stratum: stratum[1].misfit,
                default=None)
    if worst is not None:
        at, stratum = worst
        fit.misfit, fit.misfit_at = stratum.misfit, {**at, **stratum.misfit_at}


def _from_start(series: SeriesData, start: float | None) -> SeriesData:
    """The series from the regime's start, when enough of it lies there to choose a shape."""
    if start is None or np.sum(series.levels >= start) < 4:
        return series
    return series.from_level(start)


def _before_last(series: SeriesData) -> SeriesData:
    """The series without its largest value of the primary variable: a backtest's fit."""
    return series.where(series.values[series.primary] < series.levels[-1])


def _sample(keys: list[tuple]) -> list[tuple]:
    """At most BACKTESTS keys, evenly spread: a quantile needs a few hundred, not all."""
    if len(keys) <= BACKTESTS:
        return keys
    return [keys[i] for i in np.linspace(0, len(keys) - 1, BACKTESTS).round().astype(int)]


# ----------------------------------------------------------------------------------- backtests

def regime_start(data: dict[tuple, SeriesData]) -> dict:
    """Where the table's regime starts: the smallest value of the primary variable from which
    the detector's backtests err least, pooled over the series (the median of their errors
    against the same series backtested from their first value), when that is clearly less
    (REGIME_GAIN), not already negligible (REGIME_FLOOR), and not chance: more series must err
    less than a coin would make them (a one-sided sign test below REGIME_CHANCE). A start is
    judged on the series with 4 values from it (3 to fit, the last to predict).

    The detector is the simplest shape that bends, d + a*x^c with c estimated (a power law in
    the other parameters where a series has them): it follows a smooth curve (5 + 100/P)
    from any start alike, but not a kink. The family's flexible shapes would absorb a kink
    inside the measured range and carry it beyond (LAMMPS on two cores: backtested from P = 1
    or from P = 3, its functions err alike one step ahead, 0.56% and 0.54%, but at P = 16 and
    32 the fits from P = 1 err 2.6 times more). Scores per start: the medians from the first
    value and from the start, and the test's p-value."""
    levels = np.unique(np.concatenate([s.levels for s in data.values()])) if data else []
    scores = {}
    first = _bend_backtests(list(data.values()))
    for start in levels[1:]:
        judged = [i for i, s in enumerate(data.values()) if np.sum(s.levels >= start) >= 4]
        later = _bend_backtests([list(data.values())[i].from_level(start) for i in judged])
        pairs = np.column_stack([first[judged], later]) if judged else np.empty((0, 2))
        pairs = pairs[np.isfinite(pairs).all(axis=1)]
        if len(pairs) < MIN_REGIME_SERIES:
            break
        better = int(np.sum(pairs[:, 1] < pairs[:, 0]))
        worse = int(np.sum(pairs[:, 1] > pairs[:, 0]))
        chance = stats.binomtest(better, better + worse, alternative="greater").pvalue \
            if better + worse else 1.0
        scores[float(start)] = (*np.median(pairs, axis=0).tolist(), float(chance))
    scores = {start: score for start, score in scores.items() if score[0] > 0}
    if not scores:
        return {}
    best = min(scores, key=lambda s: scores[s][1] / scores[s][0])
    first, later, chance = scores[best]
    result = {"scores": {f"{s:g}": list(v) for s, v in scores.items()}}
    if later >= REGIME_GAIN * first or first < REGIME_FLOOR or chance >= REGIME_CHANCE:
        return result
    primary = next(iter(data.values())).primary
    note = (f"the runs at {primary} < {best:g} follow another regime: d + a*{primary}^c "
            f"through each series' smaller values predicts its largest {primary} with a median "
            f"error of {later:.2%} from {primary} >= {best:g} and {first:.2%} from all "
            f"{primary}; the fits start at {primary} = {best:g} where a series has 4 values "
            "from there")
    return {**result, "start": best, "note": note}


def _bend_backtests(series: list[SeriesData]) -> np.ndarray:
    """The regime detector's backtest error of each series (as _backtest_error): d + a*x^c in
    the primary variable x, c from apmt.varpro's grid, estimated at once for the series
    measured at the same points; the power law where a series has other varying parameters,
    too few values, or no exponent fits."""
    errors = np.full(len(series), np.nan)
    groups: dict[tuple, list[int]] = {}
    for index, one in enumerate(series):
        signature = (one.primary, one.variables,
                     *((name, v.tobytes()) for name, v in one.values.items()))
        groups.setdefault(signature, []).append(index)
    for members in groups.values():
        errors[members] = _bend_group([series[i] for i in members])
    return errors


def _bend_group(group: list[SeriesData]) -> np.ndarray:
    """_bend_backtests of series measured at the same points."""
    first = group[0]
    x = first.values[first.primary]
    others = [v for name, v in first.values.items() if name != first.primary]
    train = np.flatnonzero(x < first.levels[-1])
    y = np.array([one.y for one in group])
    if any(np.ptp(v) > 0 for v in others) or len(train) < 3:
        return _power_law_backtests(first, y)

    def columns(exponents: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return (x[rows][None, :] ** exponents[:, :1])[..., None]

    exponents = varpro.grid_estimates((varpro.EXPONENTS,), columns, y, train)[:, 0]
    design = np.stack([np.ones((len(group), len(x))), x[None, :] ** exponents[:, None]], axis=2)
    last = x == first.levels[-1]
    with np.errstate(all="ignore"):
        weighted = design[:, train] / y[:, train, None]
        q, r = np.linalg.qr(np.nan_to_num(weighted))          # R is 2x2, upper: back-solve
        b = np.einsum("snk,sn->sk", q, np.ones(weighted.shape[:2]))
        slope = b[:, 1] / r[:, 1, 1]
        intercept = (b[:, 0] - r[:, 0, 1] * slope) / r[:, 0, 0]
        predicted = intercept[:, None] + slope[:, None] * design[:, last, 1]
        error = np.mean(np.abs(np.log(predicted / y[:, last])), axis=1)
    error[~np.isfinite(exponents)] = np.nan
    missing = ~np.isfinite(error)
    error[missing] = _power_law_backtests(first, y[missing])
    return error


def _power_law_backtests(first: SeriesData, y: np.ndarray) -> np.ndarray:
    """_backtest_error by the power law (power_law_forecast) of series measured at the same
    points as ``first``, with values ``y`` (S, n): one least squares for all of them."""
    last = first.values[first.primary] == first.levels[-1]
    if len(first.levels) < 3 or not len(y):
        return np.full(len(y), np.nan)
    before = {k: v[~last] for k, v in first.values.items()}
    target = {k: v[last] for k, v in first.values.items()}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        predicted = _power_law_through(first.variables, before, y[:, ~last].T, target).T
        error = np.abs(np.log(predicted / y[:, last]))
    return np.where(np.isfinite(error).all(axis=1), error.mean(axis=1), np.nan)


def _backtest_error(series: SeriesData, fit: SeriesFit | str | None,
                    forecast: Callable[[SeriesData, dict], np.ndarray] | None = None) -> float:
    """Mean |ln(prediction / measured)| at the series' largest value of the primary variable,
    predicted by ``fit`` (its smaller values' fit) or, where there is none (two smaller
    values are too few to fit; the regime's detector), by ``forecast`` through them (the
    power law unless given). Each point's error is capped as a fold's is (CAPPED_LOG_ERROR),
    and a forecast that is not a positive number errs by that much: one backtest of miniFE's
    MPI_Irecv forecast e^-700 and made every interval of its table span the floats."""
    last = series.values[series.primary] == series.levels[-1]
    target = {k: v[last] for k, v in series.values.items()}
    if isinstance(fit, SeriesFit):
        predicted = fit.predict(target)[0]
    elif len(series.levels) >= 3:
        predicted = (forecast or power_law_forecast)(series.where(~last), target)
    else:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        error = np.abs(np.log(predicted / series.y[last]))
    return float(np.mean(np.where(predicted > 0, np.minimum(error, CAPPED_LOG_ERROR),
                                  CAPPED_LOG_ERROR)))


def latest_trends(units: dict, fits: dict, errors: dict[tuple, float]) -> None:
    """Give each backtested series whose latest trend (``latest_law``) predicted its largest
    value at most LATEST_GAIN times as far off as its function's backtest that trend as its
    forecast beyond the data (apmt.fit.SeriesFit.latest).

    Why: a series measured across a change of regime (ranks beyond a node's cores sharing
    them, a working set coming to fit a cache, a decomposition that steps) follows the
    latest regime beyond the data, which a function of all its values bends away from, and
    the series' own backtest (its largest value from the smaller ones) says which of the two
    forecast it better. Per series, not per table: a table's series change regime at
    different values, or not at all. Over the 101 sets of benchmarks/accuracy.py the 735
    held-out values whose series took a trend (368 series, fit P <= 8) were predicted with a
    median error of 2.7%, 9.7% before; all values 5.6%, 6.2% before.

    Only from LATEST_LEVELS values of the primary variable: from one fewer the function's
    backtest fits SHAPE_LEVELS - 1, where no shape is chosen (apmt.fit.fit_many), so it
    judged the classic laws and not the function (RELeARN's times, a + b*log P, won by the
    trend at P = 256 and lost at 512: 4.8% against 1.1%). And not a trend steeper than any
    power law the family fits (MAX_LOG_EXPONENT): a wait 10 times longer a step on is a
    jump, not a law of cost."""
    for key, error in errors.items():
        series = units[key]
        if key not in fits or not np.isfinite(error) or not _trend_judged(series):
            continue
        law, coefficients = latest_law(series)
        if abs(coefficients[1]) > MAX_LOG_EXPONENT:    # no law of cost: a jump, carried on
            continue
        if _backtest_error(series, None, latest_forecast) < LATEST_GAIN * error:
            fits[key].latest = [(law, coefficients)]
            fits[key].trend_from = float(series.levels[-2])


def counted_times(units: dict, fits: dict) -> int:
    """Forecast a kernel's sampled time beyond the data through its instruction count: the
    count's forecast times the time per instruction at the largest measured P
    (SeriesFit.latest, the interval holding the time's own forecast too); how many series
    were given it.

    Why: time = instructions x CPI / clock (Eq. 2). A sampled time is a count of samples (a
    function of 5 ms gets 5 of perf's 1 ms samples per rank) and drifts with the noise of a
    few, where the instructions, counted (cachegrind, or a hardware counter), do not; the
    count says how the work moves with P, the time at the largest P what an instruction
    costs there. For every time with its count (not the application's: its wall time holds
    the waits no instruction counts), over P alone and from as many P as a shape is chosen
    from (SHAPE_LEVELS): a backtest of one value (the largest P from the smaller ones) could
    not tell the two apart where the time drifts (Nekbone's mxm_ fell from 3.5 to 0.9 ms
    from P = 1 to 8, which its own fit carried on, and was 1.4 and 1.6 ms at 16 and 32).
    Held out at P = 16 and 32 from P <= 8, the times forecast through their counts erred
    by a median log error of 0.146 where their functions erred by 0.243 (16 applications
    of 6 P, 447 values; 11 closer), and 0.209 where 0.273 from 4 P (NPB's classes, HPCCG,
    Graph500, miniAMR, miniVite, the Random and the Sparse: 267 values; 16 of 23 closer)."""
    pairs = [(key, (key[0], COUNT_METRIC)) for key in fits
             if isinstance(key, tuple) and len(key) == 2 and key[1] == TIME_METRIC
             and key[0] != APP_KERNEL and (key[0], COUNT_METRIC) in fits
             and _over_primary_alone(units[key], SHAPE_LEVELS)
             and np.array_equal(units[key].levels, units[(key[0], COUNT_METRIC)].levels)]
    for key, count in pairs:
        fits[key].latest = [_scaled(fits[count], _per_count(units[key], units[count]))]
        fits[key].ahead_by = COUNTED_BY
        fits[key].trend_from = float(units[key].levels[-2])
    return len(pairs)


def _per_count(time: SeriesData, count: SeriesData) -> float:
    """The time per counted instruction at the series' largest value of P."""
    def last(series: SeriesData) -> float:
        return float(np.mean(series.from_level(series.levels[-1]).y))
    return last(time) / last(count)


def _scaled(fit: SeriesFit, factor: float) -> tuple[Hypothesis, np.ndarray]:
    """The count's forecast beyond the data (its latest trend where it has one, else its
    function) times ``factor``, as one shape."""
    hypothesis, coefficients = fit.latest[0] if fit.latest else (fit.hypothesis,
                                                                 fit.coefficients)
    if hypothesis.form == "loglinear":
        return hypothesis, np.concatenate([[coefficients[0] + math.log(factor)],
                                           coefficients[1:]])
    return hypothesis, coefficients * factor


def _trend_judged(series: SeriesData) -> bool:
    """Whether a latest trend may be taken: enough values of the primary variable (see
    latest_trends), and only it varies over the series' points (a trend in it alone says
    nothing of the others)."""
    return _over_primary_alone(series, LATEST_LEVELS)


def _over_primary_alone(series: SeriesData, levels: int) -> bool:
    """Whether the series has ``levels`` values of its primary variable at least, and only
    that varies over its points."""
    return len(series.levels) >= levels and all(
        np.ptp(values) == 0 for name, values in series.values.items() if name != series.primary)


def latest_law(series: SeriesData) -> tuple[Hypothesis, np.ndarray]:
    """The power law in the primary variable through the series' two largest values of it:
    the trend of its latest step, carried on."""
    top = series.from_level(series.levels[-2])
    return _power_law_fit((series.primary,), top.values, top.y)


def latest_forecast(series: SeriesData, target: dict[str, np.ndarray]) -> np.ndarray:
    """``latest_law`` through the series' values, at the target."""
    law, coefficients = latest_law(series)
    return np.exp(law.design(target) @ coefficients)


def power_law_forecast(series: SeriesData, target: dict[str, np.ndarray]) -> np.ndarray:
    """The naive power law (apmt.fit.power_law) through the series' points, at the target:
    least squares in logs, exact where there are as many points as coefficients."""
    return _power_law_through(series.variables, series.values, series.y, target)


def _power_law_through(variables: tuple[str, ...], values: dict[str, np.ndarray],
                       y: np.ndarray, target: dict[str, np.ndarray]) -> np.ndarray:
    """power_law_forecast of the values ``y`` at ``values``: (n,) for one series, or (n, S)
    for S series measured there, fitted at once (one least squares, S right-hand sides)."""
    hypothesis, coefficients = _power_law_fit(variables, values, y)
    return np.exp(hypothesis.design(target) @ coefficients)


def _power_law_fit(variables: tuple[str, ...], values: dict[str, np.ndarray], y: np.ndarray
                   ) -> tuple[Hypothesis, np.ndarray]:
    """The power law in the variables through the values ``y`` (least squares in logs) and
    its coefficients: one column of them per column of ``y``."""
    hypothesis = power_law(variables, values)
    return hypothesis, np.linalg.lstsq(hypothesis.design(values), np.log(y), rcond=None)[0]


def classic_forecast(series: SeriesData, target: dict[str, np.ndarray]) -> np.ndarray:
    """What a model from these values predicts when they are too few to choose a shape: the
    mean (in logs) of the classic laws through them, the power law and c + a/P (apmt.fit
    fits no more from three values of P); the power law alone where c + a/P is not positive.

    A table's intervals are calibrated on how far its backtests erred, so a backtest must
    answer as the model would. From two values the power law alone erred more than the
    model from three does: NPB fitted at P = 1, 2, 4 held 95% of the values at P = 8 and 16
    in intervals 3.4 wide (median; LU W 79), with the mean 92% in 2.2 (LU W 6.1)."""
    power = power_law_forecast(series, target)
    law = linear_law(series.variables)
    coefficients = np.linalg.lstsq(law.design(series.values), series.y, rcond=None)[0]
    linear = law.design(target) @ coefficients
    return np.where(linear > 0, np.sqrt(power * np.abs(linear)), power)


def calibrate(fits: dict[tuple, SeriesFit], errors: dict[tuple, float],
              data: dict[tuple, SeriesData]) -> dict:
    """Set every fit's interval widths beyond the data from the table's backtest errors.

    A series' error scale is its cross-validated error (its noise) plus the table's typical
    (median) backtest error (its drift), so that no series is taken for more certain than
    the table's typical one showed to be; the multiplier is the split-conformal quantile of
    the backtests' errors in those units (from fewer than 9: small_sample_bound), and each
    part times it is the series' width one step out (apmt.fit.SeriesFit.beyond says how it
    grows farther). The step is the series' own last step of the primary variable, the
    distance its backtest predicted over."""
    if not errors:
        return {"backtests": 0}
    typical = float(np.median(list(errors.values())))
    ratios = np.sort([error / (fits[key].sigma + typical) for key, error in errors.items()
                      if fits[key].sigma + typical > 0])
    if not len(ratios):
        return {"backtests": len(errors), "typical_error": typical}
    rank = math.ceil((len(ratios) + 1) * INTERVAL_LEVEL)
    multiplier = float(ratios[min(rank, len(ratios)) - 1])
    few = rank > len(ratios)
    if few:
        multiplier = max(multiplier, small_sample_bound(ratios))
    for key, fit in fits.items():
        levels = data[key].levels
        fit.noise_width, fit.drift_width = multiplier * fit.sigma, multiplier * typical
        fit.step = float(np.log(levels[-1] / levels[-2]))
    return {"backtests": len(errors), "typical_error": typical, "multiplier": multiplier,
            "median_backtest_ratio": float(np.median(ratios)),
            "multiplier_rule": "student-t" if few else "conformal"}


def small_sample_bound(ratios: np.ndarray) -> float:
    """The 90% bound of one more backtest ratio from fewer than the 9 ratios that the
    split-conformal rank needs: Student's t quantile with their count as degrees of freedom
    times their root mean square, as if the errors were normal around 0 with a scale
    unknown.

    Why: the conformal rank ceil((n + 1) * 0.9) exceeds n below 9 backtests, and the
    largest of n ratios bounds one more with probability n / (n + 1) only, 80% from 4
    (a table of 4 MPI operations: NPB SP S's held 2 of its 4 values at P = 16)."""
    return t_quantile(len(ratios)) * float(np.sqrt(np.mean(np.square(ratios))))


# --------------------------------------------------------------------------------- the fitting

def _fit_many(work: list[tuple[tuple, SeriesData]], jobs: int | None
              ) -> list[tuple[tuple, SeriesFit | str]]:
    """Fit every series of ``work``: those measured at the same points with the same
    variables together (apmt.fit.fit_many batches them), in chunks, in parallel processes
    when there are many."""
    jobs = jobs or len(os.sched_getaffinity(0))
    groups: dict[tuple, list[tuple[tuple, SeriesData]]] = {}
    for key, series in work:
        signature = (series.variables, series.primary, series.preferred, series.summary,
                     *((name, values.tobytes()) for name, values in series.values.items()))
        groups.setdefault(signature, []).append((key, series))
    chunks = [members[i:i + CHUNK] for members in groups.values()
              for i in range(0, len(members), CHUNK)]
    if jobs == 1 or len(work) < PARALLEL_FROM:
        results = list(map(_fit_chunk, chunks))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_fit_chunk, chunks))
    return [outcome for chunk in results for outcome in chunk]


def _fit_chunk(chunk: list[tuple[tuple, SeriesData]]) -> list[tuple[tuple, SeriesFit | str]]:
    """Series measured at the same points, fitted at once."""
    first = chunk[0][1]
    fits = fit_many(first.values, np.array([series.y for _, series in chunk]),
                    first.variables, first.primary, first.preferred, summary=first.summary)
    return [(key, fit if isinstance(fit, SeriesFit) else f"has no plausible fit ({fit})")
            for (key, _), fit in zip(chunk, fits, strict=True)]


def error_correlation(biases: list[dict[str, float]], at_least: int = 3) -> tuple[float, int]:
    """How much the out-of-sample errors of summed series go together, pooled over pairs:
    sum of e_i*e_j over sum of |e_i||e_j| (e: signed error per shared fold, not centred, so a
    bias that every series shares counts), in [0, 1], and the number of pairs sharing at least
    ``at_least`` folds (0 pairs: 0, the series' errors are taken as independent). Kernels
    measured in the same runs share those runs' noise and the same surprises beyond the
    measured range: a sum's interval must not assume their errors cancel."""
    together = magnitude = 0.0
    pairs = 0
    for first, second in itertools.combinations(biases, 2):
        shared = sorted(set(first) & set(second))
        if len(shared) < at_least:
            continue
        a = np.array([first[label] for label in shared])
        b = np.array([second[label] for label in shared])
        together += float(a @ b)
        magnitude += float(np.sqrt((a @ a) * (b @ b)))
        pairs += 1
    if magnitude <= 0:
        return 0.0, pairs
    return float(np.clip(together / magnitude, 0.0, 1.0)), pairs


def described(left_out: dict[tuple, str], at_most: int = 5) -> str:
    """Left-out series as one line: the first few with why, then how many more."""
    first = list(left_out.items())[:at_most]
    named = [f"series {series_name(key)!r} {reason}" for key, reason in first]
    more = len(left_out) - len(named)
    return "; ".join(named) + (f"; and {more} more" if more else "")
