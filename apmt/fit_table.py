"""Fit every series of a points table, in parallel processes when there are many."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

from apmt.fit import SeriesFit
from apmt.series import fit_points

CHUNK = 64          # series per task: large enough that process start-up does not dominate
PARALLEL_FROM = 256  # below this many series, one process is faster


def fit_all(points: pd.DataFrame, params: list[str], source: str,
            per_rank_params: frozenset[str] = frozenset(), jobs: int | None = None,
            keys: tuple[str, ...] = ("kernel", "metric")) -> dict[tuple, SeriesFit]:
    """Fits of every series of a points table (see apmt.series.points), keyed by ``keys``."""
    grouped = list(points.groupby(list(keys), sort=True))
    jobs = jobs or len(os.sched_getaffinity(0))
    chunks = [grouped[i:i + CHUNK] for i in range(0, len(grouped), CHUNK)]
    work = [(chunk, params, source, per_rank_params) for chunk in chunks]
    if jobs == 1 or len(grouped) < PARALLEL_FROM:
        results = list(map(_fit_chunk, work))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_fit_chunk, work))
    return {key: fit for chunk in results for key, fit in chunk}


def _fit_chunk(work: tuple) -> list[tuple[tuple, SeriesFit]]:
    chunk, params, source, per_rank_params = work
    return [(key, fit_points(key, rows, params, source, per_rank_params)) for key, rows in chunk]
