"""Load imbalance from per-rank measurements (paper 001, 3.3.1): which kernel makes which
rank slow, and how long the other ranks wait for it in MPI.

Two tables, both from measured runs only (a model averages ranks and cannot show this):

kernel imbalance: one row per kernel and point (``p`` and the parameters).
    kernel, p, <params>, ranks, mean (time per rank averaged over ranks, s), max (the slowest
    rank's time, s), imbalance (max / mean), heavy_rank (the slowest rank), share (mean over
    the rank's own time, see below)
MPI wait: one row per rank and point.
    p, <params>, rank, mpi_time (s in MPI, from the communication table), own_time (the
    rank's time: its sampled time outside MPI plus its MPI time, s), wait_share (mpi_time /
    own_time), top_op (the operation it spent most MPI time in)

Times are means over repetitions. A rank with no row for a kernel never entered it: zero.
The rank's own time leaves out the run's start-up (launcher, profiler), which the wall time
holds for every rank alike and which would dilute every share; without sampled functions the
wall time (kernel ``<app>``) is the denominator.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from apmt.diagnose.section import Finding, Section
from apmt.display import seconds
from apmt.model import UNACCOUNTED
from apmt.names import KERNEL, is_mpi
from apmt.tables import APP_KERNEL, TIME_METRIC

# max/mean over ranks above which a kernel counts as imbalanced: the slowest rank 20% above
# the mean. Sampled time at ~1 kHz varies by a few percent between ranks doing equal work
# (LAMMPS' PairLJCut::compute here: max/mean 1.02-1.05 at P=2 to 4), so 1.2 is well clear
# of noise and already idles the other ranks for about a sixth of that kernel's time.
IMBALANCE_LIMIT = 1.2
# Share of a rank's own time in MPI above which it counts as waiting. Paper 001 changed
# OpenFOAM's decomposition at 15% idle time and gained 15%; 10% flags the case before that.
WAIT_LIMIT = 0.10
MAX_KERNELS = 3        # imbalanced kernels named per point, the costliest first
TITLE = "Load imbalance"


def kernel_imbalance(measurements: pd.DataFrame, comm: pd.DataFrame | None,
                     params: list[str]) -> pd.DataFrame:
    """Per kernel and point: the slowest rank against the mean (columns in the docstring)."""
    point = ["p", *params]
    per_rank = _rank_times(_computing(measurements), params)
    if per_rank.empty:
        return pd.DataFrame(columns=["kernel", *point, "ranks", "mean", "max", "imbalance",
                                     "heavy_rank", "share"])
    grouped = per_rank.groupby(["kernel", *point], sort=False)["value"]
    table = grouped.agg(ranks="count", mean="mean", max="max").reset_index()
    heavy = per_rank.loc[grouped.idxmax(), ["kernel", *point, "rank"]]
    table = table.merge(heavy.rename(columns={"rank": "heavy_rank"}), on=["kernel", *point])
    table["imbalance"] = table["max"] / table["mean"]
    own = own_times(measurements, comm, params).groupby(point)["own_time"].mean()
    table["share"] = table["mean"] / table.join(own, on=point)["own_time"]
    table = table[["kernel", *point, "ranks", "mean", "max", "imbalance", "heavy_rank",
                   "share"]]
    return table.sort_values([*point, "share"], ascending=[True] * len(point) + [False],
                             ignore_index=True)


def mpi_wait(measurements: pd.DataFrame, comm: pd.DataFrame,
             params: list[str]) -> pd.DataFrame:
    """Per rank and point: time in MPI and its share of the rank's own time."""
    own = own_times(measurements, comm, params)
    point = ["p", *params]
    table = own.groupby([*point, "rank"], as_index=False)[["mpi_time", "own_time"]].mean()
    table["wait_share"] = table["mpi_time"] / table["own_time"]
    by_op = comm.groupby([*point, "rank", "op"], as_index=False)["time"].sum()
    top = by_op.loc[by_op.groupby([*point, "rank"])["time"].idxmax(), [*point, "rank", "op"]]
    table = table.merge(top.rename(columns={"op": "top_op"}), on=[*point, "rank"], how="left")
    return table.sort_values([*point, "rank"], ignore_index=True)


