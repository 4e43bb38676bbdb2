"""The application model of paper 000, Eq. 2, assembled from per-series fits: the entity
(Model, with its kernels' fits, its MPI operations and its CPI per kernel) and how it is
built from a measurements table. apmt.predict evaluates it at points.

    T_app = sum_i (T_comp_i + BF_mem_i * T_mem_i) + BF_comm * T_comm + T_others

Counter mode (a kernel with ``instructions`` and cycles, counted or derived from its sampled
time and the machine file's clock, apmt.counters; and a machine file):
    T_comp_i = instructions_i(P) * CPI_i / f, with CPI_i the computing cycles per instruction
        and its deviation over runs (Eq. 4) reported;
    T_mem_i  = (l1_hits*L1 + l2_hits*L2 + llc_hits*LLC + memory_accesses*MEM) / f, with
        memory_accesses = llc_misses, over the levels the counters measure;
    BF_mem_i * T_mem_i, the memory time not overlapped, by the kernel's path: counted stall
        cycles (stall_cycles_i(P) / f, CPI_i = (cycles - stalls) / instructions); a
        lower-frequency rerun's solution (Eq. 5, apmt.refine); CPI_core and BF_mem split
        across the runs already made (apmt.counters); or none, when the data does not
        determine it: CPI_i is then the whole CPI and the memory term zero.
Time mode (no instructions, no clock, or asked for): a kernel's time is its own fit, and the
model says so. Values are per rank, so Eq. 2's division by P is already done.

T_comm is the sum of the operations' models (fitted, Hockney's shape preferred, or LogGP;
apmt.comm) when a communication table is given, else
the sum of the fits of the MPI calls found among the kernels. BF_comm is
(T_mapp - T_mcomp) / T_mcomm from runs that measured the application time (kernel ``<app>``),
else 1 (the bulk-synchronous case). T_others is the fit of the aggregated kernel.

The file form (``model.json``) is versioned: MODEL_FORMAT; a file of the first format is read
by a converter (its optional fields get the values apmt gave them then).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import sys
from collections.abc import Iterator
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd

from apmt import __version__
from apmt import counters as counter_mode
from apmt.comm import Operation, comm_keys, comm_points, fit_operations
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
from apmt.machine import Machine, check_machine
from apmt.nesting import resolve
from apmt.series import MIN_DISTINCT_P, listed, points, series_name
from apmt.tables import APP_KERNEL, TIME_METRIC, write_text_atomic
from apmt.trust import fixed_variables, merged_domain

MODEL_FORMAT = "apmt-model/2"
FORMAT_1 = "apmt-model/1"
MODES = ("auto", "counters", "time")
MODELLED = ("key", "non-scalable", "runtime", "application", "nested")
PARTS = ("comp_time", "mem_time", "comm_time", "others_time")
PART_LABELS = {"comp_time": "computation", "mem_time": "memory (not overlapped)",
               "comm_time": "communication", "others_time": "others"}
CONTENTION_LIMIT = 1e-4
UNACCOUNTED = "<unaccounted>"
CLASS_ORDER = ("key", "non-scalable", "communication", "runtime", "aggregated",
               "application")
NO_TIME = ("no application time: the table has no time per kernel (nor cycles with a machine "
           "file) and no measured application time")


# ---------------------------------------------------------------------------------- entities

@dataclass
class FittedSeries:
    """A kernel's fitted series: one metric of one kernel over P and the parameters."""

    kernel: str
    metric: str
    fit: SeriesFit

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "metric": self.metric, "fit": self.fit.to_dict(),
                "function": self.fit.function}

    @staticmethod
    def from_dict(data: dict) -> FittedSeries:
        return FittedSeries(data["kernel"], data["metric"], SeriesFit.from_dict(data["fit"]))


