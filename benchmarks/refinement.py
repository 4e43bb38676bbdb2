"""Refinement runs: does choosing the next P where the model is least certain reach the
tolerance in fewer runs than fixed choices?

Usage: python benchmarks/refinement.py [DATA_DIR] [--tolerances 10,20]
       [--run-pool DIR [DIR ...]] [-o OUT_CSV]
DATA_DIR defaults to the repository's data/ folder (real measurements, see data/README.md).
The published sets have 5 P, so their pool holds one P and every strategy makes the same
choice there. ``--run-pool DIR`` also profiles LAMMPS here with ``apmt profile`` into DIR (raw
runs are reused; about 5 minutes on 2 cores the first time), the LJ input at 6,912 atoms and
100 steps: at P = 1..8 with 3 repetitions, wall time and MPI operations (sets ``lammps_p1_8``
and ``lammps_p1_8_comm``); and at P = 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 (process grids LAMMPS
likes) with perf cpu-clock and cachegrind, the time and counters of the kernels apmt models
on their own and the MPI operations (``lammps_p1_32``, ``lammps_p1_32_comm``). Beyond 2 ranks
the cores are oversubscribed: cachegrind's counts do not care, on-CPU time hardly, the MPI
times do. Several folders are independent realizations of the same pool (the sets get
``_run1``, ``_run2``, ...): timing noise moves which strategy wins a series, so one profile is
not enough to tell strategies apart.

Protocol, per series (one kernel and metric, fitted as apmt fits a measurements table's; an MPI
operation's series is its time per rank where it took time, apmt.evaluate.series_points): start
from the 3 smallest values of the series' axis (P; the size x for ``mm_cubeset``, a serial code
measured at 9 sizes), hold out the largest as the target, and let each strategy add one value
of the pool in between at a time, refitting on all it added, until the prediction at the target
is within the tolerance (its worst point over the other parameters) or the pool is used up. The
target plays the workflow's validation run (apmt.refine.choose_p validates at the largest
candidate) and the pool its other candidates, so ``uncertainty`` is apmt's choice of the refit
run: the widest relative 90% interval of the current fit. Fixed choices: ``next_doubling``
(nearest to twice the largest measured), ``midpoint`` (nearest to the geometric middle of the
largest measured and the target) and ``largest`` (the largest left); ``target_width`` is an
active-learning alternative (target_width_after: the value whose run, landing one residual
sigma above or below the current fit, leaves the narrowest expected 90% interval at the
target). Only series that need refinement count (the target's error above the tolerance before
any run). Prints per set and tolerance, and over all sets (``all``), per strategy: the series,
the pool size, the mean runs added (a series that never gets there counts the whole pool), the
success rate, the mean runs of those that got there, in how many series apmt's choice needed
fewer (apmt_fewer) and more (apmt_more) runs, and the two-sided sign test of those counts
(sign_p: the chance of a split at least as uneven if neither needed fewer runs more often).

Measured with the intervals calibrated on each series' backtests (apmt.fit_table; 2-core VM;
the published sets, mm's 9 sizes and the three bundled LAMMPS sets of 10 P, 2 minutes; 170
series need refining at 10%, 127 at 20%): apmt's choice needs 1.76 and 1.69 runs on average;
next_doubling 2.40 and 2.20 (apmt fewer in 67 series, more in 8; 39 and 7; sign_p < 0.001),
midpoint 2.07 and 1.91 (40 and 8; 30 and 6; < 0.001), largest 1.74 and 1.69 (1 and 2; 0 and
0): the widest interval is at the largest candidate, so the rule does what "largest" does.
target_width needs more runs (2.02 and 1.86).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from apmt.cli import main as cli_main
from apmt.errors import ApmtError
from apmt.evaluate import KEYS, series_points
from apmt.fit import SeriesFit
from apmt.fit_table import fit_all
from apmt.ingest import import_profiles
from apmt.kernels import classify
from apmt.model import MODELLED
from apmt.refine import TIE_DECIMALS, rank_by_uncertainty, relative_width
from apmt.series import fit_points, point_values
from apmt.tables import APP_KERNEL, read_table, write_text_atomic

REPOSITORY = Path(__file__).resolve().parents[1]
START = 3
PSEUDO_SHIFTS = (-1.0, 1.0)   # a pseudo-run lands this many residual sigmas off the fit
LAMMPS = {"lj": "p1-32", "lj08": "lj-size0.8-p1-32", "eam": "eam-cu-p1-32"}
SETS = {
    # name: (format, files under the data folder, parameters, per-rank parameters, axis)
    "mpi_collectives": ("collectives", ["mpi_collectives/mpi_data.csv"], [], set(), "p"),
    "relearn": ("extrap-text", ["relearn/relearn_data.txt"], ["n"], {"n"}, "p"),
    "lulesh_caliper_opal": ("caliper", ["lulesh_caliper_opal/*.cali"], [], set(), "p"),
    "mm_cubeset": ("cube", ["scorep_counters/mm_cubeset/*/profile.cubex"], ["x"], set(), "x"),
    # LAMMPS profiled here at 10 P (data/README.md): real pools without profiling anew
    **{f"lammps_{name}": ("measurements", [f"lammps/{folder}/measurements.csv"], ["size"],
                          set(), "p") for name, folder in LAMMPS.items()},
    **{f"lammps_{name}_comm": ("communication", [f"lammps/{folder}/comm.csv"], ["size"], set(),
                               "p") for name, folder in LAMMPS.items()},
}

def _nearest(pool: list[float], wanted: float) -> float:
    """The pool's value nearest to ``wanted`` on a log scale (the larger on a tie)."""
    return min(pool, key=lambda v: (abs(np.log(v / wanted)), -v))