def own_times(measurements: pd.DataFrame, comm: pd.DataFrame | None,
              params: list[str]) -> pd.DataFrame:
    """Per run and rank: mpi_time and own_time (sampled time outside MPI plus MPI time, or
    the wall time when no function was sampled)."""
    run = ["p", *params, "rep"]
    measurements = _with_rep(measurements)
    sampled = _rank_times(_computing(measurements), params, keep_runs=True)
    busy = sampled.groupby([*run, "rank"])["value"].sum()
    if busy.empty:
        app = measurements[(measurements["kernel"] == APP_KERNEL)
                           & (measurements["metric"] == TIME_METRIC)]
        busy = app.groupby([*run, "rank"])["value"].mean()
    frame = busy.rename("busy").reset_index().assign(mpi_time=0.0)
    if comm is not None and not comm.empty and "rank" in comm.columns:
        mpi = _with_rep(comm).groupby([*run, "rank"])["time"].sum()
        frame["mpi_time"] = frame.join(mpi, on=[*run, "rank"])["time"].fillna(0.0)
    if not sampled.empty:   # the wall time already holds the waits
        frame["own_time"] = frame["busy"] + frame["mpi_time"]
    else:
        frame["own_time"] = frame["busy"]
    return frame.drop(columns="busy")


def _with_rep(table: pd.DataFrame) -> pd.DataFrame:
    """A table without repetitions is one repetition."""
    return table if "rep" in table.columns else table.assign(rep=1)


def _computing(measurements: pd.DataFrame) -> pd.DataFrame:
    """Time rows of the ranks' own functions: not the application, MPI or unaccounted time."""
    rows = measurements[measurements["metric"] == TIME_METRIC]
    kernels = rows["kernel"]
    mpi = kernels.map(is_mpi, na_action="ignore").fillna(False).astype(bool)
    own = ~kernels.isin([APP_KERNEL, UNACCOUNTED]) & ~mpi
    return rows[own]


def _rank_times(rows: pd.DataFrame, params: list[str], keep_runs: bool = False) -> pd.DataFrame:
    """Time per kernel, point and rank (0 for a rank of the run without a row), averaged over
    repetitions unless ``keep_runs``."""
    if "rank" not in rows.columns or rows.empty:
        return pd.DataFrame(columns=["kernel", "p", *params, "rep", "rank", "value"])
    rows = _with_rep(rows)
    run = ["p", *params, "rep"]
    wide = rows.pivot_table(index=["kernel", *run], columns="rank", values="value",
                            aggfunc="sum", fill_value=0.0)
    ranks = wide.columns.to_numpy()
    p = wide.index.get_level_values("p").to_numpy()
    wide = wide.where(ranks[None, :] < p[:, None])      # ranks 0..P-1 belong to a run
    long = wide.stack().dropna().rename("value").reset_index()
    if keep_runs:
        return long
    return long.groupby(["kernel", "p", *params, "rank"], as_index=False)["value"].mean()


# ------------------------------------------------------------------------------ the section

def section(measurements: pd.DataFrame, comm: pd.DataFrame | None, params: list[str],
            threshold: float, oversubscribed_p: set[int] = frozenset()) -> Section:
    """Imbalance of the kernels that hold at least ``threshold`` of the ranks' time, the MPI
    wait per rank, and whether another decomposition would pay, at every P above 1."""
    if "rank" not in measurements.columns:
        return Section(TITLE, note="not measured: the measurements have no column 'rank' "
                                   "(per-rank values); load imbalance needs them")
    kernels = kernel_imbalance(measurements, comm, params)
    kernels = kernels[(kernels["ranks"] > 1) & (kernels["share"] >= threshold)]
    per_rank_comm = comm is not None and not comm.empty and "rank" in comm.columns
    waits = mpi_wait(measurements, comm, params) if per_rank_comm else None
    point = ["p", *params]
    shown = ["p", *(name for name in params if kernels[name].nunique() > 1)]
    findings = []
    for key, rows in kernels.groupby(point, sort=True):
        key = dict(zip(point, np.atleast_1d(key), strict=True))
        wait = None if waits is None else _select(waits, key)
        where = ", ".join(f"{'P' if c == 'p' else c}={float(key[c]):.10g}" for c in shown)
        findings += _point_findings(rows, wait, where)
    if not findings:
        findings.append(Finding("info", "no kernel above the key threshold was measured at "
                                        "more than one rank: nothing to compare"))
    return Section(TITLE, findings, kernels.reset_index(drop=True),
                   _note(waits is None, oversubscribed_p))


