"""Counter mode against time mode on LAMMPS profiled here (issue: counter mode earns its place).

Usage: python benchmarks/counter_mode.py [DATA_DIR] [-o OUT_CSV]
DATA_DIR defaults to the repository's data/ folder. Sets: the three bundled LAMMPS sets of
10 P (data/README.md; perf cpu-clock time and cachegrind counters per function, PMPI traces),
each a realization of its own. Per set and origin (fit at P <= 4, 6, 8; predict the P above
it, 12 at most 2 steps on, and 16 and 32 from P <= 8), the model is built twice from the same
runs: ``counters`` (each key kernel as instructions x CPI_core / f + BF_mem x T_mem, cycles
derived from sampled time x the machine file's clock) and ``time`` (each kernel's time its own
fit). Prints the median absolute percentage error over held-out points of the application
time, the computation, and each key kernel's time (comp + memory), per mode; the held-out
breakdown of the counter-mode model (T_comp, memory, communication, others) at P = 16 and 32
from P <= 8; and each key kernel's BF_mem path.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.diagnose.scaling import components, kernel_times
from apmt.evaluate import split, validate
from apmt.machine import load_machine
from apmt.model import PARTS, build_model
from apmt.predict import assemble
from apmt.series import point_values, points

SETS = ("p1-32", "lj-size0.8-p1-32", "eam-cu-p1-32")
ORIGINS = ((4, (6, 8)), (8, (12, 16)), (8, (16, 32)))
PARAMS = ["size"]
MODES = ("counters", "time")


def load(data: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    folder = data / "lammps" / name
    return pd.read_csv(folder / "measurements.csv"), pd.read_csv(folder / "comm.csv")


def key_kernel_errors(model, measured: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """Each key kernel's predicted time (its terms of Eq. 2, apmt.diagnose.scaling's
    components, summed by kernel_times) against its measured mean time at the held-out points
    (one size per set)."""
    kernels = [row["kernel"] for row in model.kernels_of("key")]
    times = kernel_times(model, components(model, point_values(measured, PARAMS)))
    predicted = times[times["kernel"].isin(kernels)][["kernel", "p", "time"]].rename(
        columns={"time": "predicted"})
    times = points(test[test["metric"] == "time"], PARAMS)
    both = predicted.merge(times, on=["kernel", "p"])
    return both.assign(ape=100 * (both["predicted"] - both["value"]).abs() / both["value"])


def breakdown(model, measured: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Eq. 2's parts predicted at the held-out points (T_comp, memory, communication,
    others) beside the measured computation, communication and others."""
    parts = assemble(model, point_values(measured, PARAMS))
    frame = measured[["p"]].reset_index(drop=True).assign(
        **{part: parts[part][0] for part in PARTS}, time=parts["time"][0])
    observed = rows.pivot_table(index="p", columns="metric", values="measured")
    return frame.merge(observed.add_prefix("measured_").reset_index(), on="p")


def run(data: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    machine = load_machine("generic-x86-2core-vm")
    errors, breakdowns, paths = [], [], []
    for name in SETS:
        table, comm = load(data, name)
        for top, targets in ORIGINS:
            kept = [p for p in table["p"].unique() if p <= top] + list(targets)
            runs, comm_runs = table[table["p"].isin(kept)], comm[comm["p"].isin(kept)]
            holdout = "p=" + ",".join(str(p) for p in targets)
            origin = f"P<={top} -> {','.join(map(str, targets))}"
            for mode in MODES:
                options = {"machine": machine, "app_kernel": "<app>", "mode": mode}
                rows, _ = validate(runs, PARAMS, holdout, 0.1, name, comm=comm_runs, **options)
                for metric, group in rows.groupby("metric"):
                    errors.append({"set": name, "origin": origin, "mode": mode,
                                   "what": metric, "points": len(group),
                                   "ape": group["ape"].median()})
                held = {"p": [float(p) for p in targets]}
                train, test = split(runs, held)
                model = build_model(train, PARAMS, source=name, comm=split(comm_runs, held)[0],
                                    **options)
                measured = test[test["metric"] == "time"][["p", *PARAMS]].drop_duplicates()
                kernel_rows = key_kernel_errors(model, measured, test)
                for kernel, group in kernel_rows.groupby("kernel"):
                    errors.append({"set": name, "origin": origin, "mode": mode,
                                   "what": kernel, "points": len(group),
                                   "ape": group["ape"].median()})
                if mode == "counters" and targets == (16, 32):
                    breakdowns.append(breakdown(model, measured, rows).assign(set=name))
                    paths += [{"set": name, "kernel": kernel, "path": entry.path,
                               "cpi_core": entry.cpi, "bf_mem": entry.bf_mem, "why": entry.why}
                              for kernel, entry in model.cpi.items()
                              if model.classes.get(kernel) == "key"]
    return pd.DataFrame(errors), pd.concat(breakdowns), pd.DataFrame(paths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path,
                        default=Path(__file__).resolve().parents[1] / "data")
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    errors, breakdown, paths = run(args.data)
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.max_colwidth", 60):
        kind = np.where(errors["what"].isin(["time", "computation_time", "comm_time",
                                             "others_time"]), errors["what"], "key kernel")
        pooled = errors.assign(kind=kind).pivot_table(index="kind", columns="mode",
                                                      values="ape", aggfunc="median")
        print("median APE (%) over sets and origins, by what is predicted:")
        print(pooled.round(2))
        print("\nper set and origin:")
        print(errors.pivot_table(index=["set", "origin", "what"], columns="mode",
                                 values="ape").round(2))
        print("\ncounter mode's breakdown at the held-out P = 16, 32 (fit P <= 8):")
        print(breakdown.round(3).to_string(index=False))
        print("\nkey kernels' BF_mem paths:")
        print(paths.round(3).to_string(index=False))
    if args.output:
        errors.to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