def by_uncertainty(fit: SeriesFit, rows: pd.DataFrame, params: list[str], pool: list[float],
                   axis: str) -> float:
    """The pool value where the current fit's 90% interval is widest (at the other
    parameters' worst); ties go to the larger value, as in apmt.refine.choose_p."""
    candidates = rows[rows[axis].isin(pool)]
    bounds = fit.predict(point_values(candidates, params))
    ranking = rank_by_uncertainty(candidates[axis].to_numpy(float), bounds)
    worst = ranking.groupby("p")["uncertainty"].max().round(TIE_DECIMALS)
    return float(worst.sort_index(ascending=False).idxmax())


def target_width_after(key: tuple, rows: pd.DataFrame, params: list[str], fit: SeriesFit,
                       candidate: Mapping[str, np.ndarray], target: Mapping[str, np.ndarray],
                       per_rank: frozenset[str] = frozenset()) -> float:
    """The expected relative 90% interval at the target (its worst point) once a run is
    added at the candidate points: the mean over that run landing one residual sigma above
    and below the current fit's prediction.

    Active learning's expected variance reduction with the fit engine's own refit and
    intervals: a run helps where it narrows the prediction the user asked for, not where the
    model is merely least certain (that is nearly always the farthest P). A noise-free
    pseudo-run would favour points next to the measured ones, where it only shrinks the
    cross-validated error. choose_p does not use it: benchmarks/refinement.py measured it
    no better than fixed choices, hence it lives here and not in apmt.refine.
    """
    pseudo = pd.DataFrame({k: np.asarray(v, float) for k, v in candidate.items()})
    predicted = fit.predict(dict(candidate))[0]
    widths = []
    for shift in PSEUDO_SHIFTS:
        pseudo["value"] = predicted * np.exp(shift * fit.sigma)
        refit = fit_points(key, pd.concat([rows, pseudo], ignore_index=True), params,
                           "refinement", per_rank)
        widths.append(np.nanmax(relative_width(refit.predict(dict(target)))))
    return float(np.mean(widths))


