"""Refinement runs: does choosing the next P where the model is least certain reach the
tolerance in fewer runs than fixed choices?

Usage: python benchmarks/refinement.py [DATA_DIR] [--tolerances 10,20] [--run-pool DIR]
       [-o OUT_CSV]
DATA_DIR defaults to the shared measurement folder beside the repository (../shared/data).
``--run-pool DIR`` also profiles LAMMPS (the LJ input, 6,900 atoms, 100 steps) here at P = 1
to 8 with 3 repetitions (about 20 s on 2 cores; above 2 ranks the cores are oversubscribed)
with ``apmt profile`` into DIR, and adds its wall time and MPI operations as sets
``lammps_p1_8`` and ``lammps_p1_8_comm``: the published sets have 5 P, so their pool holds one
P and every strategy makes the same choice there.

Protocol, per series (one kernel and metric, fitted as ``apmt evaluate`` fits it): start from
the 3 smallest values of the series' axis (P; the size x for ``mm_cubeset``, a serial code
measured at 9 sizes), hold out the largest as the target, and let each strategy add one value
of the pool in between at a time, refitting on all it added, until the prediction at the
target is within the tolerance (its worst point over the other parameters) or the pool is used
up. Strategies: ``target_width`` (active learning, apmt.refine.target_width_after: the value
whose run, landing one residual sigma above or below the current fit, leaves the narrowest
expected 90% interval at the target; ties to the smaller), ``uncertainty`` (apmt.refine: the
widest relative 90% interval of the current fit), ``uncertainty_refit`` (the same without the
largest left, which choose_p keeps for validation), ``next_doubling`` (nearest to twice the
largest measured), ``midpoint`` (nearest to the geometric middle of the largest measured and
the target) and ``largest`` (the largest left). Prints per set, tolerance and strategy the
series, the pool size, the mean runs added (a series that never gets there counts the whole
pool), the mean runs of those that got there and the success rate.

Measured (10% and 20%): ``target_width`` ties or trails the fixed choices except on
mm_cubeset at 20% (fewer runs than every fixed choice, all series reached); it needs more
runs on the LAMMPS pool and reaches fewer mm_cubeset series at 10%, so apmt.refine.choose_p
keeps its rule. Taking the fit's prediction itself as the pseudo-run (no sigma) was worse: it
favours the values next to the measured ones.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.cli import main as cli_main
from apmt.errors import ApmtError
from apmt.evaluate import KEYS, series_points
from apmt.fit import SeriesFit
from apmt.ingest import import_profiles
from apmt.refine import TIE_DECIMALS, rank_by_uncertainty, target_width_after
from apmt.series import fit_points, point_values
from apmt.tables import read_table, write_text_atomic

REPOSITORY = Path(__file__).resolve().parents[1]
START = 3
SETS = {
    # name: (format, files under the data folder, parameters, per-rank parameters, axis)
    "mpi_collectives": ("collectives", ["mpi_collectives/mpi_data.csv"], [], set(), "p"),
    "relearn": ("extrap-text", ["relearn/relearn_data.txt"], ["n"], {"n"}, "p"),
    "lulesh_caliper_opal": ("caliper", ["lulesh_caliper_opal/*.cali"], [], set(), "p"),
    "mm_cubeset": ("cube", ["scorep_counters/mm_cubeset/*/profile.cubex"], ["x"], set(), "x"),
}

def _nearest(pool: list[float], wanted: float) -> float:
    """The pool's value nearest to ``wanted`` on a log scale (the larger on a tie)."""
    return min(pool, key=lambda v: (abs(np.log(v / wanted)), -v))


def by_uncertainty(fit: SeriesFit, rows: pd.DataFrame, params: list[str], pool: list[float],
                   axis: str, keep_largest: bool = False) -> float:
    """The pool value where the current fit's 90% interval is widest (at the other
    parameters' worst); ties go to the larger value, as in apmt.refine. ``keep_largest``
    leaves the largest out while others remain: apmt.refine.choose_p's refit run, when the
    largest is kept to validate."""
    if keep_largest and len(pool) > 1:
        pool = [value for value in pool if value != max(pool)]
    candidates = rows[rows[axis].isin(pool)]
    bounds = fit.predict(point_values(candidates, params))
    ranking = rank_by_uncertainty(candidates[axis].to_numpy(float), bounds)
    worst = ranking.groupby("p")["uncertainty"].max().round(TIE_DECIMALS)
    return float(worst.sort_index(ascending=False).idxmax())


def by_target_width(key: tuple, fit: SeriesFit, rows: pd.DataFrame, params: list[str],
                    per_rank: frozenset[str], measured: list[float], pool: list[float],
                    axis: str, target: float) -> float:
    """The pool value whose run, valued at the current fit's prediction, would narrow the
    target's 90% interval most (apmt.refine.target_width_after); ties go to the smaller."""
    known = rows[rows[axis].isin(measured)]
    target_values = point_values(rows[rows[axis] == target], params)
    widths = {value: target_width_after(
        key, known, params, fit, point_values(rows[rows[axis] == value], params),
        target_values, per_rank) for value in pool}
    return min(pool, key=lambda value: (round(widths[value], TIE_DECIMALS), value))


