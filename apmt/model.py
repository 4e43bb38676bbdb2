"""The application model of paper 000, Eq. 2, assembled from per-series fits.

    T_app = sum_i (T_comp_i + BF_mem_i * T_mem_i) + BF_comm * T_comm + T_others

Counter mode (a kernel with ``instructions`` and ``cycles``, and a machine file):
    T_comp_i = instructions_i(P) * CPI_i / f, with CPI_i the mean over runs of the computing
        cycles per instruction, (cycles - stall_cycles) / instructions, and its deviation
        (Eq. 4) reported;
    T_mem_i  = (l1_hits*L1 + l2_hits*L2 + llc_hits*LLC + memory_accesses*MEM) / f, with
        memory_accesses = llc_misses;
    BF_mem_i = T_stall_i / T_mem_i, so BF_mem_i * T_mem_i = stall_cycles_i(P) / f; a kernel
        refined at a lower frequency (cpi[kernel]["bf_mem"], apmt.refine) takes its solved
        BF_mem times T_mem instead.
Time mode (most real data, which has only ``time``): a kernel's time is its own fit, and the
model says so. Values are per rank, so Eq. 2's division by P is already done.

T_comm is the sum of the operations' Hockney models when a communication table is given, else
the sum of the fits of the MPI calls found among the kernels. BF_comm is
(T_mapp - T_mcomp) / T_mcomm from runs that measured the application time (kernel ``<app>``),
else 1 (the bulk-synchronous case). T_others is the fit of the aggregated kernel.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from apmt import __version__, trust
from apmt.comm import (
    comm_points,
    fit_operations,
    operation_from_dict,
    operation_to_dict,
    predict_operation,
)
from apmt.errors import ApmtError
from apmt.fit import SeriesFit
from apmt.fit_table import TableFit, described, error_correlation, fit_all
from apmt.kernels import (
    OTHERS,
    classify,
    cost_metric,
    missing_interest,
    runtime_buckets,
    summed_kernels,
    with_nested,
)
from apmt.machine import hertz
from apmt.nesting import resolve
from apmt.series import MIN_DISTINCT_P, point_values, points
from apmt.tables import APP_KERNEL, TIME_METRIC, write_text_atomic
from apmt.trust import MAJOR_SHARE, MAX_FACTOR, UNSUPPORTED, judge, merged_domain

MODEL_FORMAT = "apmt-model/1"
MODELLED = ("key", "non-scalable", "runtime", "application", "nested")
PARTS = ("comp_time", "mem_time", "comm_time", "others_time")
CONTENTION_LIMIT = 1e-4
UNACCOUNTED = "<unaccounted>"
NO_TIME = ("no application time: the table has no time per kernel (nor cycles with a machine "
           "file) and no measured application time")


def build_model(measurements: pd.DataFrame, params: list[str], *, source: str,
                comm: pd.DataFrame | None = None, machine: dict | None = None,
                app_kernel: str | None = None, per_rank_params: frozenset[str] = frozenset(),
                threshold: float = 0.05, scaling: str | None = None,
                interest: frozenset[str] = frozenset()) -> dict:
    """Classify kernels, fit every series that the model needs, and assemble Eq. 2.
    ``scaling`` is weak when a parameter is per rank (the work per rank stays as P grows),
    else strong, unless given; the kernels of ``interest`` are key whatever their share."""
    table, runtime = runtime_buckets(points(measurements, params), params)
    app_kernel = app_kernel or (APP_KERNEL if APP_KERNEL in set(table["kernel"]) else None)
    if app_kernel is not None and app_kernel not in set(table["kernel"]):
        raise ApmtError(f"{source}: application kernel {app_kernel!r} not found")
    scaling = scaling or ("weak" if per_rank_params else "strong")
    metric = cost_metric(table, app_kernel)
    nesting = resolve(table, params, app_kernel, metric)
    table = nesting.table
    kernels = with_nested(classify(table, params, app_kernel, threshold, scaling, metric,
                                   interest), nesting.nested)
    classes = dict(zip(kernels["kernel"], kernels["class"], strict=True))
    if comm is None:
        modelled = {k for k, c in classes.items() if c in (*MODELLED, "communication")}
    else:
        modelled = {k for k, c in classes.items() if c in MODELLED}
    aggregated = [k for k, c in classes.items() if c == "aggregated"]
    runs = _run_times(table, comm, classes, params, app_kernel) \
        if comm is not None and app_kernel is not None else None
    unaccounted = _unaccounted(runs) if runs is not None and app_kernel == APP_KERNEL \
        else pd.DataFrame()
    others = _aggregate(table, aggregated, params)
    series_table = pd.concat([table[table["kernel"].isin(modelled)], others, unaccounted],
                             ignore_index=True)
    fitted = fit_all(series_table, params, source, per_rank_params)
    series, left_out_series = _series_entries(fitted)
    model = {
        "format": MODEL_FORMAT, "params": params, "per_rank_params": sorted(per_rank_params),
        "app_kernel": app_kernel, "scaling": scaling, "threshold": threshold,
        "kernels": kernels.to_dict("records"), "series": series, "left_out": left_out_series,
        "cpi": _cpi(table, modelled, params), "machine": machine,
        "contention": _contention(table, {k for k, c in classes.items() if c == "key"}),
    }
    model["communication"], left_out, comm_notes = fit_operations(comm, params, source) \
        if comm is not None else ([], [], [])
    model["left_out"] = left_out_series + [{"operation": name, "reason": why}
                                           for name, why in left_out]
    if not series and not model["communication"]:
        raise ApmtError(f"{source}: nothing could be fitted: " + (described(
            {(e["kernel"], e["metric"]): e["reason"] for e in left_out_series})
            or "no kernel to model"))
    model["bf_comm"], model["bf_comm_note"] = _bf_comm(runs) if runs is not None else (
        1.0, "1: no measured application time beside a communication table")
    if not unaccounted.empty:
        model["bf_comm"], model["bf_comm_note"] = 1.0, (
            f"1: the measured application time exceeds computation plus MPI in every run; "
            f"the rest is modelled as {UNACCOUNTED} (start-up, waits outside MPI)")
    model["mode"] = _mode(model)
    model["cost_metric"] = metric
    model["error_correlation"] = _error_correlation(model)
    model["runtime"] = runtime
    model["interest"] = sorted(interest)
    model["calibration"] = {"regime": fitted.regime, "intervals": fitted.calibration}
    model["notes"] = _notes(model) + fitted.notes + comm_notes + [note for note in (
        nesting.note, missing_interest(table, interest), _runtime_note(runtime)) if note]
    return model


def _runtime_note(runtime: dict[str, list[str]]) -> str | None:
    """Which of the profilers' names each run-time bucket holds."""
    grouped = {bucket: names for bucket, names in runtime.items() if names != [bucket]}
    if not grouped:
        return None
    return "the run-time system grouped: " + "; ".join(
        f"{bucket} holds {', '.join(names)}" for bucket, names in grouped.items())