def by_target_width(key: tuple, fit: SeriesFit, rows: pd.DataFrame, params: list[str],
                    per_rank: frozenset[str], measured: list[float], pool: list[float],
                    axis: str, target: float) -> float:
    """The pool value whose run, valued at the current fit's prediction, would narrow the
    target's 90% interval most (target_width_after); ties go to the smaller."""
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
APMT = "uncertainty"
STRATEGIES = ("target_width", APMT, *FIXED)
POOL_TEMPLATE = """name: {name}
command: "lmp -in in.lj -var x {{size}} -var y {{size}} -var z {{size}} -var steps 100"
setup: [{input}]
p: {p}
params: {{size: [0.6]}}
repetitions: {repetitions}
backend: {backend}
machine: generic-x86-2core-vm
timeout_s: 600
env: {{OMP_NUM_THREADS: 1}}
"""
POOLS = {
    # study: (P, repetitions, backend): wall time and MPI operations at P = 1..8; and the
    # counters (cachegrind, exact whatever the load) and per-function time (perf cpu-clock,
    # on-CPU time, so valid beyond the cores) up to P = 32, on LAMMPS' process grids
    "lammps-p1-8": ([1, 2, 3, 4, 5, 6, 7, 8], 3, "none"),
    "lammps-p1-32": ([1, 2, 3, 4, 6, 8, 12, 16, 24, 32], 1, "auto"),
}


def refine_series(key: tuple, rows: pd.DataFrame, params: list[str], per_rank: frozenset[str],
                  axis: str, tolerance: float, strategy: str) -> dict:
    """Runs one strategy adds before the target is predicted within ``tolerance``."""
    values = sorted(rows[axis].unique())
    measured, pool, target = list(values[:START]), list(values[START:-1]), values[-1]
    target_rows = rows[rows[axis] == target]
    added = 0
    while True:
        fit = calibrated_fit(key, rows[rows[axis].isin(measured)], params, per_rank)
        predicted = fit.predict(point_values(target_rows, params))[0]
        error = float(np.max(np.abs(predicted / target_rows["value"].to_numpy(float) - 1)))
        if error <= tolerance or not pool:
            return {"runs": added, "reached": error <= tolerance, "final_error": error,
                    "added": ",".join(f"{v:g}" for v in measured[START:])}
        if strategy == "target_width":
            chosen = by_target_width(key, fit, rows, params, per_rank, measured, pool, axis,
                                     target)
        elif strategy == APMT:
            chosen = by_uncertainty(fit, rows, params, pool, axis)
        else:
            chosen = FIXED[strategy](measured, pool, target)
        measured.append(chosen)
        pool.remove(chosen)
        added += 1


def published_set(name: str, data: Path) -> tuple[pd.DataFrame, str]:
    fmt, patterns, *_ = SETS[name]
    files = sorted(f for pattern in patterns for f in data.glob(pattern))
    if fmt in ("measurements", "communication"):
        return read_table(files[0], fmt), fmt
    return import_profiles(fmt, files)


def calibrated_fit(key: tuple, rows: pd.DataFrame, params: list[str],
                   per_rank: frozenset[str]) -> SeriesFit:
    """The series fitted as a table of its own (apmt.fit_table), so that its intervals are
    calibrated on its own backtest as the workflow's are on their table's."""
    fitted = fit_all(rows, params, "benchmark", per_rank)
    if key not in fitted.fits:
        raise ApmtError(f"benchmark: series {key} {fitted.left_out.get(key, 'not fitted')}")
    return fitted.fits[key]


def run_set(name: str, table: pd.DataFrame, kind: str, params: list[str],
            per_rank: frozenset[str], axis: str, tolerances: list[float]) -> pd.DataFrame:
    """Every strategy on every series of one table (see the protocol above)."""
    series = series_points(table, kind, params)
    if kind == "measurements" and APP_KERNEL in set(series["kernel"]):
        series = series[series["kernel"].isin(modelled_kernels(series, params))]
    rows = []
    for key, group in series.groupby(KEYS, sort=True):
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


def modelled_kernels(series: pd.DataFrame, params: list[str]) -> list[str]:
    """The kernels apmt models on their own (apmt.model.MODELLED: key, non-scalable and the
    application): a profile's thousands of small functions are summed into others."""
    classes = classify(series, params, app_kernel=APP_KERNEL)
    return classes.loc[classes["class"].isin(MODELLED), "kernel"].tolist()


