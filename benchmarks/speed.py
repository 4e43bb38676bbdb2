"""Fitting speed: series per second, single-parameter, on a large table.

Usage: python benchmarks/speed.py [--series 2000] [--jobs 2] [--extrap]
The table holds ``--series`` synthetic series (known functions of P with 5% multiplicative
noise, 5 values of P, 2 repetitions each), the size of all call paths and metrics of a real
cube set. With --extrap, Extra-P models the same table for comparison.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from apmt.fit_table import fit_all
from apmt.series import points

P_VALUES = (16, 32, 64, 128, 256)
SHAPES = (
    lambda p: 5.0 + 300.0 / p,
    lambda p: 2.0 + 0.1 * np.log2(p),
    lambda p: 1.0 + 0.01 * p,
    lambda p: 0.5 * p ** 0.5 + 3.0,
    lambda p: 10.0 * np.ones_like(p),
    lambda p: 0.2 + 0.003 * p * np.log2(p),
)


def synthetic_table(series: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = np.repeat(np.array(P_VALUES, float), 2)
    frames = []
    for index in range(series):
        shape = SHAPES[index % len(SHAPES)]
        value = shape(p) * rng.uniform(0.5, 2.0) * np.exp(rng.normal(0.0, 0.05, len(p)))
        frames.append(pd.DataFrame({"kernel": f"region_{index}", "metric": "time", "p": p,
                                    "rep": np.tile([1, 2], len(P_VALUES)), "value": value}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--extrap", action="store_true")
    args = parser.parse_args()
    table = synthetic_table(args.series)
    started = time.perf_counter()
    fitted = fit_all(points(table, []), [], "synthetic", jobs=args.jobs)
    fits, left_out = fitted.fits, fitted.left_out
    seconds = time.perf_counter() - started
    done = len(fits) + len(left_out)
    print(f"apmt: {done} series in {seconds:.1f} s = {done / seconds:.0f} series/s "
          f"({args.jobs} processes; {len(left_out)} left out)")
    if args.extrap:
        from apmt.extrap_peer import extrap_predict
        started = time.perf_counter()
        extrap_predict(table, pd.DataFrame({"p": [512]}), [])
        seconds = time.perf_counter() - started
        print(f"Extra-P: {args.series} series in {seconds:.1f} s = "
              f"{args.series / seconds:.0f} series/s")


if __name__ == "__main__":
    main()
