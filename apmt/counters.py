"""Counter mode from what a machine can measure (paper 000, Eqs. 2-4): each kernel's cycles,
its hits per memory level, and its CPI split into the core's part and the memory term.

Cycles are counted (a PMU's ``cycles``) or derived: a kernel's sampled on-CPU time times the
clock of the machine file (the probe measures it), marked ``derived``. Hits per level are
the PMU's ``l1_hits``, ``l2_hits``, ``llc_hits`` and ``llc_misses`` (memory accesses), or
cachegrind's: its ``l1_hits`` (loads that hit D1), last-level hits = D1 misses - last-level
misses, and its last-level misses. Cachegrind simulates no second level, so what would hit
L2 counts as a last-level hit there: T_mem is then an upper estimate.

CPI = CPI_core + BF_mem * T_mem * f / instructions, per run. A kernel's path to BF_mem is:
    counted stalls   stall_cycles counted: CPI_core = (cycles - stalls) / instructions and
                     the memory term is the stalls' own fit (model.py);
    lower frequency  solved from a rerun at a lower clock (Eq. 5, apmt.refine);
    across runs      where neither exists, least squares of CPI on T_mem per instruction over
                     the runs already made (P, sizes, repetitions): the data per rank moves
                     between cache levels as P changes, so T_mem per instruction moves, and
                     CPI moves with it by BF_mem; taken when the 90% interval of the slope
                     is narrow and within [0, 1];
    none             the data does not determine it: CPI is the mean over runs (memory time
                     inside it) and the memory term is zero.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from apmt.fit import t_quantile
from apmt.machine import Machine
from apmt.tables import TIME_METRIC

LEVELS = {"l1_hits": "l1", "l2_hits": "l2", "llc_hits": "llc", "llc_misses": "memory"}
MAX_BF_WIDTH = 0.5          # a 90% interval of BF_mem wider than this says too little
BF_RANGE = (0.0, 1.0)       # the share of memory time not overlapped
MIN_RUNS = 3

COUNTED, FREQUENCY, ACROSS, NONE = "counted stalls", "lower frequency", "across runs", "none"


@dataclass(frozen=True)
class Counters:
    """How a table's counters were completed: the cycles' origin (``counted``, or
    ``derived`` with the clock), the memory levels Eq. 3 sums, and notes for the model."""

    cycles: str
    clock_ghz: float | None
    levels: tuple[str, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"cycles": self.cycles, "clock_ghz": self.clock_ghz, "levels": list(self.levels),
                "notes": list(self.notes)}


def complete(table: pd.DataFrame, machine: Machine | None) -> tuple[pd.DataFrame, Counters]:
    """The table with cachegrind's last-level hits added (D1 misses - last-level misses),
    and how its counters serve counter mode; without a machine file (no latencies, no
    clock) the table as it is."""
    metrics = set(table["metric"])
    notes = []
    if machine is None:     # no latencies: no memory term to complete
        return table, Counters("counted" if "cycles" in metrics else "none", None,
                               tuple(metric for metric in LEVELS if metric in metrics), ())
    if "llc_hits" not in metrics and {"l1d_misses", "llc_misses"} <= metrics:
        table = pd.concat([table, _llc_hits(table)], ignore_index=True)
        metrics.add("llc_hits")
        notes.append("last-level hits = D1 misses - last-level misses (cachegrind, which "
                     "simulates no L2: what would hit L2 counts as a last-level hit, so T_mem "
                     "is an upper estimate)")
    levels = tuple(metric for metric in LEVELS if metric in metrics)
    if "cycles" in metrics:
        return table, Counters("counted", None, levels, tuple(notes))
    if not {TIME_METRIC, "instructions"} <= metrics:
        return table, Counters("none", None, levels, tuple(notes))
    clock = float(machine.frequency_ghz)
    notes.append(f"cycles derived, not counted: each kernel's sampled on-CPU time x "
                 f"{clock:g} GHz (the machine file's clock)")
    return table, Counters("derived", clock, levels, tuple(notes))


def _llc_hits(table: pd.DataFrame) -> pd.DataFrame:
    """Last-level hits per row of cachegrind's D1 misses, where both counts exist (of a
    points table, as spread as the more spread of the two)."""
    keys = [c for c in table.columns if c not in ("metric", "value", "spread")]
    rows = table[table["metric"].isin(["l1d_misses", "llc_misses"])]
    wide = rows.pivot_table(index=keys, columns="metric", values="value",
                            aggfunc="mean").dropna()
    hits = (wide["l1d_misses"] - wide["llc_misses"]).clip(lower=0.0).rename("value")
    if "spread" in table.columns:
        spread = rows.pivot_table(index=keys, columns="metric", values="spread", aggfunc="max")
        hits = pd.concat([hits, spread.max(axis=1).rename("spread")], axis=1, join="inner")
    return hits.reset_index().assign(metric="llc_hits")[table.columns]


def per_run(table: pd.DataFrame, counters: Counters, machine: Machine | None,
            params: list[str]) -> pd.DataFrame:
    """Per kernel and run (P and parameters, repetitions averaged): cycles, instructions,
    stall_cycles (when counted), CPI and T_mem in cycles per instruction (Eq. 3 / I).
    Empty when the table has no cycles, counted or derived."""
    if counters.cycles == "none":
        return pd.DataFrame()
    wide = table.pivot_table(index=["kernel", "p", *params], columns="metric", values="value",
                             aggfunc="mean")
    if counters.cycles == "derived":
        wide["cycles"] = wide[TIME_METRIC] * counters.clock_ghz * 1e9
    wide = wide.dropna(subset=["cycles", "instructions"])
    wide = wide[(wide["instructions"] > 0) & (wide["cycles"] > 0)]
    wide["cpi"] = wide["cycles"] / wide["instructions"]
    if machine is not None and {"l1_hits", "llc_misses"} <= set(counters.levels):
        wide["t_mem"] = memory_cycles(wide, machine, counters.levels) / wide["instructions"]
    return wide


def memory_cycles(wide: pd.DataFrame, machine: Machine, levels: tuple[str, ...],
                  clock_ghz: pd.Series | float | None = None) -> pd.Series:
    """Eq. 3 in cycles: hits per level times the machine's latencies. Caches are clocked with
    the core, so their latencies in cycles hold at any clock; memory's is fixed in ns, so at
    another ``clock_ghz`` its cycles scale with it."""
    latency = machine.latency_cycles
    memory = latency["memory"] if clock_ghz is None else machine.group("latency_ns").get(
        "memory", latency["memory"] / float(machine.frequency_ghz)) * clock_ghz
    return sum(wide[metric].fillna(0.0) * (memory if metric == "llc_misses" else
                                           latency[LEVELS[metric]]) for metric in levels)


def fitted_levels(levels: tuple[str, ...], fitted: set[str], zero: set[str]
                  ) -> tuple[list[str] | None, str]:
    """The levels a kernel's T_mem sums at new points: those fitted; a level measured zero
    in every run adds nothing. None, with why, when a level is neither."""
    missing = [metric for metric in levels if metric not in fitted and metric not in zero]
    if missing:
        return None, f"{missing[0]} has no fit, so T_mem cannot be predicted"
    return [metric for metric in levels if metric in fitted], ""


@dataclass(frozen=True)
class Split:
    """One kernel's CPI split: CPI_core and BF_mem with their 90% intervals, the predictive
    spread of CPI over runs (``cpi_sd``), the path taken and why."""

    path: str
    cpi_core: float
    bf_mem: float | None
    cpi_core_interval: tuple[float, float] | None
    bf_mem_interval: tuple[float, float] | None
    cpi_sd: float
    runs: int
    why: str


def predictive_sd(residuals: np.ndarray, dof: int) -> float:
    """The spread of one more run's CPI about the estimate from ``residuals`` (n of them,
    ``dof`` degrees of freedom left): sqrt(SSE / dof) * sqrt(1 + 1/n); NaN without a
    degree of freedom."""
    if dof < 1:
        return float("nan")
    return float(np.sqrt(np.sum(residuals**2) / dof * (1 + 1 / len(residuals))))


def whole(runs: pd.DataFrame, why: str) -> Split:
    """The path ``none``: one kernel's mean CPI over its runs (column cpi), memory time
    inside it, with its predictive spread and why no split was taken."""
    cpi = runs["cpi"].to_numpy(float)
    return Split(NONE, float(cpi.mean()), None, None, None,
                 predictive_sd(cpi - cpi.mean(), len(cpi) - 1), len(cpi), why)


def split(runs: pd.DataFrame) -> Split:
    """CPI_core and BF_mem of one kernel from its runs (columns cpi, t_mem), by least squares
    across runs; the path ``none`` with the mean CPI when the runs do not determine them."""
    cpi = runs["cpi"].to_numpy(float)
    n = len(cpi)
    none = whole(runs, "")
    if "t_mem" not in runs.columns or runs["t_mem"].isna().any():
        return replace(none, why="no hit counts per memory level, so no T_mem")
    t_mem = runs["t_mem"].to_numpy(float)
    if n < MIN_RUNS:
        return replace(none, why=f"{n} runs; at least {MIN_RUNS} are needed")
    variation = float(np.ptp(t_mem) / t_mem.mean()) if t_mem.mean() > 0 else 0.0
    if variation < 1e-3:
        return replace(none, why=f"T_mem per instruction varies by {variation:.1%} across "
                       "the runs")
    fit = stats.linregress(t_mem, cpi)
    half = t_quantile(n - 2) * np.array([fit.stderr, fit.intercept_stderr])
    bf = (fit.slope - half[0], fit.slope + half[0])
    core = (fit.intercept - half[1], fit.intercept + half[1])
    residual_sd = predictive_sd(cpi - fit.intercept - fit.slope * t_mem, n - 2)
    shown = (f"BF_mem {fit.slope:.2g} in [{bf[0]:.2g}, {bf[1]:.2g}] over {n} runs whose T_mem "
             f"per instruction varies by {variation:.0%}")
    if bf[1] - bf[0] > MAX_BF_WIDTH or bf[0] < BF_RANGE[0] - MAX_BF_WIDTH / 2 or \
            bf[1] > BF_RANGE[1] + MAX_BF_WIDTH / 2 or fit.intercept <= 0:
        return replace(none, why=f"not determined: {shown}"
                       + ("; CPI_core would be negative" if fit.intercept <= 0 else ""))
    clamped = min(max(float(fit.slope), BF_RANGE[0]), BF_RANGE[1])
    core_value = float(fit.intercept + (fit.slope - clamped) * t_mem.mean())
    return Split(ACROSS, core_value, clamped, (float(core[0]), float(core[1])),
                 (float(bf[0]), float(bf[1])), residual_sd, n,
                 shown + ("" if clamped == fit.slope else f"; taken as {clamped:g}"))