@dataclass
class LeftOut:
    """A series (kernel and metric) or an MPI operation the model could not fit, and why."""

    reason: str
    kernel: str | None = None
    metric: str | None = None
    operation: str | None = None

    @property
    def source(self) -> str:
        """What was left out, in words."""
        return f"MPI operation {self.operation}" if self.operation is not None else \
            f"{self.kernel}/{self.metric}"

    @property
    def not_modelled(self) -> str:
        """Why it has no fit, in words."""
        series = "" if self.operation is not None else "the series "
        return f"not modelled: {series}{self.reason}"

    def to_dict(self) -> dict:
        if self.operation is not None:
            return {"operation": self.operation, "reason": self.reason}
        return {"kernel": self.kernel, "metric": self.metric, "reason": self.reason}

    @staticmethod
    def from_dict(data: dict) -> LeftOut:
        return LeftOut(data["reason"], data.get("kernel"), data.get("metric"),
                       data.get("operation"))


@dataclass
class Cpi:
    """A kernel's computing cycles per instruction (Eq. 4): the mean over runs (or CPI_core
    split from them), its deviation, each run's CPI; BF_mem where a path gave one (``path``,
    apmt.counters: counted stalls, lower frequency, across runs, none) with ``why``, and the
    intervals and predictive spread of the split; after a lower-frequency refinement (Eq. 5)
    what it replaced (``refined``)."""

    cpi: float
    deviation: float
    per_run: dict[str, float]
    bf_mem: float | None = None
    refined: dict | None = None
    path: str | None = None
    why: str | None = None
    cpi_sd: float | None = None
    cpi_core_interval: list[float] | None = None
    bf_mem_interval: list[float] | None = None
    levels: list[str] | None = None

    def describe(self) -> str:
        """CPI_core and BF_mem, or the whole CPI, with the path and why."""
        if self.bf_mem is None:
            return (f"CPI {self.cpi:.3g} taken whole, no memory term (BF_mem {self.path}: "
                    f"{self.why})")
        return f"CPI_core {self.cpi:.3g}, BF_mem {self.bf_mem:.3g} ({self.path}: {self.why})"

    def to_dict(self) -> dict:
        data = {"cpi": self.cpi, "deviation": self.deviation, "per_run": self.per_run}
        optional = {name: getattr(self, name) for name in (
            "refined", "bf_mem", "path", "why", "cpi_sd", "cpi_core_interval",
            "bf_mem_interval", "levels")}
        return {**data, **{key: value for key, value in optional.items() if value is not None}}

    @staticmethod
    def from_dict(data: dict) -> Cpi:
        return Cpi(**{entry.name: data.get(entry.name) for entry in fields(Cpi)})