def _run_times(table: pd.DataFrame, comm: pd.DataFrame | None, classes: dict,
               params: list[str], app_kernel: str | None) -> pd.DataFrame:
    """Per point: the measured application time, the computing kernels' time and the MPI
    time, of the communication table when there is one, else of the MPI kernels (columns
    app, comp, comm; NaN where not measured)."""
    time = table[table["metric"] == TIME_METRIC]
    run = ["p", *params]
    app = time[time["kernel"] == app_kernel].groupby(run)["value"].mean()
    computing = [k for k, c in classes.items()
                 if c not in ("application", "communication", "nested")]
    comp = time[time["kernel"].isin(computing)].groupby(run)["value"].sum()
    if comm is not None:
        comm_time = comm_points(comm, params).groupby(run)["time"].sum()
    else:
        mpi = [k for k, c in classes.items() if c == "communication"]
        comm_time = time[time["kernel"].isin(mpi)].groupby(run)["value"].sum()
    return pd.concat({"app": app, "comp": comp, "comm": comm_time}, axis=1)


def measured_parts(model: dict, measurements: pd.DataFrame, comm: pd.DataFrame | None
                   ) -> pd.DataFrame:
    """Per point of measured runs, the application time and its parts as the model defines
    them (predicted_parts), so that a validation compares like with like: columns p, the
    parameters, time, computation_time (every computing kernel), comm_time, others_time (the
    time neither explains, where the model has a term for it; else not a number). Without
    an application kernel the time is computation plus communication."""
    params = model["params"]
    classes = {k["kernel"]: k["class"] for k in model["kernels"]}
    table = resolve(runtime_buckets(points(measurements, params), params)[0], params,
                    model["app_kernel"], model["cost_metric"]).table
    runs = _run_times(table, comm, classes, params, model["app_kernel"])
    computed = runs["comp"].add(runs["comm"], fill_value=0.0)
    total = runs["app"] if model["app_kernel"] is not None else computed
    others = total - computed if _fit_of(model, UNACCOUNTED, TIME_METRIC) is not None \
        else np.nan
    frame = pd.DataFrame({"time": total, "computation_time": runs["comp"],
                          "comm_time": runs["comm"], "others_time": others})
    return frame.reset_index().dropna(subset=["time"])