def run_pool(folder: Path) -> dict[str, tuple[pd.DataFrame, str]]:
    """LAMMPS profiled on this machine by apmt at the pools' P (raw runs are reused)."""
    folder.mkdir(parents=True, exist_ok=True)
    sets = {}
    for name, (process_counts, repetitions, backend) in POOLS.items():
        study = folder / f"{name}.yaml"
        write_text_atomic(POOL_TEMPLATE.format(
            name=name, input=REPOSITORY / "data" / "lammps" / "in.lj", p=process_counts,
            repetitions=repetitions, backend=backend), study)
        if cli_main(["profile", str(study), "--results", str(folder / "results")]) != 0:
            raise SystemExit(f"apmt profile {study} failed")
        tables = folder / "results" / name
        label = name.replace("-", "_")
        sets[label] = (read_table(tables / "measurements.csv"), "measurements")
        sets[f"{label}_comm"] = (read_table(tables / "comm.csv", "communication"),
                                 "communication")
    return sets


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Per set and tolerance, over the series that need refinement (error at the target
    above the tolerance before any run is added): per strategy the series, the pool, the mean
    runs added, the success rate, the mean runs of those that got there, and in how many
    series apmt's choice needed fewer and more runs than the strategy; then the same over all
    sets (set ``all``)."""
    # within the tolerance at once (no run added, reached) is the same for every strategy
    needing = results[(results["runs"] > 0) | ~results["reached"]]
    pooled = needing.assign(set="all", series=needing["set"] + ":" + needing["series"])
    return pd.concat([_summary(needing), _summary(pooled)], ignore_index=True)


def _summary(results: pd.DataFrame) -> pd.DataFrame:
    by = ["set", "tolerance"]
    keys = [*by, "strategy"]
    grouped = results.groupby(keys, sort=False)
    table = grouped.agg(series=("series", "nunique"), pool=("pool", "mean"),
                        mean_runs=("runs", "mean"), success=("reached", "mean"))
    table["runs_if_reached"] = results[results["reached"]].groupby(keys, sort=False)[
        "runs"].mean()
    runs = results.pivot_table(index=[*by, "series"], columns="strategy", values="runs")
    difference = runs.sub(runs[APMT], axis=0)   # > 0: the strategy needed more than apmt
    table["apmt_fewer"] = (difference > 0).groupby(level=by).sum().stack()
    table["apmt_more"] = (difference < 0).groupby(level=by).sum().stack()
    table["sign_p"] = [sign_test(fewer, more) for fewer, more
                       in zip(table["apmt_fewer"], table["apmt_more"], strict=True)]
    return table.reset_index()


def sign_test(fewer: int, more: int) -> float:
    """Two-sided sign test of the paired counts: how likely a split at least this uneven is
    if neither strategy needed fewer runs more often (1 when they never differ)."""
    return float(stats.binomtest(int(fewer), int(fewer + more)).pvalue) if fewer + more else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=REPOSITORY / "data")
    parser.add_argument("--tolerances", default="10,20", help="percent, comma-separated")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--run-pool", type=Path, metavar="DIR", nargs="+", default=[],
                        help="also profile LAMMPS at P = 1..8 and 1..32 into DIR; several "
                             "folders are independent realizations (sets get _run1, _run2, ..)")
    parser.add_argument("-o", "--output", type=Path, help="per-series results (CSV)")
    args = parser.parse_args()
    tolerances = [float(t) / 100 for t in args.tolerances.split(",")]
    started = time.perf_counter()
    frames = []
    for name in filter(None, args.sets.split(",")):
        _, _, params, per_rank, axis = SETS[name]
        frames.append(run_set(name, *published_set(name, args.data), params,
                              frozenset(per_rank), axis, tolerances))
    for index, folder in enumerate(args.run_pool, start=1):
        suffix = f"_run{index}" if len(args.run_pool) > 1 else ""
        for name, (table, kind) in run_pool(folder).items():
            frames.append(run_set(name + suffix, table, kind, ["size"], frozenset(), "p",
                                  tolerances))
    results = pd.concat(frames, ignore_index=True)
    table = summarise(results)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}", na_rep="-"))
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.output:
        results.to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