@dataclass
class Model:
    """The application model: its kernels (the kernels table's rows, apmt.tables), the fitted
    series, what was left out, the CPI per kernel, the machine, the MPI operations, BF_comm,
    and what the fits decided (mode, error correlation, calibration, notes). Lookups are
    methods; ``to_dict``/``from_dict`` give its file form."""

    params: list[str]
    per_rank_params: list[str]
    app_kernel: str | None
    scaling: str
    threshold: float
    kernels: list[dict]
    series: list[FittedSeries]
    left_out: list[LeftOut]
    cpi: dict[str, Cpi]
    machine: Machine | None
    contention: dict[str, float]
    communication: list[Operation]
    bf_comm: float
    bf_comm_note: str
    mode: str
    cost_metric: str
    error_correlation: dict = field(default_factory=dict)
    runtime: dict[str, list[str]] = field(default_factory=dict)
    interest: list[str] = field(default_factory=list)
    calibration: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    provenance: dict | None = None
    work: str | None = None     # the work per rank as an expression (apmt.work), if given
    call_path_values: str | None = None  # inclusive or exclusive, where the input said

    # ------------------------------------------------------------------------------ lookups

    @property
    def first_p(self) -> float:
        """The smallest P the model describes: where its fits start (the regime of
        apmt.fit_table), else 1. Below it the fits only run backwards out of their range
        (PENNANT's OS time, fitted from P = 3 where the ranks start to share 2 cores, gave
        0.64 s at P = 1, where 0.14 s was measured): the diagnosis and the figures leave
        those P out."""
        return float(self.calibration.get("regime", {}).get("start", 1.0))

    @property
    def classes(self) -> dict[str, str]:
        """Each kernel's class (key, non-scalable, communication, runtime, aggregated, ...)."""
        return {row["kernel"]: row["class"] for row in self.kernels}

    def kernels_of(self, *classes: str) -> list[dict]:
        """The kernels table's rows of these classes."""
        return [row for row in self.kernels if row["class"] in classes]

    def fit_of(self, kernel: str | None, metric: str) -> SeriesFit | None:
        """The fit of one series, or None when the model has none."""
        for entry in self.series:
            if entry.kernel == kernel and entry.metric == metric:
                return entry.fit
        return None

    def function_of(self, kernel: str | None, metric: str) -> str:
        fit = self.fit_of(kernel, metric)
        return fit.function if fit is not None else "(not fitted)"

    def kernel_metric(self, kernel: str) -> str:
        """The metric that carries a kernel's time: instructions in counter mode (where they
        were fitted), else time."""
        if self.mode == "counters" and kernel in self.cpi and \
                self.fit_of(kernel, "instructions") is not None:
            return "instructions"
        return TIME_METRIC

    def counter_kernels(self) -> Iterator[tuple[str, Cpi]]:
        """The key kernels modelled in counter mode, with their CPI split (path given)."""
        for row in self.kernels_of("key"):
            entry = self.cpi.get(row["kernel"])
            if entry is not None and entry.path and \
                    self.kernel_metric(row["kernel"]) == "instructions":
                yield row["kernel"], entry

    def summed_series(self) -> Iterator[tuple[FittedSeries, str]]:
        """The fitted series that Eq. 2 sums, with their kernel's class: each kernel's time
        (or instructions in counter mode), not the application's nor a nested region's."""
        classes = self.classes
        for entry in self.series:
            kind = classes.get(entry.kernel, "aggregated")
            if kind not in ("application", "nested") and \
                    entry.metric == self.kernel_metric(entry.kernel):
                yield entry, kind

    def computes(self) -> bool:
        """Whether some kernel's computation time is modelled (not only MPI)."""
        return any(kind != "communication" for _, kind in self.summed_series())

    def predicts_time(self) -> bool:
        """Whether the model has an application time: summed from the kernels' computation,
        or the fit of the application kernel (a counters-only table has neither)."""
        return self.computes() or self.fit_of(self.app_kernel, TIME_METRIC) is not None

    def fits(self) -> list[SeriesFit]:
        """Every fit of the model: its series' and its MPI operations' times."""
        return [entry.fit for entry in self.series] + [
            operation.fits["time"] for operation in self.communication]

    def variables(self) -> set[str]:
        """The names some fit of the model depends on (apmt.fit.SeriesFit.variables)."""
        return set().union(*(fit.variables for fit in self.fits()))

    def domains(self) -> list[dict[str, tuple[float, float]]]:
        """The measured ranges of every fit of the model."""
        return [fit.domain for fit in self.fits()]

    def measured_ranges(self, values: dict[str, np.ndarray]) -> list[dict[str, tuple]]:
        """Per point, the measured range of every fit of the model where it predicts
        (apmt.fit.SeriesFit.measured_range)."""
        return [fit.measured_range(values) for fit in self.fits()]

    @property
    def rho(self) -> float:
        """The summed terms' error correlation (independent when not measured)."""
        return self.error_correlation.get("rho", 0.0)

    def describe(self, path: str | Path) -> str:
        """Short summary: mode, scaling (the kernels' classes depend on it), kernel classes,
        fits, notes and the key kernels' time functions."""
        counts = pd.Series([row["class"] for row in self.kernels], dtype=object).value_counts()
        order = [*CLASS_ORDER, *sorted(set(counts.index) - set(CLASS_ORDER))]
        classes = ", ".join(f"{name} {counts[name]}" for name in order if name in counts)
        fitted = len(self.series) + len(self.communication)
        lines = [f"{path}: {self.mode} mode, {self.scaling} scaling, {len(self.kernels)} kernels "
                 f"({classes}), {fitted} series fitted"]
        lines += [f"note: {note}" for note in self.notes]
        lines += [f"work per rank: {self.work}"] if self.work else []
        for row in self.kernels_of("key"):
            metric = self.kernel_metric(row["kernel"])
            if self.fit_of(row["kernel"], metric) is None:    # no time: the metric classed by
                metric = self.cost_metric
            lines.append(f"  {row['kernel']}: {metric} = {self.function_of(row['kernel'], metric)}")
        if self.app_kernel not in (None, APP_KERNEL):
            lines.append(f"  application {self.app_kernel}: time = "
                         f"{self.function_of(self.app_kernel, TIME_METRIC)}")
        lines += [f"  {operation.describe()}" for operation in self.communication]
        return "\n".join(lines)

    # ---------------------------------------------------------------------------- file form

    def to_dict(self) -> dict:
        data = {"format": MODEL_FORMAT}
        for entry in fields(self):
            value = getattr(self, entry.name)
            if entry.name in ("series", "left_out", "communication"):
                value = [item.to_dict() for item in value]
            elif entry.name == "cpi":
                value = {kernel: cpi.to_dict() for kernel, cpi in value.items()}
            elif entry.name == "machine" and value is not None:
                value = value.to_dict()
            if entry.name != "provenance" or value is not None:
                data[entry.name] = value
        return data

    @staticmethod
    def from_dict(data: dict) -> Model:
        """The model of a file's content (of the current format; apmt-model/1 through
        from_format_1)."""
        values = {entry.name: data[entry.name] if entry.name in data else _default(entry)
                  for entry in fields(Model)}
        values["series"] = [FittedSeries.from_dict(entry) for entry in data["series"]]
        values["left_out"] = [LeftOut.from_dict(entry) for entry in data["left_out"]]
        values["communication"] = [Operation.from_dict(entry)
                                   for entry in data["communication"]]
        values["cpi"] = {kernel: Cpi.from_dict(entry) for kernel, entry in data["cpi"].items()}
        values["machine"] = check_machine(data["machine"], "the model's machine") \
            if data["machine"] is not None else None
        return Model(**values)