def _unaccounted(runs: pd.DataFrame) -> pd.DataFrame:
    """The measured wall time (kernel <app>) that neither the sampled functions nor MPI
    explain, per point: process start-up, launcher, waits of oversubscribed ranks. Part of
    T_others when it is positive in every run; else (overlap) BF_comm accounts for it."""
    inside = runs["comp"].add(runs["comm"], fill_value=0.0)
    rest = (runs["app"] - inside).dropna()
    if rest.empty or (rest <= 0).any() or rest.index.get_level_values("p").nunique() < \
            MIN_DISTINCT_P:
        return pd.DataFrame()
    frame = rest.rename("value").reset_index()
    return frame.assign(kernel=UNACCOUNTED, metric=TIME_METRIC, reps=1)


def _aggregate(table: pd.DataFrame, kernels: list[str], params: list[str]) -> pd.DataFrame:
    """The aggregated kernel: the sum of the small, scaling functions, per metric and point."""
    rows = table[table["kernel"].isin(kernels)]
    if rows.empty:
        return rows
    return summed_kernels(rows.assign(kernel=OTHERS), params)


def _series_entries(fitted: TableFit) -> tuple[list[dict], list[dict]]:
    """The fitted series, and those left out with why, as the model holds them."""
    return ([{"kernel": kernel, "metric": metric, "fit": fit}
             for (kernel, metric), fit in fitted.fits.items()],
            [{"kernel": kernel, "metric": metric, "reason": reason}
             for (kernel, metric), reason in fitted.left_out.items()])


def _cpi(table: pd.DataFrame, kernels: set[str], params: list[str]) -> dict:
    """CPI per kernel with counters: the mean over runs and its deviation (Eq. 4)."""
    run = ["p", *params]
    wide = table.pivot_table(index=["kernel", *run], columns="metric", values="value",
                             aggfunc="mean")
    if not {"cycles", "instructions"} <= set(wide.columns):
        return {}
    stalls = wide["stall_cycles"] if "stall_cycles" in wide.columns else 0.0
    per_run = ((wide["cycles"] - stalls) / wide["instructions"]).dropna()
    result = {}
    for kernel, values in per_run.groupby(level="kernel"):
        if kernel in kernels or kernel == OTHERS:
            cpi = values.to_numpy(float)
            deviation = float(np.sum((cpi - cpi.mean()) ** 2) / (len(cpi) - 1)) if len(cpi) > 1 \
                else float("nan")
            runs = [",".join(f"{name}={value:g}" for name, value in zip(run, key[1:], strict=True))
                    for key in values.index]
            result[kernel] = {"cpi": float(cpi.mean()), "deviation": deviation,
                              "per_run": dict(zip(runs, cpi.tolist(), strict=True))}
    return result


