"""Problem-size prediction on LAMMPS: fit at smaller sizes, predict a larger one.

Usage: python benchmarks/problem_size.py [DATA_DIR]
DATA_DIR defaults to the repository's data/ folder (data/README.md says where each set comes
from). apmt's model (Eq. 2, with the MPI traces) is fitted on the LJ melt at size 0.6 and 0.8
(lammps/p1-32 and lammps/lj-size0.8-p1-32, P <= 8), and at size 0.8 alone, and predicts size
1.0 at P = 1, 2, 4, 8 (lammps/lj-size1.0-p1-8, profiled for this): once with the work per rank
``size**3 / p`` (the atoms per rank: apmt.work) and once with the default ``size / p``; the
naive power law (apmt.modelers' powerlaw, a * P^b * size^c per series) beside them; and in
counter mode with the work expression (each key kernel's time as its terms of Eq. 2: the
instructions' fit x CPI_core / f plus BF_mem x T_mem, cycles derived from the sampled time and
the machine file's clock). Prints
the relative error of each key kernel's time and instructions and of the application's time
per P, then the medians.

The sampled time of size 0.6 is not comparable with the others: that set ran on another host
(2596 MHz, the others 2445 MHz) where LAMMPS did 1.9 times the instructions per second, so
between sizes 0.6 and 0.8 the time grows 4.5-fold where the atoms (and the instructions,
counted by cachegrind, host-independent) grow 2.4-fold. The instructions show what the work
expression does; the time of the second scenario does so on one kind of host.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.diagnose.scaling import components, kernel_times
from apmt.machine import load_machine
from apmt.model import Model, build_model
from apmt.modelers import MODELERS
from apmt.predict import predict
from apmt.series import point_values, points
from apmt.tables import APP_KERNEL, TIME_METRIC, read_table

REPOSITORY = Path(__file__).resolve().parents[1]
SCENARIOS = {"sizes 0.6, 0.8": ("lammps/p1-32", "lammps/lj-size0.8-p1-32"),
             "size 0.8": ("lammps/lj-size0.8-p1-32",)}
TARGET = "lammps/lj-size1.0-p1-8"
WORK = "size**3 / p"
MACHINE = "generic-x86-2core-vm"
MAX_P = 8
PARAMS = ["size"]
METRICS = (TIME_METRIC, "instructions")


def _read(data: Path, folders: tuple[str, ...], name: str, kind: str) -> pd.DataFrame:
    frames = [read_table(data / folder / name, kind, PARAMS) for folder in folders]
    table = pd.concat(frames, ignore_index=True)
    return table[table["p"] <= MAX_P].reset_index(drop=True)


def errors(data: Path) -> pd.DataFrame:
    """Per scenario (the sizes fitted), method (apmt with the work expression, apmt with
    size/p, powerlaw), metric, series (the key kernels' and the application's) and target
    P: measured and predicted value at size 1.0 and the relative error."""
    measured = points(read_table(data / TARGET / "measurements.csv", "measurements", PARAMS),
                      PARAMS)
    return pd.concat([_scenario(data, folders, measured).assign(scenario=name)
                      for name, folders in SCENARIOS.items()], ignore_index=True)


def _scenario(data: Path, folders: tuple[str, ...], measured: pd.DataFrame) -> pd.DataFrame:
    measurements = _read(data, folders, "measurements.csv", "measurements")
    comm = _read(data, folders, "comm.csv", "communication")
    models = {f"apmt work={WORK}": build_model(measurements, PARAMS, source="lammps",
                                                comm=comm, work=WORK),
              "apmt size/p": build_model(measurements, PARAMS, source="lammps", comm=comm),
              f"apmt counters work={WORK}": build_model(
                  measurements, PARAMS, source="lammps", comm=comm, work=WORK,
                  machine=load_machine(MACHINE), mode="counters")}
    keys = sorted({row["kernel"] for model in models.values() for row in model.kernels_of("key")})
    measured = measured[measured["metric"].isin(METRICS)
                        & measured["kernel"].isin([*keys, APP_KERNEL])]
    targets = measured[["p", "size"]].drop_duplicates().sort_values("p")
    frames = []
    for method, model in models.items():
        predicted = _with_kernel_terms(model, targets, predict(model, targets)[
            ["kernel", "metric", "p", "size", "predicted"]])
        frames.append(measured.merge(predicted, on=["kernel", "metric", "p", "size"])
                      .rename(columns={"value": "measured"}).assign(method=method))
    train = points(measurements, PARAMS).merge(measured[["kernel", "metric"]].drop_duplicates())
    frames.append(MODELERS["powerlaw"].predict(train, measured, PARAMS, frozenset(), "lammps")
                  .assign(method="powerlaw"))
    result = pd.concat(frames, ignore_index=True)[["method", "metric", "kernel", "p", "size",
                                                   "measured", "predicted"]]
    result["error"] = np.abs(result["predicted"] - result["measured"]) / result["measured"]
    return result


def _with_kernel_terms(model: Model, targets: pd.DataFrame, predicted: pd.DataFrame
                       ) -> pd.DataFrame:
    """In counter mode a kernel's time is its terms of Eq. 2 (instructions x CPI_core / f and
    its memory term; apmt.diagnose.scaling's components, summed by kernel_times), not its own
    time fit: those replace the time rows (one size per target set)."""
    if model.mode != "counters":
        return predicted
    counted = [kernel for kernel in model.cpi if model.kernel_metric(kernel) == "instructions"]
    times = kernel_times(model, components(model, point_values(targets, PARAMS)))
    summed = times[times["kernel"].isin(counted)][["kernel", "p", "time"]].rename(
        columns={"time": "predicted"}).merge(targets[["p", "size"]]).assign(metric=TIME_METRIC)
    keep = ~((predicted["metric"] == TIME_METRIC) & predicted["kernel"].isin(summed["kernel"]))
    return pd.concat([predicted[keep], summed], ignore_index=True)


def medians(result: pd.DataFrame) -> pd.DataFrame:
    """Per scenario, method and metric: the median relative error of the key kernels and of
    the application."""
    kind = np.where(result["kernel"] == APP_KERNEL, "application", "key kernels")
    return result.assign(series=kind).pivot_table(
        index=["scenario", "metric", "method"], columns="series", values="error",
        aggfunc="median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=REPOSITORY / "data")
    args = parser.parse_args()
    result = errors(args.data)
    with pd.option_context("display.width", 160, "display.max_rows", 200,
                           "display.float_format", "{:.4g}".format):
        print(result.sort_values(["scenario", "metric", "kernel", "p", "method"])
              .to_string(index=False))
        print()
        print(medians(result).to_string())


if __name__ == "__main__":
    main()