def _default(entry: Field) -> object:
    """A field's default for a file that predates it; a required field is missing."""
    if entry.default_factory is not MISSING:
        return entry.default_factory()
    if entry.default is not MISSING:
        return entry.default
    raise KeyError(entry.name)


def from_format_1(data: dict) -> dict:
    """A model file of format apmt-model/1 as format 2: the fields its older versions left
    out get the values apmt assumed for them (independent errors, operations' volume in
    bytes, no runtime buckets, no kernels of interest, no calibration)."""
    data = {**data, "format": MODEL_FORMAT}
    data.setdefault("error_correlation", {"rho": 0.0, "pairs": 0, "basis": "not measured"})
    data.setdefault("runtime", {})
    data.setdefault("interest", [])
    data.setdefault("calibration", {})
    data.setdefault("cost_metric", TIME_METRIC)
    data["communication"] = [{"volume_unit": 1.0, **operation}
                             for operation in data.get("communication", [])]
    return data


# ---------------------------------------------------------------------------------- building

def build_model(measurements: pd.DataFrame, params: list[str], *, source: str,
                comm: pd.DataFrame | None = None, machine: Machine | None = None,
                app_kernel: str | None = None, per_rank_params: frozenset[str] = frozenset(),
                threshold: float = 0.05, scaling: str | None = None,
                interest: frozenset[str] = frozenset(), work: str | None = None,
                mode: str = "auto", call_path_values: str | None = None) -> Model:
    """Classify kernels, fit every series that the model needs, and assemble Eq. 2.
    ``scaling`` is weak when a parameter is per rank (the work per rank stays as P grows),
    else strong, unless given; the kernels of ``interest`` are key whatever their share;
    ``work``: the work per rank as an expression (apmt.work), in the fits for ``size/p``.
    ``mode``: counters (Eq. 2's CPI and memory terms, apmt.counters), time (each kernel's
    time its own fit), or auto: counters where the table and the machine allow it.
    ``call_path_values``: what call paths' values hold (apmt.nesting.VALUE_KINDS), where the
    import or the user said; else the values decide."""
    if mode not in MODES:
        raise ApmtError(f"{source}: mode {mode!r} is not one of {', '.join(MODES)}")
    table, runtime = runtime_buckets(points(measurements, params), params)
    table, counted = counter_mode.complete(table, machine)
    app_kernel = app_kernel or (APP_KERNEL if APP_KERNEL in set(table["kernel"]) else None)
    if app_kernel is not None and app_kernel not in set(table["kernel"]):
        raise ApmtError(f"{source}: application kernel {app_kernel!r} not found")
    scaling = scaling or ("weak" if per_rank_params else "strong")
    metric = cost_metric(table, app_kernel)
    nesting = resolve(table, params, app_kernel, metric, call_path_values)
    table = nesting.table
    kernels = with_nested(classify(table, params, app_kernel, threshold, scaling, metric,
                                   interest), nesting.nested)
    classes = dict(zip(kernels["kernel"], kernels["class"], strict=True))
    if comm is None:
        modelled = {k for k, c in classes.items() if c in (*MODELLED, "communication")}
    else:
        modelled = {k for k, c in classes.items() if c in MODELLED}
    aggregated = [k for k, c in classes.items() if c == "aggregated"]
    operations, left_out, comm_notes = fit_operations(comm, params, source) \
        if comm is not None else ([], [], [])
    runs = _run_times(table, modelled_comm(comm, operations), classes, params, app_kernel) \
        if comm is not None and app_kernel is not None else None
    unaccounted = _unaccounted(runs) if runs is not None and app_kernel == APP_KERNEL \
        else pd.DataFrame()
    others = _aggregate(table, aggregated, params)
    series_table = pd.concat([table[table["kernel"].isin(modelled)], others, unaccounted],
                             ignore_index=True)
    fitted = fit_all(series_table, params, source, per_rank_params, work=work)
    series, left_out_series = _series_entries(fitted)
    if not series and not operations:
        raise ApmtError(f"{source}: nothing could be fitted: " + _why_nothing(
            table, {(e.kernel, e.metric): e.reason for e in left_out_series}))
    bf_comm, bf_comm_note = _bf_comm(runs) if runs is not None else (
        1.0, "1: no measured application time beside a communication table")
    if not unaccounted.empty:
        bf_comm, bf_comm_note = 1.0, (
            f"1: the measured application time exceeds computation plus MPI in every run; "
            f"the rest is modelled as {UNACCOUNTED} (start-up, waits outside MPI)")
    cpi = _cpi(counter_mode.per_run(table, counted, machine, params), modelled,
               _memory_levels(series, table, counted.levels))
    if mode == "counters" and not (cpi and machine is not None):
        raise ApmtError(f"{source}: counter mode needs each kernel's instructions, its cycles "
                        "(or sampled time, with a machine file's clock) and a machine file")
    model = Model(
        params=params, per_rank_params=sorted(per_rank_params), app_kernel=app_kernel,
        scaling=scaling, threshold=threshold, kernels=kernels.to_dict("records"),
        series=series, left_out=left_out_series + [LeftOut(why, operation=name)
                                                   for name, why in left_out],
        cpi=cpi, machine=machine,
        contention=_contention(table, {k for k, c in classes.items() if c == "key"}),
        communication=operations, bf_comm=bf_comm, bf_comm_note=bf_comm_note,
        mode="counters" if cpi and machine is not None and mode != "time" else "time",
        cost_metric=metric, runtime=runtime, interest=sorted(interest),
        calibration={"regime": fitted.regime, "intervals": fitted.calibration},
        counters=counted.to_dict() if cpi else {}, work=work,
        call_path_values=call_path_values)
    model.error_correlation = _error_correlation(model)
    model.notes = _notes(model) + fitted.notes + comm_notes + [note for note in (
        nesting.note, missing_interest(table, interest), _runtime_note(runtime)) if note]
    return model