def _point_findings(kernels: pd.DataFrame, waits: pd.DataFrame | None,
                    where: str) -> list[Finding]:
    """At one point: the imbalanced kernels, the ranks that wait in MPI, and the advice to
    change the decomposition."""
    p = int(kernels["p"].iloc[0])
    imbalanced = _ordered(kernels[kernels["imbalance"] > IMBALANCE_LIMIT], waits)
    findings = [_kernel_finding(row, waits, where, p) for _, row in imbalanced.iterrows()]
    if imbalanced.empty:
        top = kernels.loc[kernels["imbalance"].idxmax()]
        findings.append(Finding("info", (
            f"{where}: balanced: the largest max/mean over ranks is {top['imbalance']:.2f} "
            f"({top['kernel']}), below {IMBALANCE_LIMIT:g}"), top["kernel"], None, p))
    if waits is None or waits.empty:
        return findings
    worst = None if imbalanced.empty else imbalanced.iloc[0]
    heavy = None if worst is None else int(worst["heavy_rank"])
    findings.append(_wait_finding(waits, heavy, where, p))
    if worst is not None:
        findings += _decomposition(worst, waits, where, p)
    return findings


def _ordered(imbalanced: pd.DataFrame, waits: pd.DataFrame | None) -> pd.DataFrame:
    """The MAX_KERNELS imbalanced kernels that hold the others up most: those whose slowest
    rank waits least in MPI first (a kernel heavy on a waiting rank is part of its wait, e.g.
    yielding in the OS), then by what the other ranks wait for it, max - mean."""
    lost = (imbalanced["max"] - imbalanced["mean"]).to_numpy()
    waiting = np.zeros(len(imbalanced))
    if waits is not None and not waits.empty:
        share = waits.set_index("rank")["wait_share"]
        waiting = imbalanced["heavy_rank"].map(share).fillna(0.0).to_numpy()
        waiting = np.round(waiting / WAIT_LIMIT)     # ranks within WAIT_LIMIT count alike
    return imbalanced.iloc[np.lexsort((-lost, waiting))[:MAX_KERNELS]]


def _kernel_finding(row: pd.Series, waits: pd.DataFrame | None, where: str, p: int) -> Finding:
    """One imbalanced kernel, the samplers' <kernel> said to be the operating system's time:
    miniWeather's diagnosis read 'P=3: <kernel> is imbalanced', as if of a kernel of the
    application."""
    heavy = int(row["heavy_rank"])
    named = f"{KERNEL} (time in the operating system)" if row["kernel"] == KERNEL \
        else row["kernel"]
    text = (f"{where}: {named} is imbalanced: rank {heavy} spends {seconds(row['max'])} "
            f"in it, {row['imbalance']:.2f}x the mean of {seconds(row['mean'])} over "
            f"{int(row['ranks'])} ranks ({row['share']:.0%} of a rank's time)")
    if waits is not None and not waits.empty:
        share = waits.set_index("rank")["wait_share"]
        if share.get(heavy, 0.0) >= share.min() + WAIT_LIMIT:
            return Finding("info", text + (
                f"; but rank {heavy} itself waits {share[heavy]:.0%} of its time in MPI: "
                "this is likely part of its waiting (e.g. yielding to the OS)"),
                row["kernel"], heavy, p)
    return Finding("warning", text, row["kernel"], heavy, p)


