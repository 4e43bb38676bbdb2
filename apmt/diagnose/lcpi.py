"""PerfExpert's assessment (paper 002): per key kernel, its LCPI and upper bounds of the LCPI
that data accesses, instruction accesses, floating point, branches, data TLB and instruction
TLB can contribute, as bars from great to problematic, and the remedies for the worst category.

Which metrics and machine latencies enter each bound, the good-CPI threshold, the bar's scale
and the defaults for penalties a machine file may lack are data (``apmt/data/lcpi.yaml``); the
remedies are ``apmt/data/remedies.yaml``. A category whose metrics the backend did not give is
"not measured", never estimated from other counters.

The assessed run is the study's point with the largest P at which no ranks shared a core
(else the largest P; values are means over repetitions, per rank). Without counted cycles
(cachegrind, no PMU) the overall CPI is derived from the sampled time: time x the machine's
frequency / instructions, and the output says so.

Tidy LCPI table (``assess``): one row per key kernel and category.
    kernel      the function
    share       its share of the application's time (or cycles) at the assessed point
    category    ``overall`` or a category key of lcpi.yaml
    label       the category as shown
    lcpi        cycles per instruction (overall) or the category's upper bound; NaN when not
                measured
    assessment  great, good, okay, bad, problematic (lcpi.yaml's labels) or "not measured"
    formula     which formula gave it (or how the overall CPI was derived)
    missing     the metrics it lacks, comma-separated, when not measured
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from apmt.diagnose.imbalance import oversubscribed
from apmt.diagnose.section import Finding, Section
from apmt.diagnose.study import StudyData, read_study
from apmt.errors import ApmtError
from apmt.kernels import KEY_THRESHOLD, classify
from apmt.machine import Machine
from apmt.series import points
from apmt.tables import (
    APP_KERNEL,
    COUNTER_METRICS,
    TIME_METRIC,
)

OVERALL = "overall"
NOT_MEASURED = "not measured"
TLB_AND_FP = ("floating_point", "data_tlb", "instruction_tlb")
SEVERITY_BY_LEVEL = ("info", "info", "warning", "problem", "problem")
LCPI_COLUMNS = ["kernel", "share", "category", "label", "lcpi", "assessment", "formula",
                "missing"]


# ------------------------------------------------------------------------------ configuration

@dataclass(frozen=True)
class Term:
    """metrics (summed) x latency (the machine fields, summed), in cycles."""

    metrics: tuple[str, ...]
    latency: tuple[str, ...]


@dataclass(frozen=True)
class Formula:
    name: str
    terms: tuple[Term, ...]
    note: str | None = None

    @property
    def metrics(self) -> set[str]:
        return {metric for term in self.terms for metric in term.metrics}


@dataclass(frozen=True)
class Category:
    key: str
    label: str
    formulas: tuple[Formula, ...]


@dataclass(frozen=True)
class Config:
    """lcpi.yaml, checked."""

    good_cpi: float
    labels: tuple[str, ...]
    chars_per_label: int
    categories: tuple[Category, ...]
    defaults: dict[str, tuple[float, str]]
    validity: dict = field(default_factory=dict)

    @property
    def bar_width(self) -> int:
        return self.chars_per_label * len(self.labels)

    def category(self, key: str) -> Category:
        return next(c for c in self.categories if c.key == key)


def data_file(name: str) -> Path:
    return Path(str(resources.files("apmt") / "data" / name))


def load_config(path: str | Path | None = None) -> Config:
    """Read and check lcpi.yaml; a bad field is one ApmtError naming file and field."""
    path = Path(path) if path is not None else data_file("lcpi.yaml")
    data = _yaml(path)
    source = str(path)
    good = data.get("good_cpi")
    if not isinstance(good, int | float) or good <= 0:
        raise ApmtError(f"{source}: field 'good_cpi' must be a positive number, not {good!r}")
    bar = data.get("bar") or {}
    labels, chars = bar.get("labels"), bar.get("chars_per_label")
    if not isinstance(labels, list) or len(labels) < 2 or not isinstance(chars, int) or chars < 1:
        raise ApmtError(f"{source}: field 'bar' needs labels (a list) and chars_per_label")
    categories = tuple(_category(c, f"categories[{i}]", source)
                       for i, c in enumerate(data.get("categories") or []))
    defaults = {}
    for key, entry in (data.get("defaults") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), int | float):
            raise ApmtError(f"{source}: field 'defaults.{key}' needs a value and a source")
        defaults[key] = (float(entry["value"]), str(entry.get("source", "lcpi.yaml")))
    return Config(float(good), tuple(map(str, labels)), chars, categories, defaults,
                  data.get("validity") or {})


def _yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ApmtError(f"{path}: not readable YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ApmtError(f"{path}: expected a mapping of fields")
    return data


def _category(data: dict, where: str, source: str) -> Category:
    if not isinstance(data, dict) or not data.get("key") or not data.get("formulas"):
        raise ApmtError(f"{source}: field '{where}' needs key, label and formulas")
    formulas = []
    for i, formula in enumerate(data["formulas"]):
        terms = []
        for j, term in enumerate(formula.get("terms") or []):
            metrics = tuple(term.get("metrics") or ())
            unknown = [m for m in metrics if m not in COUNTER_METRICS]
            if not metrics or unknown:
                raise ApmtError(f"{source}: field '{where}.formulas[{i}].terms[{j}].metrics': "
                                f"{list(metrics)!r} (unknown: {unknown or 'none given'})")
            terms.append(Term(metrics, tuple(term.get("latency") or ())))
        formulas.append(Formula(str(formula.get("name", data["key"])), tuple(terms),
                                formula.get("note")))
    return Category(str(data["key"]), str(data.get("label", data["key"])), tuple(formulas))


def load_remedies(path: str | Path | None = None) -> dict:
    """remedies.yaml: category key -> {label, subcategories: [{name, remedies}]}."""
    path = Path(path) if path is not None else data_file("remedies.yaml")
    categories = _yaml(path).get("categories")
    if not isinstance(categories, dict):
        raise ApmtError(f"{path}: field 'categories' must map category keys to remedies")
    return categories


# ---------------------------------------------------------------------------------- kernels

def key_kernels(data: StudyData) -> list[str]:
    """The key kernels: the model's when fitted, else classified here (paper 000, 3.2), else
    (no time and no cycles measured) those above the threshold in instructions."""
    if data.model is not None:
        kernels = pd.DataFrame(data.model.kernels, columns=["kernel", "class", "max_share"])
    else:
        table = points(data.table, data.params)
        app = APP_KERNEL if APP_KERNEL in set(table["kernel"]) else None
        kernels = classify(table, data.params, app)
    keys = kernels[kernels["class"] == "key"].sort_values("max_share", ascending=False)
    if not keys.empty:
        return list(keys["kernel"])
    return _instruction_keys(data)


def _instruction_keys(data: StudyData) -> list[str]:
    table = points(data.table, data.params)
    counts = table[(table["metric"] == "instructions") & (table["kernel"] != APP_KERNEL)]
    if counts.empty:
        return []
    shares = counts["value"] / counts.groupby(["p", *data.params])["value"].transform("sum")
    best = shares.groupby(counts["kernel"]).max().sort_values(ascending=False)
    return list(best[best > KEY_THRESHOLD].index)


def assessed_point(data: StudyData) -> dict[str, float]:
    """The run assessed: the largest P whose ranks had a core each (ranks that share cores
    share caches and memory bandwidth too, which is not the kernel's own behaviour), else the
    largest P; at it, the last parameter combination."""
    runs = data.table[["p", *data.params]].drop_duplicates().sort_values(["p", *data.params])
    shared = oversubscribed(data.provenance)
    alone = runs[~runs["p"].isin(shared)]
    return (alone if not alone.empty else runs).iloc[-1].to_dict()


def point_values(data: StudyData, point: dict[str, float]) -> pd.DataFrame:
    """kernel x metric: per-rank means over the repetitions of one point.

    Backends leave out zero counts (cachegrind writes a function's events only where they
    are not zero): a counter that the point has for some kernel is zero, not unmeasured, for
    a kernel the same backend counted (it has instructions). Time stays unmeasured: a kernel
    without samples ran too briefly to say how long.
    """
    table = points(data.table, data.params)
    mask = np.ones(len(table), dtype=bool)
    for column, value in point.items():
        mask &= table[column].to_numpy() == value
    wide = table[mask].pivot_table(index="kernel", columns="metric", values="value",
                                   aggfunc="first")
    if "instructions" not in wide.columns:
        return wide
    counted = wide["instructions"].notna()
    counters = [m for m in wide.columns if m != TIME_METRIC]
    wide.loc[counted, counters] = wide.loc[counted, counters].fillna(0.0)
    return wide


def describe_point(point: dict[str, float]) -> str:
    return ", ".join(f"{'P' if k == 'p' else k}={v:g}" for k, v in point.items())


# ---------------------------------------------------------------------------------- the LCPI

@dataclass
class Bound:
    """One category of one kernel: its LCPI (NaN when not measured) and how."""

    category: str
    label: str
    lcpi: float
    formula: str
    missing: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()
    note: str | None = None

    @property
    def measured(self) -> bool:
        return not math.isnan(self.lcpi)


def machine_value(machine: Machine, key: str, config: Config) -> tuple[float, bool]:
    """A machine field such as ``latency_cycles.l1``, or lcpi.yaml's default (second value
    True). A field neither has is a bad input."""
    value = machine.value(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value), False
    if key in config.defaults:
        return config.defaults[key][0], True
    raise ApmtError(f"machine {machine.fields.get('name', '?')}: field {key!r} is missing and "
                    "lcpi.yaml has no default for it")


def overall(values: pd.Series, machine: Machine | None) -> Bound:
    """Cycles per instruction: counted cycles, else sampled time x frequency."""
    instructions = counted_value(values, "instructions")
    cycles = counted_value(values, "cycles")
    if instructions and cycles:
        return Bound(OVERALL, OVERALL, cycles / instructions, "cycles / instructions")
    time = counted_value(values, TIME_METRIC)
    if instructions and time and machine is not None:
        ghz = float(machine.frequency_ghz)
        return Bound(OVERALL, OVERALL, time * machine.hertz / instructions,
                     f"time x {ghz:g} GHz / instructions (cycles derived: not counted)")
    missing = tuple(m for m, v in (("instructions", instructions), ("cycles or time",
                                   cycles or time)) if not v)
    return Bound(OVERALL, OVERALL, float("nan"), "", missing or ("a machine file",))


def counted_value(values: pd.Series, metric: str) -> float | None:
    """A metric's value when it is positive; None when zero or not measured."""
    value = values.get(metric)
    return float(value) if value is not None and pd.notna(value) and value > 0 else None