def _why_nothing(table: pd.DataFrame, reasons: dict[tuple, str]) -> str:
    """Why no series could be fitted, in one line: once for the table when too few P are
    the reason of every series (a single profile imported), else the series' reasons."""
    levels = table["p"].nunique()
    if reasons and levels < MIN_DISTINCT_P and all(
            reason.startswith("has ") and " distinct p " in reason for reason in reasons.values()):
        more = f" and {len(reasons) - 1} more" if len(reasons) > 1 else ""
        which = f"series {series_name(min(reasons))!r}{more}"
        return (f"{which}: the table has {levels} distinct p ({listed(table['p'])}); "
                f"at least {MIN_DISTINCT_P} are needed to fit a series: measure or import runs "
                "at more P")
    return described(reasons) or "no kernel to model"


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


def measured_parts(model: Model, measurements: pd.DataFrame, comm: pd.DataFrame | None
                   ) -> pd.DataFrame:
    """Per point of measured runs, the application time and its parts as the model defines
    them (apmt.predict.predicted_parts), so that a validation compares like with like:
    columns p, the parameters, time, computation_time (every computing kernel), comm_time,
    others_time (the time neither explains, where the model has a term for it; else not a
    number). Without an application kernel the time is computation plus communication."""
    params = model.params
    table = resolve(runtime_buckets(points(measurements, params), params)[0], params,
                    model.app_kernel, model.cost_metric, model.call_path_values).table
    runs = _run_times(table, modelled_comm(comm, model.communication), model.classes, params,
                      model.app_kernel)
    computed = runs["comp"].add(runs["comm"], fill_value=0.0)
    total = runs["app"] if model.app_kernel is not None else computed
    others = total - computed if model.fit_of(UNACCOUNTED, TIME_METRIC) is not None \
        else np.nan
    frame = pd.DataFrame({"time": total, "computation_time": runs["comp"],
                          "comm_time": runs["comm"], "others_time": others})
    return frame.reset_index().dropna(subset=["time"])


