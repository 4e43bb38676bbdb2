"""Nested regions: which kernels' times contain other kernels' times.

Profiles name code regions in two ways. Call paths (``main/solve/MPI_Send`` from Score-P's
Cube and Caliper's trees, or ``main->solve``) say where each region sits; their values are
exclusive when the importer derived them so (apmt.ingest.cube and .caliper do, and say so in
the import's provenance: ``call_path_values``), and inclusive when every region's value holds
its children's. Where nobody said, the values decide: inclusive when every parent's value
holds its children's at every point. That test cannot tell exclusive values whose parents
happen to cost more than their children from inclusive ones, so a stated kind wins.

Flat names (Extra-P's text files, RELeARN's ``main()``, ``Simulation loop``, ``Connectivity
update``, ...) say nothing, and their values are inclusive: the simulation loop holds the
connectivity update, which holds its phases.

Summing nested regions counts time twice or more (RELeARN's sum of regions is 4x its run
time). So before the model adds parts:
- call paths with inclusive values become exclusive (a region's own time, without its
  children's);
- flat regions whose sum exceeds the application's time (the named application kernel, or
  the measured <app>) are sorted into top-level ones, the largest first, each kept while the
  sum of those kept stays within the application's time (TOLERANCE) at every point, and
  nested ones, the rest: their time is inside the others'. Without an application time,
  nothing shows that flat regions overlap.
  Nested regions are still modelled and predicted one by one; they are not summed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from apmt.kernels import cost_metric
from apmt.tables import APP_KERNEL

SEPARATOR = re.compile(r"/|->")
VALUE_KINDS = ("inclusive", "exclusive")   # what a call path's value holds, where it is known
TOLERANCE = 0.02        # timers of nested regions, summed, may overshoot their parent a little


@dataclass
class Nesting:
    """What nesting was found: the table to sum (exclusive parts), the nested kernels left out
    of sums, and a note saying which rule applied (empty: no nesting)."""

    table: pd.DataFrame
    nested: list[str] = field(default_factory=list)
    note: str = ""


def resolve(points: pd.DataFrame, params: list[str], app_kernel: str | None,
            metric: str | None = None, values: str | None = None) -> Nesting:
    """The nesting of a points table (apmt.series.points), judged on ``metric`` (the cost
    that classes kernels, cost_metric's choice by default): call paths made exclusive where
    their values are inclusive (``values``, one of VALUE_KINDS, where the importer or the
    user said; else judged from the values), else flat regions that overlap sorted into
    top-level and nested ones."""
    kernels = [k for k in points["kernel"].unique() if k not in (app_kernel, APP_KERNEL)]
    parents = call_tree(kernels)
    run = ["p", *params]
    metric = metric or cost_metric(points, app_kernel)
    time = points[points["metric"] == metric].pivot_table(
        index="kernel", columns=run, values="value", aggfunc="mean")
    if parents:
        if values == "exclusive" or (values is None and not _inclusive(time, parents)):
            return Nesting(points)
        return Nesting(_exclusive(points, parents, run), note=(
            "call-path values are inclusive (" + (
                "as the input says" if values else "every region's time holds its children's")
            + "): the model sums their exclusive parts"))
    root = _root(time, app_kernel)
    nested = _nested(time, kernels, root)
    if not nested:
        return Nesting(points)
    return Nesting(points, nested, (
        f"nested regions: {len(nested)} regions' times lie inside others' (their sum would "
        f"exceed the application's time); they are modelled one by one but not summed: "
        f"{', '.join(nested[:6])}{', ...' if len(nested) > 6 else ''}"))


def call_tree(kernels: list[str]) -> dict[str, str]:
    """Child -> parent among the kernels whose names are call paths (the longest proper
    prefix path that is itself a kernel)."""
    present = set(kernels)
    parents = {}
    for kernel in kernels:
        for match in reversed(list(SEPARATOR.finditer(kernel))):
            if kernel[:match.start()] in present:
                parents[kernel] = kernel[:match.start()]
                break
    return parents


def _inclusive(time: pd.DataFrame, parents: dict[str, str]) -> bool:
    """Whether every parent's time holds its children's at every point (inclusive values);
    exclusive values break this for some parent with a costly child."""
    children = pd.Series(parents)
    summed = time.reindex(children.index).groupby(children.to_numpy()).sum(min_count=1)
    own = time.reindex(summed.index)
    enough = (own >= summed * (1 - TOLERANCE)) | summed.isna()
    return bool(len(summed)) and bool(enough.to_numpy().all())


def _exclusive(points: pd.DataFrame, parents: dict[str, str], run: list[str]) -> pd.DataFrame:
    """Each region's value less its direct children's, per metric and point (at least 0)."""
    keys = ["metric", *run]
    children = points[points["kernel"].isin(parents)]
    summed = children.assign(kernel=children["kernel"].map(parents)).groupby(
        ["kernel", *keys], as_index=False)["value"].sum()
    merged = points.merge(summed, on=["kernel", *keys], how="left", suffixes=("", "_children"))
    own = merged["value"] - merged["value_children"].fillna(0.0)
    return merged.drop(columns="value_children").assign(value=own.clip(lower=0.0))


def _root(time: pd.DataFrame, app_kernel: str | None) -> pd.Series | None:
    """The whole: the application kernel's time, else the measured <app>, per point."""
    for name in (app_kernel, APP_KERNEL):
        if name is not None and name in time.index:
            return time.loc[name]
    return None


def _nested(time: pd.DataFrame, kernels: list[str], root: pd.Series | None) -> list[str]:
    """Flat regions that do not fit beside the larger ones within the whole: the largest
    first, each kept while the sum stays within the root at every point. Without a whole
    (no application kernel, no measured <app>) nothing says that flat regions overlap."""
    timed = time.reindex([k for k in kernels if k in time.index]).fillna(0.0)
    if timed.empty or root is None:
        return []
    order = timed.mean(axis=1).sort_values(ascending=False).index
    if (timed.sum() <= root * (1 + TOLERANCE)).all():
        return []
    kept = pd.Series(0.0, index=timed.columns)
    nested = []
    for kernel in order:
        if ((kept + timed.loc[kernel]) <= root * (1 + TOLERANCE)).all():
            kept = kept + timed.loc[kernel]
        else:
            nested.append(kernel)
    return nested