def category_bound(values: pd.Series, category: Category, machine: Machine,
                   config: Config) -> Bound:
    """The category's upper bound from its first formula whose metrics were all measured."""
    instructions = counted_value(values, "instructions")
    measured = {m for m in values.index if pd.notna(values.get(m))}
    for formula in category.formulas:
        if instructions is None or not formula.metrics <= measured:
            continue
        cycles, defaults = 0.0, []
        for term in formula.terms:
            count = sum(float(values[m]) for m in term.metrics)
            for key in term.latency:
                latency, default = machine_value(machine, key, config)
                cycles += count * latency
                defaults += [key] if default else []
        return Bound(category.key, category.label, cycles / instructions, formula.name,
                     defaults=tuple(dict.fromkeys(defaults)), note=formula.note)
    wanted = min((f.metrics - measured for f in category.formulas), key=len)
    missing = tuple(sorted(wanted | ({"instructions"} if instructions is None else set())))
    return Bound(category.key, category.label, float("nan"), "", missing)


def kernel_bounds(values: pd.Series, machine: Machine | None, config: Config) -> list[Bound]:
    """Overall LCPI and every category's upper bound of one kernel."""
    bounds = [overall(values, machine)]
    if machine is None:
        return bounds
    return bounds + [category_bound(values, c, machine, config) for c in config.categories]