def modelled_comm(comm: pd.DataFrame | None, operations: list[Operation]
                  ) -> pd.DataFrame | None:
    """The communication table's rows of the operations the model has. The time of those it
    left out (measured at fewer than 3 P, or no plausible fit) stays in what neither kernels
    nor MPI explain, which <unaccounted> models, instead of vanishing from the sum: LAMMPS
    fitted at P = 1, 2, 3 left out MPI_Send (no peer at P = 1), a tenth of its time, and
    assembled 0.52 s at P = 4 for a measured 0.64 s."""
    if comm is None:
        return None
    keys = pd.MultiIndex.from_frame(comm[list(comm_keys(comm))])
    return comm[keys.isin([tuple(operation.key) for operation in operations])]


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


def _series_entries(fitted: TableFit) -> tuple[list[FittedSeries], list[LeftOut]]:
    """The fitted series, and those left out with why."""
    return ([FittedSeries(kernel, metric, fit) for (kernel, metric), fit in fitted.fits.items()],
            [LeftOut(reason, kernel, metric)
             for (kernel, metric), reason in fitted.left_out.items()])


def _cpi(runs: pd.DataFrame, kernels: set[str],
         memory: dict[str, tuple[list[str] | None, str]]) -> dict[str, Cpi]:
    """CPI per kernel from its runs (apmt.counters.per_run): with counted stalls the mean
    computing CPI, (cycles - stalls) / instructions, whose memory term is the stalls' fit;
    else CPI_core and BF_mem split across the runs where they determine it and ``memory``
    (_memory_levels) says its T_mem can be predicted, the whole CPI where not (Eq. 4's
    deviation is that of the runs' CPI either way)."""
    result = {}
    if runs.empty:
        return result
    for kernel, values in runs.groupby(level="kernel"):
        if kernel not in kernels:
            continue
        stalls = values["stall_cycles"] if "stall_cycles" in values.columns else None
        counted = stalls is not None and bool(stalls.notna().all())
        per_run = (values["cycles"] - stalls) / values["instructions"] if counted \
            else values["cpi"]
        labels = [",".join(f"{name}={value:g}" for name, value in
                           zip(values.index.names[1:], key[1:], strict=True))
                  for key in values.index]
        cpi = per_run.to_numpy(float)
        deviation = float(np.sum((cpi - cpi.mean()) ** 2) / (len(cpi) - 1)) if len(cpi) > 1 \
            else float("nan")
        entry = Cpi(float(cpi.mean()), deviation, dict(zip(labels, cpi.tolist(), strict=True)))
        if counted:
            entry.path, entry.why = counter_mode.COUNTED, "stall cycles counted"
            spread = counter_mode.predictive_sd(cpi - cpi.mean(), len(cpi) - 1)
        else:
            split = counter_mode.split(values)
            if split.path == counter_mode.ACROSS:
                entry.levels, why = memory.get(kernel, (None, "the kernel has no fits"))
                if entry.levels is None:    # a level without a fit: no T_mem at new points
                    split = counter_mode.whole(values, f"{split.why}; not taken: {why}")
            entry.cpi, entry.bf_mem, entry.path, entry.why = (
                split.cpi_core, split.bf_mem, split.path, split.why)
            spread = split.cpi_sd
            entry.cpi_core_interval = list(split.cpi_core_interval) \
                if split.cpi_core_interval else None
            entry.bf_mem_interval = list(split.bf_mem_interval) \
                if split.bf_mem_interval else None
        entry.cpi_sd = spread if np.isfinite(spread) else None
        result[kernel] = entry
    return result


