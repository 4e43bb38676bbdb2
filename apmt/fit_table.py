"""Fit every series of a points table, in parallel processes when there are many."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

from apmt.fit import SeriesFit
from apmt.series import MIN_DISTINCT_P, fit_plan, fit_points

log = logging.getLogger("apmt")

CHUNK = 64          # series per task: large enough that process start-up does not dominate
PARALLEL_FROM = 256  # below this many series, one process is faster


def fit_all(points: pd.DataFrame, params: list[str], source: str,
            per_rank_params: frozenset[str] = frozenset(), jobs: int | None = None,
            keys: tuple[str, ...] = ("kernel", "metric"),
            skip_sparse: bool = False) -> dict[tuple, SeriesFit]:
    """Fits of every series of a points table (see apmt.series.points), keyed by ``keys``.

    ``skip_sparse`` leaves out, with a warning, series seen at too few values of their
    primary variable to fit (a function sampled in some runs only); otherwise they are an
    error.
    """
    grouped = list(points.groupby(list(keys), sort=True))
    if skip_sparse:
        grouped = _dense(grouped, params, per_rank_params)
    jobs = jobs or len(os.sched_getaffinity(0))
    chunks = [grouped[i:i + CHUNK] for i in range(0, len(grouped), CHUNK)]
    work = [(chunk, params, source, per_rank_params) for chunk in chunks]
    if jobs == 1 or len(grouped) < PARALLEL_FROM:
        results = list(map(_fit_chunk, work))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_fit_chunk, work))
    return {key: fit for chunk in results for key, fit in chunk}


def _dense(grouped: list, params: list[str], per_rank_params: frozenset[str]) -> list:
    dense = [(key, rows) for key, rows in grouped
             if rows[fit_plan(rows, params, per_rank_params)[0]].nunique() >= MIN_DISTINCT_P]
    if len(dense) < len(grouped):
        log.warning("left out %d of %d series seen at fewer than %d values of P (or of the "
                    "varying parameter)", len(grouped) - len(dense), len(grouped),
                    MIN_DISTINCT_P)
    return dense


def _fit_chunk(work: tuple) -> list[tuple[tuple, SeriesFit]]:
    chunk, params, source, per_rank_params = work
    return [(key, fit_points(key, rows, params, source, per_rank_params)) for key, rows in chunk]
