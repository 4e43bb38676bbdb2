"""Kernel classification (paper 000, 3.2): key, non-scalable, communication, aggregated.

Functions are the candidates. First the run-time system's parts are grouped into buckets
(``runtime_buckets``): the MPI library's internals into ``<MPI runtime>``, the dynamic loader's
into ``<loader>``, the OS kernel's and the C library's into ``<system>``, code no profiler could
place into ``<unknown>``; the application's binary and its own libraries keep their functions.
With one measure of cost per run (``time`` where the functions have it measured, else
``cycles``, else ``instructions``: ``cost_metric``), a function is
- ``communication`` when it is an MPI call or the MPI runtime (the communication model covers
  it);
- ``runtime`` when it is one of the other buckets: modelled on its own, never a key kernel;
- ``key`` when its share of the application's cost exceeds the threshold in any run (in a
  sampled profile, where the run-time system is found, of its own functions' cost: neither
  MPI, the run-time system nor unsampled wall time), or when the study lists it among its
  kernels of interest;
- ``non-scalable`` when its cost per rank does not fall as P grows in strong scaling, or
  grows with P in weak scaling (a power-law slope in P above ``NONSCALABLE_SLOPE``): minor
  now, it may become a hotspot at scale;
- ``aggregated`` otherwise: summed into one kernel, ``<others>``.

The output is the ``kernels`` table documented in apmt.tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from apmt.names import MPI_RUNTIME, is_mpi, runtime_bucket
from apmt.series import MIN_DISTINCT_P
from apmt.tables import TIME_METRIC

OTHERS = "<others>"
KEY_THRESHOLD = 0.05
# cost ~ P^slope; -0.1 is 7% less per doubling of P, +0.1 is 7% more
NONSCALABLE_SLOPE = {"strong": -0.1, "weak": 0.1}


def runtime_buckets(table: pd.DataFrame, params: list[str]) -> tuple[pd.DataFrame, dict]:
    """A points table with the run-time system's kernels summed into their buckets, and the
    names each bucket holds (bucket -> sorted names): what the application does itself is
    told apart from what its runtime does on its behalf."""
    buckets = table["kernel"].map(runtime_bucket)
    if not (buckets.notna() & (buckets != table["kernel"])).any():
        return table, {}
    held = {bucket: sorted(set(table.loc[buckets == bucket, "kernel"]))
            for bucket in sorted(set(buckets.dropna()))}
    summed = summed_kernels(table[buckets.notna()].assign(kernel=buckets.dropna()), params)
    return pd.concat([table[buckets.isna()], summed], ignore_index=True), held


def summed_kernels(rows: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Points summed per kernel name, metric and point (the fewest repetitions of the parts
    is the sum's; its spread, the parts' in proportion to their values and in quadrature,
    as of independent errors: apmt.series.log_spread)."""
    spread = rows.get("spread", pd.Series(0.0, index=rows.index)).fillna(0.0)
    parts = rows.assign(variance=(rows["value"] * spread) ** 2)
    summed = parts.groupby(["kernel", "metric", "p", *params], as_index=False, sort=False).agg(
        value=("value", "sum"), reps=("reps", "min"), variance=("variance", "sum"))
    with np.errstate(divide="ignore", invalid="ignore"):
        summed["spread"] = np.nan_to_num(np.sqrt(summed.pop("variance")) / summed["value"])
    return summed


COST_METRICS = (TIME_METRIC, "cycles", "instructions")


def cost_metric(points: pd.DataFrame, app_kernel: str | None = None) -> str:
    """The measure of a kernel's cost that classes it: time where kernels have it measured,
    else cycles, else instructions (a counters-only table), else the metric the most kernels
    have. The application's own row does not count: a wall time beside counted functions
    says nothing of their shares."""
    kernels = points[points["kernel"] != app_kernel] if app_kernel is not None else points
    present = set(kernels["metric"]) or set(points["metric"])
    for metric in COST_METRICS:
        if metric in present:
            return metric
    counts = kernels.groupby("metric")["kernel"].nunique()
    return str(counts.idxmax()) if not counts.empty else TIME_METRIC


def classify(points: pd.DataFrame, params: list[str], app_kernel: str | None = None,
             threshold: float = KEY_THRESHOLD, scaling: str = "strong",
             metric: str | None = None, interest: frozenset[str] = frozenset()
             ) -> pd.DataFrame:
    """Classify every kernel of a points table (see apmt.series.points; the run-time system
    grouped by runtime_buckets) by its share of ``metric`` (default: cost_metric's choice).
    The kernels of ``interest`` are key whatever their share. In a sampled profile a
    kernel's share is of the application's own functions' cost, a bucket's of the whole."""
    metric = metric or cost_metric(points, app_kernel)
    cost = points[points["metric"] == metric]
    run = ["p", *params]
    totals = _totals(cost, run, app_kernel)
    is_runtime = cost["kernel"].map(runtime_bucket).notna()
    own = _own_totals(cost[~is_runtime], run, app_kernel, totals) if is_runtime.any() \
        else totals
    shares = cost.join(totals, on=run).join(own.rename("own"), on=run)
    shares["share"] = shares["value"] / shares["own"].where(~is_runtime, shares["total"])
    basis = f"the application's own {metric}" if is_runtime.any() else metric
    seen_at = points.groupby("kernel")["p"].nunique()
    rows = []
    for kernel, kernel_rows in shares.groupby("kernel", sort=True):
        max_share = float(kernel_rows["share"].max())
        slope = _slope(kernel_rows, params)
        label, reason = _decide(kernel, max_share, slope, threshold, basis, app_kernel,
                                NONSCALABLE_SLOPE[scaling], kernel in interest)
        rows.append(_seen_enough(kernel, label, reason, seen_at[kernel]) |
                    {"max_share": max_share, "slope": slope})
    for kernel in sorted(set(seen_at.index) - set(shares["kernel"])):
        label, reason = _without_cost(kernel, metric, app_kernel, kernel in interest)
        rows.append(_seen_enough(kernel, label, reason, seen_at[kernel]) |
                    {"max_share": float("nan"), "slope": float("nan")})
    return pd.DataFrame(rows, columns=["kernel", "class", "reason", "max_share", "slope"])