def level(lcpi: float, config: Config) -> int:
    """0 (great) .. len(labels)-1: one label per good-CPI threshold, up to and including it."""
    index = math.ceil(lcpi / config.good_cpi) - 1
    return min(max(index, 0), len(config.labels) - 1)


def assessment(bound: Bound, config: Config) -> str:
    return config.labels[level(bound.lcpi, config)] if bound.measured else NOT_MEASURED


def bar_chars(lcpi: float, config: Config) -> int:
    """Characters for an LCPI: chars_per_label per good-CPI threshold."""
    return round(lcpi / config.good_cpi * config.chars_per_label)


def bar(lcpi: float, config: Config) -> str:
    """PerfExpert's bar of '>', ending in '+' when the LCPI is beyond the scale."""
    if math.isnan(lcpi):
        return NOT_MEASURED
    count = bar_chars(lcpi, config)
    if count > config.bar_width:
        return ">" * (config.bar_width - 1) + "+"
    return ">" * count


def scale(config: Config) -> str:
    """The bar's header: each label followed by dots to its width, e.g. great.....good....."""
    width = config.chars_per_label
    return "".join(label.ljust(width, ".") for label in config.labels[:-1]) + config.labels[-1]


def worst(bounds: list[Bound]) -> Bound | None:
    """The measured category with the largest upper bound."""
    categories = [b for b in bounds if b.category != OVERALL and b.measured]
    return max(categories, key=lambda b: b.lcpi) if categories else None


