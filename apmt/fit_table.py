"""Fit every series of a points table, in parallel processes when there are many."""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from apmt.fit import SeriesFit
from apmt.series import UnfittableSeries, fit_points

CHUNK = 64          # series per task: large enough that process start-up does not dominate
PARALLEL_FROM = 256  # below this many series, one process is faster


def fit_all(points: pd.DataFrame, params: list[str], source: str,
            per_rank_params: frozenset[str] = frozenset(), jobs: int | None = None,
            keys: tuple[str, ...] = ("kernel", "metric"),
            ) -> tuple[dict[tuple, SeriesFit], dict[tuple, str]]:
    """Fits of every series of a points table (see apmt.series.points), keyed by ``keys``,
    and the series that cannot be fitted with why (too few P, zeros among positive values,
    no plausible shape): real profiles have them, and one of them must not stop the rest."""
    grouped = list(points.groupby(list(keys), sort=True))
    jobs = jobs or len(os.sched_getaffinity(0))
    chunks = [grouped[i:i + CHUNK] for i in range(0, len(grouped), CHUNK)]
    work = [(chunk, params, source, per_rank_params) for chunk in chunks]
    if jobs == 1 or len(grouped) < PARALLEL_FROM:
        results = list(map(_fit_chunk, work))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_fit_chunk, work))
    outcomes = [outcome for chunk in results for outcome in chunk]
    fits = {key: fit for key, fit in outcomes if isinstance(fit, SeriesFit)}
    left_out = {key: reason for key, reason in outcomes if isinstance(reason, str)}
    calibrate(fits)
    return fits, left_out


def calibrate(fits: dict[tuple, SeriesFit]) -> None:
    """Set how far each fit's intervals widen beyond the measured range (SeriesFit.drift),
    from the table's own out-of-sample errors: its forward predictions' error per log step,
    or the median of the table's series when that is larger (a series' own one or two
    forward folds may have been lucky)."""
    rates = np.array([fit.forward_rate for fit in fits.values()], float)
    typical = float(np.nanmedian(rates)) if np.isfinite(rates).any() else 0.0
    for fit in fits.values():
        own = fit.forward_rate if np.isfinite(fit.forward_rate) else typical
        fit.drift = max(own, typical)


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


def _fit_chunk(work: tuple) -> list[tuple[tuple, SeriesFit | str]]:
    chunk, params, source, per_rank_params = work
    outcomes: list[tuple[tuple, SeriesFit | str]] = []
    for key, rows in chunk:
        try:
            outcomes.append((key, fit_points(key, rows, params, source, per_rank_params)))
        except UnfittableSeries as error:
            outcomes.append((key, error.reason))
    return outcomes


def described(left_out: dict[tuple, str], at_most: int = 5) -> str:
    """Left-out series as one line: the first few with why, then how many more."""
    first = list(left_out.items())[:at_most]
    named = [f"series {'/'.join(map(str, key))!r} {reason}" for key, reason in first]
    more = len(left_out) - len(named)
    return "; ".join(named) + (f"; and {more} more" if more else "")