def _own_totals(outside_runtime: pd.DataFrame, run: list[str], app_kernel: str | None,
                totals: pd.Series) -> pd.Series:
    """A sampled profile's cost of the application's own functions per run (the rows outside
    the run-time system, less MPI calls and the application's wall time): what a sampler
    attributes to its functions, without start-up and off-CPU waits."""
    own = outside_runtime["kernel"].map(lambda kernel: own_function(kernel, app_kernel))
    summed = outside_runtime[own].groupby(run)["value"].sum()
    return summed.reindex(totals.index).where(lambda total: total > 0)


def own_function(kernel: str, app_kernel: str | None) -> bool:
    """One of the application's own functions, as a sampled profile's shares count them:
    neither the run-time system's buckets, an MPI call nor the application's own row."""
    return kernel != app_kernel and runtime_bucket(kernel) is None and not is_mpi(kernel)


def missing_interest(points: pd.DataFrame, interest: frozenset[str]) -> str | None:
    """A note naming the kernels of interest that no run measured."""
    missing = sorted(interest - set(points["kernel"]))
    return f"kernels of interest not measured in any run: {', '.join(missing)}" if missing \
        else None


def with_nested(kernels: pd.DataFrame, nested: list[str]) -> pd.DataFrame:
    """The classes with the nested regions (apmt.nesting) as such: modelled on their own,
    never summed (their time lies inside other regions')."""
    inside = kernels["kernel"].isin(nested)
    return kernels.assign(
        **{"class": kernels["class"].where(~inside, "nested"),
           "reason": kernels["reason"].where(
               ~inside, "its time lies inside other regions' (nested): modelled on its own, "
                        "not summed")})


def _seen_enough(kernel: str, label: str, reason: str, seen_at: int) -> dict:
    """A non-scalable kernel or an MPI call seen at too few P to fit is summed instead."""
    if label in ("non-scalable", "communication") and seen_at < MIN_DISTINCT_P:
        label, reason = "aggregated", (f"seen at {seen_at} P only (too few to fit its own "
                                       f"model): summed into {OTHERS}")
    return {"kernel": kernel, "class": label, "reason": reason}


def _without_cost(kernel: str, metric: str, app_kernel: str | None,
                  of_interest: bool) -> tuple[str, str]:
    """The class of a kernel that has other metrics but not the one that classes: an MPI
    call's bytes and calls, or a function too small to be sampled at all."""
    return _by_role(kernel, app_kernel, of_interest) or (
        "aggregated", f"no {metric} measured: summed into {OTHERS}")


def _by_role(kernel: str, app_kernel: str | None, of_interest: bool = False
             ) -> tuple[str, str] | None:
    """The classes a kernel has by what it is, whatever it costs."""
    if kernel == app_kernel:
        return "application", "the whole application, as given"
    if kernel == MPI_RUNTIME:
        return "communication", "the MPI library's internals: modelled as communication"
    if is_mpi(kernel):
        return "communication", "an MPI call: modelled as communication"
    if runtime_bucket(kernel) is not None:
        return "runtime", ("the run-time system, not the application's code: modelled on its "
                           "own, never a key kernel")
    if of_interest:
        return "key", "listed among the study's kernels of interest"
    return None


def _totals(cost: pd.DataFrame, run: list[str], app_kernel: str | None) -> pd.Series:
    """The application's cost per run: the named application kernel's (where it has this
    metric), or the sum of all."""
    app = cost[cost["kernel"] == app_kernel] if app_kernel is not None else cost.iloc[:0]
    if not app.empty:
        return app.set_index(run)["value"].rename("total")
    return cost.groupby(run)["value"].sum().rename("total")


def _slope(rows: pd.DataFrame, params: list[str]) -> float:
    """Exponent b of cost ~ P^b, with a separate level for each parameter combination."""
    if rows["p"].nunique() < 2:
        return float("nan")
    log_cost = np.log(np.maximum(rows["value"].to_numpy(float), 1e-300))
    levels = (pd.factorize(rows[params].apply(tuple, axis=1))[0] if params
              else np.zeros(len(rows), dtype=int))
    design = np.column_stack([np.log(rows["p"].to_numpy(float)),
                              np.eye(levels.max() + 1)[levels]])
    coefficients = np.linalg.lstsq(design, log_cost, rcond=None)[0]
    return float(coefficients[0])


def _decide(kernel: str, max_share: float, slope: float, threshold: float, metric: str,
            app_kernel: str | None, limit: float, of_interest: bool) -> tuple[str, str]:
    role = _by_role(kernel, app_kernel, of_interest)
    if role is not None:
        return role
    if max_share > threshold:
        return "key", f"{max_share:.1%} of {metric} in some run (threshold {threshold:.0%})"
    if slope > limit:
        return "non-scalable", (f"{metric} per rank ~ P^{slope:.2f}, above P^{limit:g}: "
                                "does not scale")
    return "aggregated", (f"at most {max_share:.1%} of {metric} and scales (P^{slope:.2f}): "
                          f"summed into {OTHERS}")