def _contention(table: pd.DataFrame, kernels: set[str]) -> dict[str, float]:
    """The memory-contention ratio E = LLC misses / memory accesses (loads and stores) per
    kernel, its largest value over runs (paper 000, 4.2)."""
    wide = table.pivot_table(index=["kernel", "p"], columns="metric", values="value",
                             aggfunc="mean")
    if not {"llc_misses", "mem_loads", "mem_stores"} <= set(wide.columns):
        return {}
    ratio = (wide["llc_misses"] / (wide["mem_loads"] + wide["mem_stores"])).dropna()
    return {kernel: float(values.max()) for kernel, values in ratio.groupby(level="kernel")
            if kernel in kernels}


def _bf_comm(runs: pd.DataFrame) -> tuple[float, str]:
    """BF_comm = (T_mapp - T_mcomp) / T_mcomm, the share of communication time not hidden
    behind computation, from the runs that measured the application time and communicated
    (a single process says nothing about it)."""
    runs = runs.dropna()
    runs = runs[(runs.index.get_level_values("p") > 1) & (runs["comm"] > 0)]
    if runs.empty:
        return 1.0, "1: no run both measured the application time and communicated"
    ratio = float((runs["app"] - runs["comp"]).sum() / runs["comm"].sum())
    note = f"(T_mapp - T_mcomp) / T_mcomm summed over {len(runs)} runs = {ratio:.3g}"
    if not 0.0 <= ratio <= 1.0:
        note += ("; outside [0, 1], so time beyond computation and MPI (e.g. waits of "
                 "oversubscribed ranks) is not communication: clamped")
    return min(max(ratio, 0.0), 1.0), note


def _error_correlation(model: dict) -> dict:
    """How the summed terms' out-of-sample errors go together (fit_table.error_correlation):
    the application's interval adds its terms' with it. An operation's error is that of its
    time per call times its calls."""
    biases = [entry["fit"].fold_bias for entry, _ in _summed_series(model)]
    for operation in model["communication"]:
        fits = operation["fits"]
        bias = dict(fits["time"].fold_bias)
        if operation["kind"] != "p2p":
            calls = fits["calls"].fold_bias
            bias = {label: value + calls[label] for label, value in bias.items()
                    if label in calls}
        biases.append(bias)
    rho, pairs = error_correlation(biases)
    basis = (f"pooled over {pairs} pairs of summed terms sharing at least 3 cross-validation "
             "folds" if pairs else "no two summed terms share 3 folds: taken as independent")
    return {"rho": rho, "pairs": pairs, "basis": basis}


def _mode(model: dict) -> str:
    return "counters" if model["cpi"] and model["machine"] is not None else "time"


def _notes(model: dict) -> list[str]:
    notes = []
    if model["mode"] == "time":
        why = "no machine file" if model["cpi"] else "no cycles were measured"
        notes.append(f"time-only model ({why}): each kernel's time is its own fit, "
                     "without the CPI and memory terms of Eq. 2")
    for kernel, ratio in model["contention"].items():
        if ratio > CONTENTION_LIMIT:
            notes.append(f"memory contention: E = LLC misses / memory accesses = {ratio:.2g} "
                         f"for {kernel!r} exceeds {CONTENTION_LIMIT:g}; its predictions for "
                         "larger problem sizes may be optimistic (paper 000, 4.2)")
    app_fitted = _fit_of(model, model["app_kernel"], TIME_METRIC) is not None
    if model["app_kernel"] not in (None, APP_KERNEL) and app_fitted:
        notes.append(f"application time is the fit of {model['app_kernel']!r}; the parts "
                     "are the other kernels as given and need not add up to it")
    notes += [(f"MPI operation {e['operation']}" if "operation" in e else
               f"{e['kernel']}/{e['metric']}") + f" {_not_modelled(e)}" for e in model["left_out"]]
    if model["app_kernel"] not in (None, APP_KERNEL) and not app_fitted:
        notes.append(f"application time is the sum of the parts: the time of "
                     f"{model['app_kernel']!r} has no model")
    if model["cost_metric"] != TIME_METRIC:
        notes.append(f"kernels classed by {model['cost_metric']}: no function has a measured "
                     "time")
    if not predicts_time(model):
        notes.append(f"{NO_TIME}; the model predicts each series as measured")
    unmodelled = [k["kernel"] for k in model["kernels"] if k["class"] in ("key", "non-scalable")
                  and _fit_of(model, k["kernel"], _kernel_metric(model, k["kernel"])) is None]
    if unmodelled:
        notes.append(f"the application time leaves out {', '.join(unmodelled)}: no model of "
                     "their time (see above)")
    return notes