# ------------------------------------------------------------------------------- assessment

def assess(data: StudyData, config: Config | None = None) -> pd.DataFrame:
    """The tidy LCPI table (see the module doc) of the key kernels at the assessed point."""
    config = config or load_config()
    point = assessed_point(data)
    values = point_values(data, point)
    rows = []
    for kernel in key_kernels(data):
        if kernel not in values.index:
            continue
        share = _share(values, kernel)
        for bound in kernel_bounds(values.loc[kernel], data.machine, config):
            rows.append({"kernel": kernel, "share": share, "category": bound.category,
                         "label": bound.label, "lcpi": bound.lcpi,
                         "assessment": assessment(bound, config), "formula": bound.formula,
                         "missing": ", ".join(bound.missing)})
    return pd.DataFrame(rows, columns=LCPI_COLUMNS)


def _share(values: pd.DataFrame, kernel: str) -> float:
    """The kernel's share of the application's time (or cycles) at the point."""
    for metric in ("cycles", TIME_METRIC):
        if metric not in values.columns or pd.isna(values.at[kernel, metric]):
            continue
        column = values[metric].drop(APP_KERNEL, errors="ignore")
        total = values.at[APP_KERNEL, metric] if APP_KERNEL in values.index and pd.notna(
            values.at[APP_KERNEL, metric]) else column.sum()
        return float(values.at[kernel, metric] / total) if total > 0 else float("nan")
    return float("nan")


