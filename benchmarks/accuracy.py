"""Accuracy of apmt next to the baselines and Extra-P: fit on P < P_max, predict P_max.

Usage: python benchmarks/accuracy.py [DATA_DIR] [-o OUT_CSV]
DATA_DIR defaults to the repository's data/ folder (real measurements, see data/README.md).
Prints, per data set and method, the median and 90th percentile absolute percentage error
and apmt's 90%-interval coverage, from one run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from apmt.evaluate import evaluate, summary
from apmt.ingest import import_profiles

REPOSITORY = Path(__file__).resolve().parents[1]
SETS = {
    # name: (format, files under the data folder, parameters, per-rank parameters)
    "relearn": ("extrap-text", ["relearn/relearn_data.txt"], ["n"], {"n"}),
    "lulesh_caliper_opal": ("caliper", ["lulesh_caliper_opal/*.cali"], [], set()),
    "mpi_collectives": ("collectives", ["mpi_collectives/mpi_data.csv"], [], set()),
}


def run(data: Path, baselines: list[str]) -> pd.DataFrame:
    rows = []
    for name, (fmt, patterns, params, per_rank) in SETS.items():
        files = sorted(f for pattern in patterns for f in data.glob(pattern))
        table, kind = import_profiles(fmt, files)
        started = time.perf_counter()
        evaluation = evaluate(table, kind, params, "p=max", baselines, name, frozenset(per_rank))
        seconds = time.perf_counter() - started
        result = summary(evaluation).assign(set=name, seconds=round(seconds, 1))
        rows.append(result)
    return pd.concat(rows, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=REPOSITORY / "data")
    parser.add_argument("--baselines", default="analytic,amdahl,powerlaw,extrap")
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    result = run(args.data, args.baselines.split(","))
    columns = ["set", "method", "points", "median_ape", "p90_ape", "coverage_90", "seconds"]
    print(result[columns].to_string(index=False, float_format=lambda v: f"{v:.1f}"
                                    if abs(v) >= 1 else f"{v:.2f}"))
    if args.output:
        result.to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