# ----------------------------------------------------------------------------------- predict

def _fit_of(model: dict, kernel: str, metric: str) -> SeriesFit | None:
    for entry in model["series"]:
        if entry["kernel"] == kernel and entry["metric"] == metric:
            return entry["fit"]
    return None


def predict(model: dict, targets: pd.DataFrame,
            volume_ratios: dict[str, float] | None = None) -> pd.DataFrame:
    """Predictions of every series and of the application at the target points, each with
    how far it can be trusted (apmt.trust); a series the model could not fit has a row too,
    without a number, saying why."""
    params = model["params"]
    values = point_values(targets, params)
    frames = []
    for entry in model["series"]:
        bounds = entry["fit"].predict(values)
        # the rows of kernel <app> are the assembled ones; a measured <app>'s own fit is beside
        metric = f"fitted_{entry['metric']}" if entry["kernel"] == APP_KERNEL else entry["metric"]
        frames.append(_rows(targets, params, entry["kernel"], metric, bounds,
                            judge(entry["fit"].domain, values, *bounds)))
    nan = np.full(len(values["p"]), np.nan)
    for entry in model["left_out"]:
        kernel, metric = (entry["operation"], TIME_METRIC) if "operation" in entry else (
            entry["kernel"], entry["metric"])
        frames.append(_rows(targets, params, kernel, metric, (nan, nan, nan),
                            ([UNSUPPORTED] * len(nan), [_not_modelled(entry)] * len(nan))))
    frames += _application_rows(model, targets, values, volume_ratios)
    frames += _memory_rows(model, targets, values)
    return pd.concat(frames, ignore_index=True)


def _not_modelled(entry: dict) -> str:
    """Why a series (or an MPI operation) of model["left_out"] has no fit, in words."""
    series = "" if "operation" in entry else "the series "
    return f"not modelled: {series}{entry['reason']}"


def _application_rows(model: dict, targets: pd.DataFrame, values: dict,
                      volume_ratios: dict[str, float] | None) -> list[pd.DataFrame]:
    """The application's time and its parts, judged on the measured range of the whole model
    (the time as application_trust says)."""
    domain = merged_domain(_domains(model))
    terms = list(contributions(model, values, volume_ratios))
    parts = assemble(model, values, volume_ratios, terms)
    frames = [_rows(targets, model["params"], APP_KERNEL, TIME_METRIC, parts[TIME_METRIC],
                    application_trust(model, values, volume_ratios, terms))]
    for part in PARTS:
        frames.append(_rows(targets, model["params"], APP_KERNEL, part, parts[part],
                            judge(domain, values, *parts[part])))
    return frames


def application_trust(model: dict, values: dict[str, np.ndarray],
                      volume_ratios: dict[str, float] | None = None,
                      terms: list[tuple] | None = None) -> tuple[list[str], list[str]]:
    """How far the application time at the points can be trusted (apmt.trust), on the measured
    range of the whole model and by its own interval (which holds its parts' uncertainty);
    also unsupported where a part that carries a tenth of it or more lies beyond the range
    its own fit checked (MAX_FACTOR of its own measured range: an MPI call measured at fewer
    P than the rest), naming the largest such part. ``terms`` as for assemble."""
    terms = terms if terms is not None else list(contributions(model, values, volume_ratios))
    time = assemble(model, values, volume_ratios, terms)[TIME_METRIC]
    levels, reasons = judge(merged_domain(_domains(model)), values, *time)
    if not predicts_time(model):
        return levels, [NO_TIME] * len(reasons)
    total = time[0]
    largest = np.zeros(len(total))     # the largest unsupported part named so far
    far = trust.distance(merged_domain(_domains(model)), values)[0] > MAX_FACTOR
    for source, _, operation, bounds in terms:
        domain = _domain_of(model, source, operation)
        beyond = trust.distance(domain, values)[0] > MAX_FACTOR
        part_reasons = judge(domain, values, *bounds)[1]
        for i in np.flatnonzero(beyond & ~far):
            if bounds[0][i] >= max(MAJOR_SHARE * total[i], largest[i]):
                levels[i], largest[i] = UNSUPPORTED, bounds[0][i]
                reasons[i] = (f"{bounds[0][i] / total[i]:.0%} of it is {source}, whose "
                              f"prediction is unsupported: {part_reasons[i]}")
    return levels, reasons