def sections(study_dir: str | Path, machine: str | Path | None = None,
             data: StudyData | None = None) -> list[Section]:
    """The LCPI part of a diagnosis: the method, one section per key kernel, the remedies."""
    data = data or read_study(study_dir, machine)
    config = load_config()
    if data.machine is None:
        return [Section("PerfExpert assessment (LCPI)", note=(
            "needs a machine file for the latencies: none is named by the study; give one "
            "with --machine (a shipped name or a file from apmt machine probe)"))]
    point = assessed_point(data)
    values = point_values(data, point)
    keys = [k for k in key_kernels(data) if k in values.index]
    kernels = [k for k in keys if counted_value(values.loc[k], "instructions")]
    if not kernels:
        return [Section("PerfExpert assessment (LCPI)", note=(
            f"no key kernel has instruction counts at {describe_point(point)} "
            f"(key kernels: {', '.join(keys) or 'none'}); the LCPI needs a counter backend"))]
    assessed = {k: kernel_bounds(values.loc[k], data.machine, config) for k in kernels}
    method = _method_section(data, config, point, assessed)
    uncounted = [k for k in keys if k not in kernels]
    if uncounted:
        method.findings.append(Finding("info", f"not assessed, no instruction counts: "
                                       f"{', '.join(uncounted)} (e.g. time in the operating "
                                       "system, which cachegrind does not see)"))
    out = [method]
    out += [_kernel_section(k, _share(values, k), assessed[k], config, point) for k in kernels]
    out += remedy_sections(assessed, config)
    return out


def _method_section(data: StudyData, config: Config, point: dict,
                    assessed: dict[str, list[Bound]]) -> Section:
    """How the numbers were made: machine, CPI derivation, formulas, defaults used."""
    machine = data.machine
    latencies = ", ".join(f"{k} {v:g}" for k, v in machine.latency_cycles.items())
    findings = [Finding("info", f"assessed run: {describe_point(point)}; machine "
                        f"{machine.fields.get('name', '?')} ({data.machine_source}): "
                        f"{machine.frequency_ghz:g} GHz, latencies in cycles {latencies}")]
    bounds = [b for kernel in assessed.values() for b in kernel if b.measured]
    derived = sorted({b.formula for b in bounds
                      if b.category == OVERALL and "derived" in b.formula})
    findings += [Finding("info", f"overall CPI = {how}: cycles per instruction from the sampled "
                         "on-CPU time and the counted instructions") for how in derived]
    for note in sorted({f"{b.label}: {b.note}" for b in bounds if b.note}):
        findings.append(Finding("info", note))
    for key in sorted({key for b in bounds for key in b.defaults}):
        value, source = config.defaults[key]
        findings.append(Finding("info", f"default used: {key} = {value:g} cycles, not in the "
                                f"machine file ({source})"))
    simulated = [b["name"] for b in data.provenance.get("backends", []) if b.get("simulated")]
    if simulated:
        findings.append(Finding("info", f"counts simulated by {', '.join(simulated)} with the "
                                "machine's cache geometry, not measured on hardware"))
    note = (f"bars: one character is {config.good_cpi / config.chars_per_label:g} cycles per "
            f"instruction, one label {config.good_cpi:g} (the good-CPI threshold); '+' goes "
            "beyond the scale. Category values are upper bounds: an out-of-order core hides "
            "part of every latency, so a low bound rules a category out (paper 002, II.A)")
    return Section("PerfExpert assessment (LCPI)", findings, note=note)


def _kernel_section(kernel: str, share: float, bounds: list[Bound], config: Config,
                    point: dict) -> Section:
    where = f"{share:.0%} of the time, " if not math.isnan(share) else ""
    title = f"LCPI of {kernel} ({where}{describe_point(point)})"
    findings = _kernel_findings(kernel, bounds, config)
    rows = [{"category": b.label, "LCPI": format_lcpi(b.lcpi), "assessment": assessment(b, config),
             scale(config): bar(b.lcpi, config)} for b in bounds]
    table = pd.DataFrame(rows)
    table.attrs.update(bar_column=scale(config), bar_band=config.chars_per_label)
    return Section(title, findings, table)