def _memory_levels(series: list[FittedSeries], table: pd.DataFrame, levels: tuple[str, ...]
                   ) -> dict[str, tuple[list[str] | None, str]]:
    """Per fitted kernel, the levels its T_mem sums at new points, or None with why
    (apmt.counters.fitted_levels): a level counted zero in every run adds nothing."""
    fitted: dict[str, set[str]] = {}
    for item in series:
        fitted.setdefault(item.kernel, set()).add(item.metric)
    all_zero = (table["value"] == 0).groupby([table["kernel"], table["metric"]]).all()
    zero: dict[str, set[str]] = {}
    for kernel, metric in all_zero[all_zero].index:
        zero.setdefault(kernel, set()).add(metric)
    return {kernel: counter_mode.fitted_levels(levels, metrics, zero.get(kernel, set()))
            for kernel, metrics in fitted.items()}


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


def _error_correlation(model: Model) -> dict:
    """How the summed terms' out-of-sample errors go together (fit_table.error_correlation):
    the application's interval adds its terms' with it. An operation's error is that of its
    time per call times its calls."""
    biases = [entry.fit.fold_bias for entry, _ in model.summed_series()]
    for operation in model.communication:
        bias = dict(operation.fits["time"].fold_bias)
        if operation.kind != "p2p":
            calls = operation.fits["calls"].fold_bias
            bias = {label: value + calls[label] for label, value in bias.items()
                    if label in calls}
        biases.append(bias)
    rho, pairs = error_correlation(biases)
    basis = (f"pooled over {pairs} pairs of summed terms sharing at least 3 cross-validation "
             "folds" if pairs else "no two summed terms share 3 folds: taken as independent")
    return {"rho": rho, "pairs": pairs, "basis": basis}


