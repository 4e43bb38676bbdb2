"""Calibration of apmt's 90% intervals inside the measured range: hold out an interior P.

Usage: python benchmarks/interpolation.py [DATA_DIR] [--baselines NAME,...] [-o OUT_CSV]

benchmarks/accuracy.py holds out the largest P, where users extrapolate; a prediction at a P
between measured ones (``interpolated`` in predictions.csv) has an interval too. Here every
per-class set of accuracy.py with its P as series (RELeARN, LAMMPS, NPB, HPCCG, miniFE,
CloverLeaf; not the MPI operations, the P x size sets, or the sets of one P per file) is
fitted without its own held-out P and without the middle one of the rest, which is then
predicted: NPB's P = 4 from 1, 2, 8 (BT and SP: 4 from 1, 9), LAMMPS' 4 from 1..8,
RELeARN's 128 from 32..512. Prints, per set and pooled, how many of apmt's intervals hold the
measured value and their median width (upper/lower), and the median APE of apmt and of each
baseline (default: the naive power law).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pandas as pd
from accuracy import REPOSITORY, SETS, TOGETHER, DataSet, read_set, run

# the sets whose series are not over P, or that hold other sets' points again
LEFT_OUT = ("mpi_collectives", "mm_cubeset", "lulesh_caliper")


def interior_sets(data: Path) -> dict[str, DataSet]:
    """accuracy.py's per-class sets, each holding out the middle of its fitted P."""
    sets = {}
    for name, spec in SETS.items():
        if name in TOGETHER or name in LEFT_OUT or name.endswith("_comm"):
            continue
        table, _ = read_set(data, spec)
        held = _held(spec.holdout, table)
        levels = sorted(p for p in table["p"].unique() if p not in held)
        unused = {**spec.unused, "p": (*spec.unused.get("p", ()), *held)}
        sets[f"{name}_interior"] = replace(spec, holdout=f"p={levels[len(levels) // 2]:g}",
                                           unused=unused)
    return sets


def _held(holdout: str, table: pd.DataFrame) -> list[float]:
    """The P a set holds out for extrapolation (``p=max`` or a list)."""
    values = holdout.removeprefix("p=")
    return [float(table["p"].max())] if values == "max" else [float(v) for v in values.split(",")]


def calibration(evaluation: pd.DataFrame) -> pd.DataFrame:
    """Per set and pooled: points, apmt's coverage and median width, each method's median APE."""
    apmt = evaluation[evaluation["method"] == "apmt"]
    inside = (apmt["lower"] <= apmt["measured"]) & (apmt["measured"] <= apmt["upper"])
    apmt = apmt.assign(inside=inside, width=apmt["upper"] / apmt["lower"])
    medians = evaluation.pivot_table(index="set", columns="method", values="ape",
                                     aggfunc="median")
    per_set = apmt.groupby("set").agg(points=("inside", "size"), inside=("inside", "mean"),
                                      width=("width", "median")).join(medians)
    pooled = pd.DataFrame({"points": len(apmt), "inside": apmt["inside"].mean(),
                           "width": apmt["width"].median(),
                           **evaluation.groupby("method")["ape"].median().to_dict()},
                          index=["all"])
    return pd.concat([per_set, pooled]).reset_index(names="set")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=REPOSITORY / "data")
    parser.add_argument("--baselines", default="powerlaw")
    parser.add_argument("-o", "--output", type=Path, help="every held-out point's errors")
    args = parser.parse_args()
    sets = interior_sets(args.data)
    SETS.update(sets)
    evaluation = run(args.data, list(sets), [b for b in args.baselines.split(",") if b])
    if args.output:
        evaluation.to_csv(args.output, index=False)
    table = calibration(evaluation)
    print(table.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:.3g}"))
    short = table[(table["set"] != "all") & (table["inside"] < 0.75)]
    print(f"\nsets with fewer than 75% inside: {', '.join(short['set']) or 'none'}")


if __name__ == "__main__":
    main()