def _domains(model: dict) -> list[dict[str, tuple[float, float]]]:
    """The measured ranges of every fit of the model."""
    return [entry["fit"].domain for entry in model["series"]] + [
        operation["fits"]["time"].domain for operation in model["communication"]]


def _domain_of(model: dict, source: str, operation: dict | None) -> dict:
    """The measured range of one term of Eq. 2 (a kernel's fit, or an MPI operation's)."""
    if operation is not None:
        return operation["fits"]["time"].domain
    fit = _fit_of(model, source, _kernel_metric(model, source))
    return fit.domain if fit is not None else {}


def _memory_rows(model: dict, targets: pd.DataFrame, values: dict) -> list[pd.DataFrame]:
    """Per counter-mode kernel: T_mem (Eq. 3) and BF_mem, the share of it not overlapped."""
    if model["mode"] != "counters":
        return []
    frames = []
    nan = np.full(len(values["p"]), np.nan)
    for kernel, entry in model["cpi"].items():
        total = memory_time(model, kernel, values)
        stalls = _fit_of(model, kernel, "stall_cycles")
        if total is None or (stalls is None and entry.get("bf_mem") is None):
            continue
        blocking = np.full(len(values["p"]), float(entry["bf_mem"])) \
            if entry.get("bf_mem") is not None else \
            stalls.predict(values)[0] / hertz(model["machine"]) / total
        trust = judge(_domain_of(model, kernel, None), values, total, nan, nan)
        for metric, value in (("mem_total_time", total), ("bf_mem", blocking)):
            frames.append(_rows(targets, model["params"], kernel, metric, (value, nan, nan),
                                trust))
    return frames


def _rows(targets: pd.DataFrame, params: list[str], kernel: str, metric: str,
          bounds: tuple[np.ndarray, ...], trust: tuple[list[str], list[str]]) -> pd.DataFrame:
    frame = targets[["p", *params]].reset_index(drop=True).copy()
    frame.insert(0, "metric", metric)
    frame.insert(0, "kernel", kernel)
    predicted, lower, upper = bounds
    return frame.assign(predicted=predicted, lower=lower, upper=upper, trust=trust[0],
                        trust_reason=trust[1])


def assemble(model: dict, values: dict[str, np.ndarray],
             volume_ratios: dict[str, float] | None = None,
             terms: list[tuple] | None = None) -> dict[str, tuple[np.ndarray, ...]]:
    """T_app and its parts at the points; each as (predicted, lower, upper).

    The terms' errors are correlated (their series come from the same runs, and what
    surprises one beyond the measured range often surprises all): the distances from a
    prediction to its interval's ends add as those of correlated errors, with the model's
    pooled correlation (in quadrature when it is 0, linearly when 1; model files without it:
    0). The application's time is the sum of
    the parts; the fit of the application kernel when one is named, or when no kernel's time
    is modelled (a table of counters per function beside the measured wall time); else (no
    time at all) not a number. ``terms``: contributions() at these points, when the caller
    has them already.
    """
    parts = {part: _Sum(len(values["p"]), _rho(model)) for part in PARTS}
    total = _Sum(len(values["p"]), _rho(model))
    terms = terms if terms is not None else contributions(model, values, volume_ratios)
    for _, part, _, bounds in terms:
        parts[part].add(bounds)
        total.add(bounds)
    app = total.bounds()
    app_fit = _fit_of(model, model["app_kernel"], TIME_METRIC)
    computing = _computes(model)
    if app_fit is not None and (model["app_kernel"] != APP_KERNEL or not computing):
        app = app_fit.predict(values)
    elif not computing:     # no time per kernel (a counters-only table): no application time
        app = tuple(np.full(len(values["p"]), np.nan) for _ in range(3))
    return {TIME_METRIC: app, **{name: part.bounds() for name, part in parts.items()}}


