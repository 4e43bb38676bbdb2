"""Fitting speed: series per second, single-parameter, on a large table.

Usage: python benchmarks/speed.py [--series 2000] [--jobs 2] [--extrap]
       python benchmarks/speed.py --table MEASUREMENTS.csv [--params size] [--jobs 2]
The table holds ``--series`` synthetic series (known functions of P with 5% multiplicative
noise, 5 values of P, 2 repetitions each), the size of all call paths and metrics of a real
cube set; or every series of a real measurements table (``--table``). The time is the whole
table's: the regime, the fits, the backtests that calibrate the intervals, and a prediction of
every series at twice the largest P. With --extrap, Extra-P models the same table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.fit_table import fit_all
from apmt.series import points
from apmt.tables import read_table

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
    parser.add_argument("--table", type=Path, help="a measurements table (apmt's CSV) to fit "
                        "instead of the synthetic one: every series of it")
    parser.add_argument("--params", default="", help="the table's parameters, comma-separated")
    parser.add_argument("--extrap", action="store_true")
    args = parser.parse_args()
    params = [name for name in args.params.split(",") if name]
    table = read_table(args.table, "measurements") if args.table else \
        synthetic_table(args.series)
    started = time.perf_counter()
    series = points(table, params)
    fitted = fit_all(series, params, "speed", jobs=args.jobs)
    target = {name: np.array([2.0 * series["p"].max() if name == "p" else series[name].max()])
              for name in ["p", *params]}
    predicted = [fit.predict(target)[0][0] for fit in fitted.fits.values()]
    seconds = time.perf_counter() - started
    done = len(fitted.fits) + len(fitted.left_out)
    print(f"apmt: {done} series fitted and predicted at P = {target['p'][0]:g} in "
          f"{seconds:.1f} s = {done / seconds:.0f} series/s ({args.jobs} processes; "
          f"{len(fitted.left_out)} left out with a reason; {len(predicted)} predictions)")
    if args.extrap:
        from apmt.extrap_peer import extrap_predict
        started = time.perf_counter()
        extrap_predict(table, pd.DataFrame({"p": [512]}), [])
        seconds = time.perf_counter() - started
        print(f"Extra-P: {args.series} series in {seconds:.1f} s = "
              f"{args.series / seconds:.0f} series/s")


if __name__ == "__main__":
    main()
