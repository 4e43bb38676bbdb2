"""Sampling accuracy: Eq. 1 of "APMT: an automatic hardware counter-based performance modeling
tool for HPC applications" (Ding et al., 2020; paper 000, section 2), the NRMSE between the
share t_i a sampled profile gives each of its K functions and the share r_i a reference that
counts exactly gives it:

    NRMSE = sqrt(sum_i t_i (t_i - r_i)^2) / (max_i(t_i u r_i) - min_i(t_i u r_i))

The paper compares sampled time shares with gprof's instrumented ones and calls its NRMSE of
about 1e-4 a good match; it sets no limit. apmt warns above ``validity.max_nrmse`` of
lcpi.yaml (0.1: the shares off by about a tenth of themselves, the uncertainty that
``validity.min_samples`` accepts for one kernel).

The reference: a study measured with perf-clock and cachegrind (``auto`` without a PMU) has
sampled time per function (perf-clock) and exact, simulated instruction counts (cachegrind).
Each metric of a study comes from one backend, so no quantity is both sampled and counted
exactly: t_i are time shares, r_i instruction shares. A function's time is its instructions
times its CPI, and CPI differs between functions (a cache-missing loop against a
compute-bound one), so this NRMSE holds the sampling error plus those CPI differences: an
upper bound of the sampling error, never the sampling error alone. Beside it stands the NRMSE
that sampling noise alone would give (each share's binomial error from the run's samples), so
that a reader can tell the two apart. A study without an exact reference is not compared.

The functions compared are the application's own (``apmt.kernels.own_function``: not the
run-time system's buckets, MPI calls or the application's row), under one name for both tools
(``canonical``), present in both, each side's shares renormalised to that set (the OS kernel's
time, which cachegrind cannot see, drops out); functions below 0.1% in both are summed into one
term: at ~1,000 samples per second they hold a sample or two each.

Tidy table (``accuracy``), one row per run that has both:
    p, <params>, rep  the run; its reference is cachegrind's count at that point (the mean of
                      its repetitions: exact counts barely vary)
    functions         K, the terms of Eq. 1
    samples           cpu-clock samples of those functions in the run, all ranks (NaN: the
                      sampling rate is unknown)
    nrmse             Eq. 1
    noise             the NRMSE sampling noise alone would give (NaN without a rate)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from apmt.diagnose.lcpi import describe_point
from apmt.diagnose.section import Finding
from apmt.diagnose.study import StudyData
from apmt.kernels import own_function
from apmt.names import function_name
from apmt.series import per_run
from apmt.tables import APP_KERNEL, TIME_METRIC

REFERENCE_METRIC = "instructions"
FLOOR = 0.001
SMALL = "(below 0.1% in both)"
# glibc picks a string function's variant by CPU (valgrind's CPU lacks AVX-512): one name
LIBC_VARIANT = re.compile(r"^__(\w+?)_(avx|evex|sse|ssse|erms|unaligned)\w*$")
COLUMNS = ["functions", "samples", "nrmse", "noise"]


# --------------------------------------------------------------------------------- Eq. 1

def canonical(name: str) -> str:
    """One name per function for both tools (apmt.names.function_name), with glibc's variants
    of a string function as one function."""
    name = function_name(name)
    variant = LIBC_VARIANT.match(name)
    return variant[1] if variant else name


def shares(values: Mapping[str, float]) -> dict[str, float]:
    total = sum(values.values())
    return {name: value / total for name, value in values.items()}


def nrmse(t: Mapping[str, float], r: Mapping[str, float]) -> float:
    """Eq. 1: sqrt(sum t_i (t_i - r_i)^2) / (max - min of all t_i and r_i); NaN when every
    share is the same (no spread to normalise by)."""
    names = list(t)
    both = [t[n] for n in names] + [r[n] for n in names]
    spread = max(both) - min(both)
    if spread <= 0:
        return float("nan")
    return math.sqrt(sum(t[n] * (t[n] - r[n]) ** 2 for n in names)) / spread


def noise_nrmse(t: Mapping[str, float], samples: float) -> float:
    """The NRMSE that sampling noise alone would give: each share off by its binomial
    standard error sqrt(t (1 - t) / N)."""
    spread = max(t.values()) - min(t.values())
    if samples <= 0 or spread <= 0:
        return float("nan")
    return math.sqrt(sum(v * v * (1 - v) / samples for v in t.values())) / spread


def common(t_all: Mapping[str, float], r_all: Mapping[str, float]) -> tuple[dict, dict]:
    """Both sides over the functions present in both, renormalised, small ones lumped."""
    names = [n for n in t_all if n in r_all]
    t = shares({n: t_all[n] for n in names})
    r = shares({n: r_all[n] for n in names})
    small = [n for n in names if t[n] < FLOOR and r[n] < FLOOR]
    if small:
        t[SMALL] = sum(t.pop(n) for n in small)
        r[SMALL] = sum(r.pop(n) for n in small)
    return t, r


# --------------------------------------------------------------------------- in a study

def sampling_rate(provenance: dict) -> float | None:
    """Samples per second of the time metric: perf-clock's recorded frequency."""
    for backend in provenance.get("backends", []):
        rate = (backend.get("provenance") or {}).get("frequency_hz")
        if backend.get("name") == "perf-clock" and isinstance(rate, int | float) and rate > 0:
            return float(rate)
    return None


def sampled(provenance: dict) -> bool:
    """Whether perf-clock sampled the study's time per function."""
    return any(backend.get("name") == "perf-clock" for backend in provenance.get("backends", []))