def predicted_parts(model: dict, values: dict[str, np.ndarray]
                    ) -> dict[str, tuple[np.ndarray, ...]]:
    """The application time and its parts as measured_parts measures them, each as
    (predicted, lower, upper): computation_time is every computing kernel's term (memory
    included), others_time the time outside kernels and MPI (not a number when the model
    has no term for it)."""
    terms = list(contributions(model, values))
    computing, outside = _Sum(len(values["p"]), _rho(model)), _Sum(len(values["p"]), _rho(model))
    for source, part, _, bounds in terms:
        if part != "comm_time":
            (outside if source == UNACCOUNTED else computing).add(bounds)
    unmodelled = tuple(np.full(len(values["p"]), np.nan) for _ in range(3))
    assembled = assemble(model, values, terms=terms)
    return {"time": assembled[TIME_METRIC], "computation_time": computing.bounds(),
            "comm_time": assembled["comm_time"],
            "others_time": outside.bounds() if _fit_of(model, UNACCOUNTED, TIME_METRIC)
            is not None else unmodelled}


def contributions(model: dict, values: dict[str, np.ndarray],
                  volume_ratios: dict[str, float] | None = None
                  ) -> Iterator[tuple[str, str, dict | None, tuple[np.ndarray, ...]]]:
    """Every term of Eq. 2 at the points, as (source, part, operation, bounds): the source is
    a kernel or an MPI operation's key joined by '/', the part one of PARTS, the operation
    the communication model's entry (None for a kernel), the bounds (predicted, lower,
    upper). assemble sums them per part; the diagnosis shows them one by one."""
    for entry, kind in _summed_series(model):
        kernel = entry["kernel"]
        if kind == "communication":
            yield kernel, "comm_time", None, entry["fit"].predict(values)
        elif kernel in (OTHERS, UNACCOUNTED):
            yield kernel, "others_time", None, entry["fit"].predict(values)
        else:
            for part, bounds in _kernel_time(model, kernel, values).items():
                yield kernel, part, None, bounds
    for operation in model["communication"]:
        bounds = predict_operation(operation, values, _ratio(volume_ratios or {}, operation))
        yield ("/".join(str(part) for part in operation["key"]), "comm_time", operation,
               tuple(b * model["bf_comm"] for b in bounds))


def _summed_series(model: dict) -> Iterator[tuple[dict, str]]:
    """The fitted series that Eq. 2 sums, with their kernel's class: each kernel's time (or
    instructions in counter mode), not the application's nor a nested region's."""
    classes = {k["kernel"]: k["class"] for k in model["kernels"]}
    for entry in model["series"]:
        kind = classes.get(entry["kernel"], "aggregated")
        if kind not in ("application", "nested") and \
                entry["metric"] == _kernel_metric(model, entry["kernel"]):
            yield entry, kind


def _computes(model: dict) -> bool:
    """Whether some kernel's computation time is modelled (not only MPI)."""
    return any(kind != "communication" for _, kind in _summed_series(model))


def predicts_time(model: dict) -> bool:
    """Whether the model has an application time: summed from the kernels' computation, or
    the fit of the application kernel (a counters-only table has neither)."""
    return _computes(model) or _fit_of(model, model["app_kernel"], TIME_METRIC) is not None


def _ratio(ratios: dict[str, float], operation: dict) -> float:
    """The volume ratio of an operation: its own, its pattern's (p2p, collective), or all's."""
    for pattern in (operation["op"], operation["kind"], "all"):
        if pattern in ratios:
            return ratios[pattern]
    return 1.0


def _rho(model: dict) -> float:
    """The summed terms' error correlation (model files without it: independent)."""
    return model.get("error_correlation", {}).get("rho", 0.0)