def _kernel_findings(kernel: str, bounds: list[Bound], config: Config) -> list[Finding]:
    first, fine = bounds[0], _fine(bounds, config)
    findings = []
    if first.measured:
        just = "; it performs just fine" if fine else ""
        findings.append(Finding(_severity(first, config), f"{kernel}: overall LCPI "
                                f"{format_lcpi(first.lcpi)} ({assessment(first, config)}){just}",
                                kernel=kernel))
    else:
        findings.append(Finding("info", f"{kernel}: overall LCPI not measured (needs "
                                f"{', '.join(first.missing)})", kernel=kernel))
    top = worst(bounds)
    if top is not None:
        text = (f"{kernel}: worst category: {top.label}, upper bound {format_lcpi(top.lcpi)} "
                f"cycles per instruction ({assessment(top, config)})")
        if fine and level(top.lcpi, config) > level(first.lcpi, config):
            findings.append(Finding("info", f"{text}; it spends {format_lcpi(first.lcpi)} "
                                    "cycles per instruction in all, so the core hides most of "
                                    "that latency: little to gain there", kernel=kernel))
        else:
            findings.append(Finding(_severity(top, config), text, kernel=kernel))
    absent = [b for b in bounds[1:] if not b.measured]
    if absent:
        what = "; ".join(f"{b.label} (needs {', '.join(b.missing)})" for b in absent)
        findings.append(Finding("info", f"{NOT_MEASURED}: {what}: the backend gave no such "
                                "counters", kernel=kernel))
    return findings


def _fine(bounds: list[Bound], config: Config) -> bool:
    """Whether the kernel's overall LCPI is measured and within the good-CPI threshold. Its
    categories' bounds then say nothing to act on: no category costs more cycles per
    instruction than the kernel spends in all, and PerfExpert's bounds narrow down the
    causes of a high LCPI (paper 002, II.A), which it does not have. miniWeather's
    ``compute_tendencies_x`` runs at 0.27 with a data-access bound of 2.12."""
    return bounds[0].measured and bounds[0].lcpi <= config.good_cpi


def _severity(bound: Bound, config: Config) -> str:
    return SEVERITY_BY_LEVEL[min(level(bound.lcpi, config), len(SEVERITY_BY_LEVEL) - 1)]


def format_lcpi(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


# --------------------------------------------------------------------------------- remedies

def remedy_sections(assessed: dict[str, list[Bound]], config: Config) -> list[Section]:
    """One section per distinct worst category that is okay or worse, with its catalogue; not
    for a kernel that performs just fine (``_fine``)."""
    catalogue = load_remedies()
    kernels_by_category: dict[str, list[str]] = {}
    for kernel, bounds in assessed.items():
        top = worst(bounds)
        if top is not None and level(top.lcpi, config) >= 2 and not _fine(bounds, config):
            kernels_by_category.setdefault(top.category, []).append(kernel)
    out = []
    for key, kernels in kernels_by_category.items():
        entry = catalogue.get(key)
        if entry is None:
            raise ApmtError(f"{data_file('remedies.yaml')}: no remedies for category {key!r}")
        title = f"Remedies for {entry.get('label', key)} (worst in {', '.join(kernels)})"
        out.append(Section(title, [Finding("info", text) for text in remedy_texts(entry)],
                           note="from PerfExpert's catalogue (paper 002, Figs. 4 and 5); "
                                "flags: GCC, Clang, Intel oneAPI (icx/icpx/ifx)"))
    return out


def remedy_texts(entry: dict) -> list[str]:
    """Each remedy of a category as text: what, then lines with the example and the flags."""
    texts = []
    for sub in entry.get("subcategories") or []:
        for remedy in sub.get("remedies") or []:
            parts = [f"{sub['name']}: {remedy['text']}"]
            example = remedy.get("example")
            if example:
                parts += [f"before: {example['before']}", f"after:  {example['after']}"]
            flags = remedy.get("flags") or {}
            parts += [f"{name}: {flags[key]}" for key, name in
                      (("gcc", "GCC"), ("clang", "Clang"), ("oneapi", "oneAPI")) if key in flags]
            texts.append("\n".join(parts))
    return texts