FIXED = {
    "next_doubling": lambda measured, pool, target: _nearest(pool, 2 * max(measured)),
    "midpoint": lambda measured, pool, target: _nearest(pool, np.sqrt(max(measured) * target)),
    "largest": lambda measured, pool, target: max(pool),
}
STRATEGIES = ("target_width", "uncertainty", "uncertainty_refit", *FIXED)
POOL_STUDY = "lammps-p1-8"
POOL_TEMPLATE = """name: {name}
command: "lmp -in in.lj -var x {{size}} -var y {{size}} -var z {{size}} -var steps 100"
setup: [{input}]
p: [1, 2, 3, 4, 5, 6, 7, 8]
params: {{size: [0.6]}}
repetitions: 3
backend: none
timeout_s: 120
env: {{OMP_NUM_THREADS: 1}}
"""


def refine_series(key: tuple, rows: pd.DataFrame, params: list[str], per_rank: frozenset[str],
                  axis: str, tolerance: float, strategy: str) -> dict:
    """Runs one strategy adds before the target is predicted within ``tolerance``."""
    values = sorted(rows[axis].unique())
    measured, pool, target = list(values[:START]), list(values[START:-1]), values[-1]
    target_rows = rows[rows[axis] == target]
    added = 0
    while True:
        fit = fit_points(key, rows[rows[axis].isin(measured)], params, "benchmark", per_rank)
        predicted = fit.predict(point_values(target_rows, params))[0]
        error = float(np.max(np.abs(predicted / target_rows["value"].to_numpy(float) - 1)))
        if error <= tolerance or not pool:
            return {"runs": added, "reached": error <= tolerance, "final_error": error,
                    "added": ",".join(f"{v:g}" for v in measured[START:])}
        if strategy == "target_width":
            chosen = by_target_width(key, fit, rows, params, per_rank, measured, pool, axis,
                                     target)
        elif strategy.startswith("uncertainty"):
            chosen = by_uncertainty(fit, rows, params, pool, axis, strategy.endswith("refit"))
        else:
            chosen = FIXED[strategy](measured, pool, target)
        measured.append(chosen)
        pool.remove(chosen)
        added += 1


def published_set(name: str, data: Path) -> tuple[pd.DataFrame, str]:
    fmt, patterns, *_ = SETS[name]
    return import_profiles(fmt, sorted(f for pattern in patterns for f in data.glob(pattern)))


def run_set(name: str, table: pd.DataFrame, kind: str, params: list[str],
            per_rank: frozenset[str], axis: str, tolerances: list[float]) -> pd.DataFrame:
    """Every strategy on every series of one table (see the protocol above)."""
    series = series_points(table, kind, params)
    rows = []
    for key, group in series.groupby(KEYS, sort=True):
        group = group[group["value"] > 0]   # an operation does not communicate at P = 1
        if group[axis].nunique() < START + 1:
            continue
        pool = group[axis].nunique() - START - 1
        for tolerance in tolerances:
            for strategy in STRATEGIES:
                try:
                    result = refine_series(key, group, params, per_rank, axis, tolerance,
                                           strategy)
                except ApmtError:
                    continue   # a series the fitter refuses (too few positive points)
                rows.append({"set": name, "series": "/".join(map(str, key)), "pool": pool,
                             "tolerance": tolerance, "strategy": strategy, **result})
    return pd.DataFrame(rows)


def run_pool(folder: Path) -> dict[str, tuple[pd.DataFrame, str]]:
    """LAMMPS at P = 1..8 on this machine, profiled by apmt (raw runs are reused)."""
    folder.mkdir(parents=True, exist_ok=True)
    study = folder / f"{POOL_STUDY}.yaml"
    write_text_atomic(POOL_TEMPLATE.format(
        name=POOL_STUDY, input=REPOSITORY / "data" / "lammps" / "in.lj"), study)
    if cli_main(["profile", str(study), "--results", str(folder / "results")]) != 0:
        raise SystemExit(f"apmt profile {study} failed")
    tables = folder / "results" / POOL_STUDY
    return {"lammps_p1_8": (read_table(tables / "measurements.csv"), "measurements"),
            "lammps_p1_8_comm": (read_table(tables / "comm.csv", "communication"),
                                 "communication")}


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Per set, tolerance and strategy: series, pool, mean runs, runs when reached, success."""
    grouped = results.groupby(["set", "tolerance", "strategy"], sort=False)
    table = grouped.agg(series=("series", "nunique"), pool=("pool", "mean"),
                        mean_runs=("runs", "mean"), success=("reached", "mean"))
    reached = results[results["reached"]].groupby(["set", "tolerance", "strategy"], sort=False)
    table["runs_if_reached"] = reached["runs"].mean()
    return table.reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=REPOSITORY.parent / "shared" / "data")
    parser.add_argument("--tolerances", default="10,20", help="percent, comma-separated")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--run-pool", type=Path, metavar="DIR",
                        help="also profile LAMMPS at P = 1..8 here into DIR")
    parser.add_argument("-o", "--output", type=Path, help="per-series results (CSV)")
    args = parser.parse_args()
    tolerances = [float(t) / 100 for t in args.tolerances.split(",")]
    started = time.perf_counter()
    frames = []
    for name in filter(None, args.sets.split(",")):
        _, _, params, per_rank, axis = SETS[name]
        frames.append(run_set(name, *published_set(name, args.data), params,
                              frozenset(per_rank), axis, tolerances))
    if args.run_pool:
        for name, (table, kind) in run_pool(args.run_pool).items():
            frames.append(run_set(name, table, kind, ["size"], frozenset(), "p", tolerances))
    results = pd.concat(frames, ignore_index=True)
    table = summarise(results)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.output:
        results.to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