def _wait_finding(waits: pd.DataFrame, heavy: int | None, where: str, p: int) -> Finding:
    """Which ranks wait in MPI: those that wait WAIT_LIMIT more of their time than the
    least-waiting rank; if all wait alike, that is the cost of communication, not imbalance."""
    order = waits.sort_values("wait_share", ascending=False)
    low, high = order["wait_share"].min(), order["wait_share"].max()
    first = order.iloc[0]
    most = f"mostly {first['top_op']}"
    if high <= WAIT_LIMIT:
        return Finding("info", f"{where}: no rank waits more than {WAIT_LIMIT:.0%} of its "
                               f"time in MPI (most: rank {int(first['rank'])}, {high:.0%})",
                       None, int(first["rank"]), p)
    if high - low < WAIT_LIMIT:
        return Finding("warning", (
            f"{where}: every rank spends {low:.0%} to {high:.0%} of its time in MPI ({most}): "
            "evenly, so this is the cost of communication (or of shared cores), not a wait "
            "for a slow rank"), None, None, p)
    waiting = order[order["wait_share"] >= low + WAIT_LIMIT]
    listed = ", ".join(f"rank {int(r['rank'])} {r['wait_share']:.0%}"
                       for _, r in waiting.iterrows())
    least = order.iloc[-1]
    whose = "its" if len(waiting) == 1 else "their"
    text = (f"{where}: ranks waiting in MPI ({most}): {listed} of {whose} time; rank "
            f"{int(least['rank'])}{', the slowest,' if least['rank'] == heavy else ''} "
            f"{low:.0%}")
    return Finding("warning", text, None, int(first["rank"]), p)


def _decomposition(worst: pd.Series, waits: pd.DataFrame, where: str, p: int) -> list[Finding]:
    """Advice when the other ranks wait WAIT_LIMIT more of their time than the heavy one."""
    heavy = int(worst["heavy_rank"])
    light = waits.loc[waits["rank"] != heavy, "wait_share"].mean()
    heavy_rows = waits[waits["rank"] == heavy]
    heavy_share = float(heavy_rows["wait_share"].mean()) if len(heavy_rows) else 0.0
    if not light - heavy_share >= WAIT_LIMIT:
        return []
    saving = worst["max"] - worst["mean"]
    own = float(heavy_rows["own_time"].mean()) if len(heavy_rows) else float("nan")
    return [Finding("problem", (
        f"{where}: a different decomposition would help: the other ranks wait {light:.0%} of "
        f"their time in MPI, rank {heavy} {heavy_share:.0%}; giving them part of rank "
        f"{heavy}'s {worst['kernel']} would save up to {seconds(saving)} per run "
        f"({saving / own:.0%} of rank {heavy}'s time)"), worst["kernel"], heavy, p)]


def _select(table: pd.DataFrame, key: dict) -> pd.DataFrame:
    mask = np.ones(len(table), bool)
    for column, value in key.items():
        mask &= np.isclose(table[column].to_numpy(float), float(value))
    return table[mask]


def _note(no_comm: bool, oversubscribed_p: set[int]) -> str | None:
    notes = []
    if no_comm:
        notes.append("MPI wait per rank not measured: no communication table (comm.csv; "
                     "trace MPI with apmt profile's PMPI library)")
    if oversubscribed_p:
        shown = ", ".join(str(p) for p in sorted(oversubscribed_p))
        notes.append(f"runs at P={shown} oversubscribed the cores: their MPI waits include "
                     "time a rank waited for a core")
    return "; ".join(notes) or None


OVERSUBSCRIBED_RUN = re.compile(r"^p(\d+)_")


def oversubscribed(provenance: dict | None) -> set[int]:
    """The P of the runs that apmt profile recorded as oversubscribed (run names p<P>_...)."""
    names = (provenance or {}).get("oversubscribed_runs") or []
    return {int(m.group(1)) for m in map(OVERSUBSCRIBED_RUN.match, names) if m}