def _paths_note(model: Model) -> list[str]:
    """Which path each key kernel's BF_mem took (apmt.counters), one note each; model.json
    holds every kernel's."""
    return [f"{kernel}: {entry.describe()}" for kernel, entry in model.counter_kernels()]


def _unvaried_notes(model: Model) -> list[str]:
    """A variable every series measured at one value: the model does not depend on it, and
    predictions at other values are unsupported (apmt.trust.unvaried)."""
    fixed = fixed_variables(merged_domain(model.domains()), model.variables())
    return [f"{name} was measured at {fixed[name]:g} only: the model does not depend on it, "
            f"and predictions at other values of {name} are unsupported"
            for name in sorted(fixed, key=lambda n: (n != "p", n))]


def _notes(model: Model) -> list[str]:
    notes = []
    if model.mode == "time":
        why = "time mode asked for" if model.cpi and model.machine is not None else \
            "no machine file" if model.cpi else "no cycles were measured or derived"
        notes.append(f"time-only model ({why}): each kernel's time is its own fit, "
                     "without the CPI and memory terms of Eq. 2")
    else:
        notes += list(model.counters.get("notes", [])) + _paths_note(model)
    for kernel, ratio in model.contention.items():
        if ratio > CONTENTION_LIMIT:
            notes.append(f"memory contention: E = LLC misses / memory accesses = {ratio:.2g} "
                         f"for {kernel!r} exceeds {CONTENTION_LIMIT:g}; its predictions for "
                         "larger problem sizes may be optimistic (paper 000, 4.2)")
    notes += _unvaried_notes(model)
    app_fitted = model.fit_of(model.app_kernel, TIME_METRIC) is not None
    if model.app_kernel not in (None, APP_KERNEL) and app_fitted:
        notes.append(f"application time is the fit of {model.app_kernel!r}; the parts "
                     "are the other kernels as given and need not add up to it")
    notes += [f"{entry.source} {entry.not_modelled}" for entry in model.left_out]
    if model.app_kernel not in (None, APP_KERNEL) and not app_fitted:
        notes.append(f"application time is the sum of the parts: the time of "
                     f"{model.app_kernel!r} has no model")
    if model.cost_metric != TIME_METRIC:
        notes.append(f"kernels classed by {model.cost_metric}: no function has a measured "
                     "time")
    if not model.predicts_time():
        notes.append(f"{NO_TIME}; the model predicts each series as measured")
    unmodelled = [k["kernel"] for k in model.kernels_of("key", "non-scalable")
                  if model.fit_of(k["kernel"], model.kernel_metric(k["kernel"])) is None]
    if unmodelled:
        notes.append(f"the application time leaves out {', '.join(unmodelled)}: no model of "
                     "their time (see above)")
    return notes


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


def save_model(model: Model, path: str | Path) -> None:
    write_text_atomic(json.dumps(model.to_dict(), indent=1, default=_json_default) + "\n", path)


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot store {type(value).__name__} in a model file")


def load_model(path: str | Path) -> Model:
    """A model file of the current format, or of apmt-model/1 (converted); a damaged one
    (a field missing or of the wrong type) is one line naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ApmtError(f"{path}: not a readable model file ({error})") from None
    found = data.get("format") if isinstance(data, dict) else None
    if found not in (MODEL_FORMAT, FORMAT_1):
        raise ApmtError(f"{path}: not an apmt model (field 'format' is not {MODEL_FORMAT!r})")
    try:
        return Model.from_dict(from_format_1(data) if found == FORMAT_1 else data)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ApmtError(f"{path}: not a valid apmt model ({type(error).__name__}: "
                        f"{error})") from None
