"""Checks before any assessment (PerfExpert, paper 002, II.B.2): is the data good enough?

- too short to sample: a key kernel (or a whole run) with fewer cpu-clock samples per rank
  than ``validity.min_samples`` of lcpi.yaml; the rate comes from the perf-clock provenance;
- repetitions that vary too much: a key kernel's (or the application's) time, cycles or
  instructions spreading by more than ``validity.max_variation`` over the repetitions of a
  point, (max - min) / mean;
- counters that contradict each other: a part above its whole (L1 hits above loads,
  mispredictions above branches, ...), the rules listed under ``validity.consistency``;
- sampling that misplaces time: the NRMSE (Eq. 1 of paper 000, apmt.diagnose.sampling) of the
  sampled time shares against an exact reference (cachegrind's instruction counts) above
  ``validity.max_nrmse``; without a reference, one line says it was not checked.
Each problem is a warning naming the kernel, the run and the numbers; the context (one
repetition only, oversubscribed runs, no provenance, the share of apmt's own PMPI tracer in
the sampled time) is said as information.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.diagnose import sampling
from apmt.diagnose.lcpi import describe_point, key_kernels, load_config
from apmt.diagnose.sampling import sampling_rate
from apmt.diagnose.section import Finding, Section
from apmt.diagnose.study import StudyData, read_study
from apmt.display import number, seconds
from apmt.names import TRACER
from apmt.series import per_run
from apmt.tables import APP_KERNEL, TIME_METRIC

REPEATED_METRICS = (TIME_METRIC, "cycles", "instructions")


def sections(study_dir: str | Path, data: StudyData | None = None,
             title: str = "Validity of the measurements") -> list[Section]:
    """The validity section of a study folder."""
    data = data or read_study(study_dir)
    return [Section(title, check(data),
                    note=f"{data.folder}: checks of paper 002, II.B.2, thresholds in lcpi.yaml")]


def check(data: StudyData) -> list[Finding]:
    """Every warning about the data, then the context; one line saying so when all is fine."""
    limits = load_config().validity
    kernels = key_kernels(data)
    runs = per_run(data.table, data.params)
    accuracy = sampling.findings(data, float(limits.get("max_nrmse", 0.1)))
    warnings = [*short_runs(data, runs, kernels, limits), *varying(data, runs, kernels, limits),
                *contradictions(data, runs, limits),
                *(f for f in accuracy if f.severity == "warning")]
    if not warnings:
        warnings.append(Finding("info", f"no problem found: sample counts, repetitions and "
                                f"counter consistency of {len(kernels)} key kernel(s) checked"))
    return warnings + [f for f in accuracy if f.severity != "warning"] + context(data, runs)


def short_runs(data: StudyData, runs: pd.DataFrame, kernels: list[str],
               limits: dict) -> list[Finding]:
    """Kernels and runs with too few samples for their time to mean much."""
    rate = sampling_rate(data.provenance)
    if rate is None:
        return []
    least = float(limits.get("min_samples", 100))
    time = runs[runs["metric"] == TIME_METRIC]
    point = ["p", *data.params]
    findings = []
    on_cpu = time[time["kernel"] != APP_KERNEL].groupby([*point, "rep"])["value"].sum()
    per_run_s = on_cpu.groupby(level=point).mean()
    short_points = per_run_s[per_run_s * rate < least]
    if len(short_points):
        findings.append(Finding("warning", f"{'runs' if len(short_points) > 1 else 'run'} at "
                                f"{_points(short_points.index, point)} too short to sample: "
                                f"about {_span(short_points.to_numpy() * rate, '{:.0f}')} "
                                f"samples per rank ({_span(short_points.to_numpy(), seconds)} on "
                                f"the CPU at {rate:g} Hz), fewer than {least:g}"))
    per_point = time[time["kernel"].isin(kernels)].groupby(["kernel", *point])["value"].mean()
    short = per_point[per_point * rate < least]
    for kernel, kernel_s in short.groupby(level="kernel", sort=False):
        findings.append(Finding("warning", f"{kernel} at "
                                f"{_points(kernel_s.index.droplevel('kernel'), point)}: about "
                                f"{_span(kernel_s.to_numpy() * rate, '{:.0f}')} samples per "
                                f"rank ({_span(kernel_s.to_numpy(), seconds)} at {rate:g} Hz), "
                                f"fewer than {least:g}: its time and CPI are uncertain by more "
                                f"than {1 / np.sqrt(least):.0%}", kernel=kernel))
    return findings


def _points(index: pd.Index, point: list[str]) -> str:
    """Where findings hold, in one phrase: ``P=1, 2, 4, n=10`` when only P varies among the
    points of ``index`` (named by ``point``), else each point."""
    values = index.to_frame(index=False)[point] if isinstance(index, pd.MultiIndex) else \
        pd.DataFrame({point[0]: index.to_numpy()})
    if len(values) > 1 and all(values[name].nunique() == 1 for name in point[1:]):
        listed = ", ".join(f"{v:g}" for v in values["p"])
        return ", ".join([f"P={listed}",
                          *(f"{name}={values[name].iloc[0]:g}" for name in point[1:])])
    return "; ".join(describe_point(dict(row)) for _, row in values.iterrows())


def _span(values: np.ndarray, shown: str | Callable[[float], str]) -> str:
    """One value, or the first and the last of several (``84 .. 3``) where they differ as
    shown."""
    show = shown.format if isinstance(shown, str) else shown
    first, last = show(values[0]), show(values[-1])
    return first if first == last else f"{first} .. {last}"


def varying(data: StudyData, runs: pd.DataFrame, kernels: list[str],
            limits: dict) -> list[Finding]:
    """Series whose repetitions spread by more than the limit."""
    limit = float(limits.get("max_variation", 0.2))
    point = ["p", *data.params]
    chosen = runs[runs["kernel"].isin([*kernels, APP_KERNEL])
                  & runs["metric"].isin(REPEATED_METRICS)]
    found = chosen.groupby(["kernel", "metric", *point])["value"].agg(
        low="min", high="max", mean="mean", runs="count")
    spread = (found["high"] - found["low"]) / found["mean"]
    found["spread"] = spread.where(found["mean"] > 0, 0.0)
    table = found[(found["runs"] >= 2) & (found["spread"] > limit)]
    findings = []
    for (kernel, metric), rows in table.groupby(level=["kernel", "metric"], sort=False):
        shown = seconds if metric == TIME_METRIC else number
        where = _points(rows.index.droplevel(["kernel", "metric"]), point)
        ranges = "" if len(rows) > 1 else \
            f" ({shown(rows['low'].iloc[0], 3)} .. {shown(rows['high'].iloc[0], 3)})"
        findings.append(Finding("warning", f"{metric} of {kernel} at {where} varies by "
                                f"{_span(np.sort(rows['spread'].to_numpy()), '{:.0%}')} over "
                                f"{rows['runs'].max()} repetitions{ranges}, more than "
                                f"{limit:.0%}: the runs were disturbed; repeat them on a "
                                "quieter machine", kernel=kernel))
    return findings


def contradictions(data: StudyData, runs: pd.DataFrame, limits: dict) -> list[Finding]:
    """Parts above their whole (``validity.consistency``), per kernel and run."""
    tolerance = float(limits.get("tolerance", 0.02))
    index = ["kernel", "p", *data.params, "rep"]
    wide = runs.pivot_table(index=index, columns="metric", values="value", aggfunc="first")
    findings = []
    for rule in limits.get("consistency") or []:
        part, whole = list(rule["part"]), list(rule["whole"])
        if not set(part + whole) <= set(wide.columns):
            continue
        rows = wide[wide[whole].notna().all(axis=1) & wide[part].notna().any(axis=1)]
        part_sum, whole_sum = rows[part].fillna(0).sum(axis=1), rows[whole].sum(axis=1)
        for key in rows.index[(part_sum > whole_sum * (1 + tolerance)).to_numpy()]:
            findings.append(_contradiction(key, index, rule, part_sum[key], whole_sum[key]))
    return findings


def _contradiction(key: tuple, index: list[str], rule: dict, part: float,
                   whole: float) -> Finding:
    run = dict(zip(index, key, strict=True))
    kernel, rep = run.pop("kernel"), run.pop("rep")
    return Finding("warning", f"counters contradict each other in {kernel} at "
                   f"{describe_point(run)} (repetition {rep}): {rule['says']}: "
                   f"{' + '.join(rule['part'])} = {part:.4g} > {' + '.join(rule['whole'])} = "
                   f"{whole:.4g} per rank; an event does not count what its metric means, so "
                   "this kernel's LCPI is not trustworthy", kernel=kernel)


def context(data: StudyData, runs: pd.DataFrame) -> list[Finding]:
    """What the reader should know about how the data was made."""
    findings = []
    if not data.provenance:
        findings.append(Finding("info", "no provenance beside the table: backends and "
                                "sampling rate unknown, sample counts and sampling accuracy "
                                "(Eq. 1) not checked"))
    elif sampling_rate(data.provenance) is None:
        findings.append(Finding("info", "no cpu-clock sampling rate recorded: sample counts "
                                "not checked"))
    point = ["p", *data.params]
    if "rep" not in runs.columns or runs.groupby(point)["rep"].nunique().max() < 2:
        findings.append(Finding("info", "one repetition per point: the variation between "
                                "runs was not checked (measure at least two)"))
    over = data.provenance.get("oversubscribed_runs") or []
    if over:
        findings.append(Finding("info", f"runs with more ranks than cores: {', '.join(over)}: "
                                "on-CPU times hold, but ranks shared cores, caches and memory "
                                "bandwidth"))
    return findings + tracer_cost(runs, point)


def tracer_cost(runs: pd.DataFrame, point: list[str]) -> list[Finding]:
    """The largest share of the sampled time that apmt's own PMPI tracer took in a run (its
    library's bucket against every kernel's sampled time), and where: its cost is in the MPI
    times the model fits. An application that polls (Graph500's search calls MPI_Testany in
    a loop) pays it per call: at P = 32 the tracer's wrapper took 1.2 ms per rank beside
    libmpi's own 1.4 ms, 2.1% of the sampled time."""
    sampled = runs[(runs["metric"] == TIME_METRIC) & (runs["kernel"] != APP_KERNEL)]
    tracer = sampled[sampled["kernel"] == TRACER]
    if tracer.empty:
        return []
    keys = [*point, *(["rep"] if "rep" in runs.columns else [])]
    share = (tracer.groupby(keys)["value"].sum() / sampled.groupby(keys)["value"].sum()).dropna()
    if share.empty:
        return []
    worst = dict(zip(keys, np.atleast_1d(share.idxmax()), strict=True))
    where = describe_point({name: worst[name] for name in point})
    return [Finding("info", f"apmt's PMPI tracer took up to {share.max():.1%} of the sampled "
                    f"time (at {where}, repetition {worst.get('rep', 1):g}); the MPI times "
                    "hold its cost")]