class _Sum:
    """A sum of predictions whose errors have a common correlation rho: each side's distance
    to the interval's end is sqrt((1 - rho) * sum w^2 + rho * (sum w)^2)."""

    def __init__(self, n: int, rho: float = 0.0) -> None:
        self.rho = rho
        self.value = np.zeros(n)
        self.linear = {side: np.zeros(n) for side in ("below", "above")}
        self.squares = {side: np.zeros(n) for side in ("below", "above")}

    def add(self, bounds: tuple[np.ndarray, ...]) -> None:
        predicted, lower, upper = bounds
        self.value = self.value + predicted
        for side, distance in (("below", predicted - lower), ("above", upper - predicted)):
            self.linear[side] = self.linear[side] + distance
            self.squares[side] = self.squares[side] + distance**2

    def _distance(self, side: str) -> np.ndarray:
        return np.sqrt((1.0 - self.rho) * self.squares[side] + self.rho * self.linear[side] ** 2)

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (self.value, self.value - self._distance("below"),
                self.value + self._distance("above"))


def _kernel_metric(model: dict, kernel: str) -> str:
    """The metric that carries a kernel's time: instructions in counter mode, else time."""
    if model["mode"] == "counters" and kernel in model["cpi"]:
        return "instructions"
    return TIME_METRIC


def _kernel_time(model: dict, kernel: str, values: dict) -> dict[str, tuple[np.ndarray, ...]]:
    """Computation and non-overlapped memory time of one kernel at the points."""
    if _kernel_metric(model, kernel) == TIME_METRIC:
        return {"comp_time": _fit_of(model, kernel, TIME_METRIC).predict(values)}
    frequency = hertz(model["machine"])
    instructions = _fit_of(model, kernel, "instructions").predict(values)
    cpi = model["cpi"][kernel]["cpi"]
    result = {"comp_time": tuple(b * cpi / frequency for b in instructions)}
    blocking = model["cpi"][kernel].get("bf_mem")
    total = memory_time(model, kernel, values) if blocking is not None else None
    stalls = _fit_of(model, kernel, "stall_cycles")
    if total is not None:
        # refined at a lower frequency (Eq. 5): BF_mem * T_mem, with the instructions' bounds
        result["mem_time"] = tuple(blocking * total * b / instructions[0] for b in instructions)
    elif stalls is not None:
        result["mem_time"] = tuple(b / frequency for b in stalls.predict(values))
    return result


def memory_time(model: dict, kernel: str, values: dict) -> np.ndarray | None:
    """T_mem of Eq. 3 from the fitted hit counts and the machine's latencies, in seconds."""
    latencies = model["machine"]["latency_cycles"]
    levels = {"l1_hits": "l1", "l2_hits": "l2", "llc_hits": "llc", "llc_misses": "memory"}
    total = None
    for metric, level in levels.items():
        fit = _fit_of(model, kernel, metric)
        if fit is None:
            return None
        cycles = fit.predict(values)[0] * latencies[level]
        total = cycles if total is None else total + cycles
    return total / hertz(model["machine"])


# ------------------------------------------------------------------------------ save and load

def provenance(inputs: list[Path], extra: dict) -> dict:
    """Where a result came from: inputs with their hashes, versions, host and time."""
    return {
        "apmt_version": __version__, "python": sys.version.split()[0],
        "numpy": np.__version__, "pandas": pd.__version__, "host": platform.node(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "inputs": [{"path": str(path), "sha256": _sha256(path)} for path in inputs], **extra,
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_model(model: dict, path: str | Path) -> None:
    data = {**model,
            "series": [{**e, "function": e["fit"].function, "fit": e["fit"].to_dict()}
                       for e in model["series"]],
            "communication": [operation_to_dict(op) for op in model["communication"]]}
    write_text_atomic(json.dumps(data, indent=1, default=_json_default) + "\n", path)


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot store {type(value).__name__} in a model file")


def load_model(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ApmtError(f"{path}: not a readable model file ({error})") from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise ApmtError(f"{path}: not an apmt model (field 'format' is not {MODEL_FORMAT!r})")
    data["series"] = [{**e, "fit": SeriesFit.from_dict(e["fit"])} for e in data["series"]]
    data["communication"] = [operation_from_dict(op) for op in data["communication"]]
    return data