def reference(provenance: dict) -> str | None:
    """The backend that counted instructions exactly beside the sampling (a simulator such as
    cachegrind), or None."""
    for backend in provenance.get("backends", []):
        metrics = (backend.get("provenance") or {}).get("metrics") or {}
        if backend.get("simulated") and REFERENCE_METRIC in metrics:
            return str(backend.get("name"))
    return None


def accuracy(data: StudyData) -> pd.DataFrame:
    """Eq. 1 per run: the sampled time shares against the reference's instruction shares at
    the run's point (the tidy table of the module's docstring)."""
    point = ["p", *data.params]
    own = _own_rows(data)
    counted = own[own["metric"] == REFERENCE_METRIC]
    references = {key: rows.groupby("kernel")["value"].mean().to_dict()
                  for key, rows in counted.groupby(point)}
    rate = sampling_rate(data.provenance)
    rows = []
    for key, run in own[own["metric"] == TIME_METRIC].groupby([*point, "rep"]):
        reference_values = references.get(tuple(key[:-1]))
        if reference_values:
            row = _compare(dict(zip(run["kernel"], run["value"], strict=True)),
                           reference_values, float(key[0]), rate)
            rows.append(dict(zip([*point, "rep"], key, strict=True)) | row)
    table = pd.DataFrame(rows, columns=[*point, "rep", *COLUMNS])
    return table[table["functions"] >= 2].reset_index(drop=True)


def _own_rows(data: StudyData) -> pd.DataFrame:
    """Time and instructions of the application's own functions per run (mean per rank),
    under one name for both tools."""
    app = data.provenance.get("app_kernel") or APP_KERNEL
    runs = per_run(data.table[data.table["metric"].isin([TIME_METRIC, REFERENCE_METRIC])],
                   data.params)
    runs = runs[runs["kernel"].map(lambda kernel: kernel != APP_KERNEL
                                   and own_function(kernel, app))]
    runs = runs.assign(kernel=runs["kernel"].map(canonical))
    keys = ["kernel", "metric", "p", *data.params, "rep"]
    return runs.groupby(keys, as_index=False, sort=False)["value"].sum()


def _compare(seconds: dict[str, float], instructions: dict[str, float], p: float,
             rate: float | None) -> dict:
    """One run's row: K, samples, Eq. 1 and the noise's share of it."""
    kept = [name for name in seconds if name in instructions]
    if sum(seconds[n] for n in kept) <= 0 or sum(instructions[n] for n in kept) <= 0:
        return {"functions": 0, "samples": np.nan, "nrmse": np.nan, "noise": np.nan}
    t, r = common(shares(seconds), shares(instructions))
    samples = sum(seconds[n] for n in kept) * p * rate if rate else np.nan
    noise = noise_nrmse(t, samples) if rate else np.nan
    return {"functions": len(t), "samples": samples, "nrmse": nrmse(t, r), "noise": noise}


# ----------------------------------------------------------------------------- findings

def findings(data: StudyData, limit: float) -> list[Finding]:
    """One line on the sampling's accuracy: the NRMSE per P against the threshold (a warning
    when a run is above it), or why it was not compared. Nothing without sampled time."""
    if not sampled(data.provenance):
        return []
    source = reference(data.provenance)
    if source is None:
        return [Finding("info", "sampling accuracy (Eq. 1 of paper 000) not checked: no exact "
                        "reference was measured beside the sampled time (cachegrind's "
                        "instruction counts or an instrumented run)")]
    table = accuracy(data)
    if table.empty:
        return [Finding("info", f"sampling accuracy (Eq. 1 of paper 000) not checked: no run "
                        f"has two or more of its own functions both sampled and counted by "
                        f"{source}")]
    above = table[table["nrmse"] > limit]
    head = (f"sampling vs reference (Eq. 1 of paper 000): NRMSE of the sampled time shares "
            f"against {source}'s instruction shares, worst run per point: "
            f"{_per_point(table, data.params)}; threshold {limit:.0%}")
    tail = (". Instruction shares are not time shares: the functions' CPI differences count "
            "in, so the sampling error is at most this")
    if above.empty:
        return [Finding("info", f"{head}{_noise(table)}{tail}")]
    return [Finding("warning", f"{head}, exceeded in {len(above)} of {len(table)} runs"
                    f"{_noise(table)}{_advice(above, limit)}{tail}")]


def _per_point(table: pd.DataFrame, params: list[str]) -> str:
    """'4.1% at P=1, 5.0% at P=2, ...': the worst run of each point, named by P and the
    parameters that vary."""
    varying = [name for name in params if table[name].nunique() > 1]
    worst = table.groupby(["p", *varying])["nrmse"].max()
    names = ["p", *varying]
    where = [describe_point(dict(zip(names, np.atleast_1d(key), strict=True)))
             for key in worst.index]
    return ", ".join(f"{value:.1%} at {at}" for at, value in zip(where, worst, strict=True))


def _noise(table: pd.DataFrame) -> str:
    noise = table["noise"].dropna()
    if noise.empty:
        return " (sampling rate unknown: the part of sampling noise not estimated)"
    return f"; sampling noise alone would give {noise.min():.1%}-{noise.max():.1%}"


def _advice(above: pd.DataFrame, limit: float) -> str:
    """Too few samples when the noise alone comes near the threshold, else the CPI."""
    noise = above["noise"].dropna()
    if not noise.empty and noise.median() > limit / 2:
        return (": the runs hold too few samples for their shares; measure longer runs or "
                "sample more often (perf-clock's frequency)")
    return (", so the rest comes from the functions' different CPI (only counted cycles show "
            "it) or from time the sampling misplaced: read the kernels' time shares with that "
            "error in mind")
