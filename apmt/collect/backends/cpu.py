"""Which CPU runs here, which perf events give apmt's metrics on it, and how they share counters.

The mapping from metric to event is data: one YAML file per CPU family in
``apmt/data/events/`` (a site may pass its own file). Each file lists the CPU models it applies
to (vendor, family and model as /proc/cpuinfo gives them), the number of general-purpose
counters, and per metric the event(s) perf knows on that family; a metric that needs two
events says ``combine: sum``. A metric a family cannot count is absent and reported as not
measured; so is one whose event perf knows but the kernel cannot count on this machine
(``perf stat`` prints ``<not supported>``, e.g. in a virtual machine that passes on only some
events): ``stat_metrics`` turns such a row into a note, never a number. ``generic.yaml``
(perf's generic events) serves any CPU without a file of its own.

Counters are few (4 per logical CPU on Intel with Hyper-Threading, 6 on AMD Zen), so the events
of a study are scheduled into passes. ``split`` (the default, as PerfExpert does) runs the
application once per pass, each pass fitting the counters, with the cycles event in every pass
so that passes can be compared; ``multiplex`` puts every event in one run and lets the kernel
time-share the counters, which costs one run but leaves each event counted only part of the time.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from apmt.errors import ApmtError
from apmt.inputs import read_yaml, shown
from apmt.resources import shipped
from apmt.tables import COUNTER_METRICS

# Metrics a backend may give beyond tables.COUNTER_METRICS (cachegrind's data-L1 and last-level
# instruction misses have no hardware counterpart in the papers' list).
EXTRA_METRICS = ("l1d_misses", "lli_misses")
KNOWN_METRICS = (*COUNTER_METRICS, *EXTRA_METRICS)
# What a counter backend may measure (``visits`` are call counts of tracing tools, not counters).
MEASURABLE_METRICS = tuple(m for m in KNOWN_METRICS if m != "visits")
MODES = ("split", "multiplex")
MAX_COUNTERS = 64              # hardware counters (or counter slots) of one logical CPU
REFERENCE_METRIC = "cycles"
CPUINFO = Path("/proc/cpuinfo")
_MODIFIERS = re.compile(r":[ukhIGHpPSDWeb]+$")
NOT_COUNTED, NOT_SUPPORTED = "<not counted>", "<not supported>"
STAT_WORDS = (NOT_COUNTED, NOT_SUPPORTED)       # what perf stat prints instead of a count
_STAT_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?")


@dataclass(frozen=True)
class CpuInfo:
    """The CPU as /proc/cpuinfo describes its first logical processor."""

    vendor: str            # GenuineIntel, AuthenticAMD, or "" when not x86
    family: int | None
    model: int | None
    model_name: str = ""

    def describe(self) -> str:
        if self.family is None or self.model is None:
            return self.model_name or "unknown CPU"
        return f"{self.vendor} family 0x{self.family:x} model 0x{self.model:x} ({self.model_name})"


@dataclass(frozen=True)
class MetricEvents:
    """The perf events whose counts, summed, give one metric."""

    events: tuple[str, ...]
    slots: int                     # counters the events occupy (an AMD paired event takes 2)
    note: str = ""


@dataclass(frozen=True)
class EventMap:
    """One family's metric -> events map, restricted to the CPU it was chosen for."""

    name: str
    source: str                    # the file it came from
    counters: int
    metrics: dict[str, MetricEvents]
    absent: tuple[str, ...] = ()   # metrics the file has, but not for this CPU model
    slots_of: dict[str, int] = field(default_factory=dict)   # event -> counters it takes


# ---------------------------------------------------------------- CPU detection


def detect_cpu(text: str | None = None) -> CpuInfo:
    """Vendor, family and model from /proc/cpuinfo (or the given text, for tests)."""
    if text is None:
        try:
            text = CPUINFO.read_text()
        except OSError:
            return CpuInfo("", None, None, "")
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break          # the first processor is enough
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    return CpuInfo(fields.get("vendor_id", ""), _int_or_none(fields.get("cpu family")),
                   _int_or_none(fields.get("model")),
                   fields.get("model name", fields.get("cpu model", "")))


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def pmu_answers(timeout: float = 20.0) -> tuple[bool, str]:
    """Whether a hardware PMU counts here: ``perf stat -e instructions -x, true`` gives a number
    (True) or ``<not supported>`` (False); the text says what perf answered."""
    try:
        done = subprocess.run(["perf", "stat", "-e", "instructions", "-x", ",", "true"],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return False, "perf is not installed"
    except subprocess.TimeoutExpired:
        return False, "perf stat did not answer"
    return parse_stat_answer(done.stderr + done.stdout)


def parse_stat_answer(text: str) -> tuple[bool, str]:
    """Whether ``perf stat -x, -e instructions`` output holds a count of instructions."""
    for row in parse_stat(text):
        if event_key(row.event) == "instructions":
            if row.value is not None:
                return True, f"perf stat counted {row.value:.0f} instructions"
            return False, f"perf stat -e instructions: {row.status}"
    lines = [line for line in text.splitlines() if line.strip()]
    return False, f"perf stat -e instructions: {lines[0] if lines else 'no output'}"


# ---------------------------------------------------------------- perf stat counts


@dataclass(frozen=True)
class StatRow:
    """One event's line of ``perf stat -x,``: its count, or perf's word for why it has none."""

    event: str                 # as perf printed it (modifiers included)
    value: float | None        # None when perf printed <not counted> or <not supported>
    status: str                # "" when counted, else perf's <not counted> / <not supported>
    running: float             # % of the measured time the event was on a counter


@dataclass(frozen=True)
class StatMetric:
    """One metric from ``perf stat`` rows: the sum of its events' counts, or a note why not."""

    value: float | None
    status: str                # "" when counted, else the first of its events' statuses
    note: str = ""


def parse_stat(text: str, source: str = "perf stat") -> list[StatRow]:
    """The event rows of ``perf stat -x,`` output (perf-stat(1), CSV FORMAT: value, unit,
    event, run time, percentage of time counted, then optional metric value and unit). Other
    lines (perf's messages, comments) are not rows; a row whose count is not a number or one
    of perf's two words is an error naming the line."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 5 or not fields[2] or not _STAT_NUMBER.fullmatch(fields[3]) \
                or not _STAT_NUMBER.fullmatch(fields[4]):
            continue
        value = fields[0]
        if value not in STAT_WORDS and not _STAT_NUMBER.fullmatch(value):
            raise ApmtError(f"{source}: line {number}: count {value!r} of event {fields[2]!r} "
                            f"is not a number, {' nor '.join(STAT_WORDS)}")
        counted = value not in STAT_WORDS
        rows.append(StatRow(fields[2], float(value) if counted else None,
                            "" if counted else value, float(fields[4])))
    return rows


def stat_metrics(rows: Sequence[StatRow], metrics: Mapping[str, MetricEvents]
                 ) -> dict[str, StatMetric]:
    """apmt's metrics from ``perf stat`` rows: each metric the sum of its events (the rows of
    one event on a hybrid CPU's two PMUs add up). A metric one of whose events perf did not
    count has no value but a note naming the event and perf's word: a partial sum is not the
    metric, and no count is not zero. An event perf counted part of the time (multiplexing)
    is scaled by perf; the note says so."""
    by_event: dict[str, list[StatRow]] = {}
    for row in rows:
        by_event.setdefault(event_key(row.event), []).append(row)
    out = {}
    for metric, entry in metrics.items():
        total, notes, status = 0.0, [], ""
        for event in entry.events:
            found = by_event.get(event_key(event), [])
            counted = [r for r in found if r.value is not None]
            if not counted:
                status = status or (found[0].status if found else "<no row>")
                notes.append(f"{event}: {found[0].status if found else 'perf printed no row'}")
                continue
            total += sum(r.value for r in counted)
            notes += [f"{r.event}: counted {r.running:g}% of the time, scaled by perf"
                      for r in counted if r.running < 100]
        out[metric] = StatMetric(None if status else total, status, "; ".join(notes))
    return out


def perf_event_paranoid(path: Path = Path("/proc/sys/kernel/perf_event_paranoid")) -> int | None:
    """The kernel's perf_event_paranoid level, or None if it cannot be read."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def check_paranoid(level: int | None, is_root: bool) -> str:
    """Say which samples perf may take: '' (all), 'u' (user space only); raise if none."""
    if is_root or level is None or level <= 1:
        return ""
    if level == 2:
        return "u"
    raise ApmtError(f"perf_event_paranoid is {level}: perf may not sample other users' or "
                    f"kernel code, nor your own processes; set it to 2 or lower "
                    f"(sysctl kernel.perf_event_paranoid=2) or run as root")


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def nmi_watchdog_on(path: Path = Path("/proc/sys/kernel/nmi_watchdog")) -> bool:
    """The NMI watchdog keeps one hardware counter busy: on AMD a general-purpose one, so the
    schedule has one counter less (on Intel it takes a fixed counter)."""
    try:
        return path.read_text().strip() == "1"
    except OSError:
        return False


# ---------------------------------------------------------------- event files


def shipped_event_files() -> list[str]:
    return shipped("events")


def _event_file(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = resources.files("apmt") / "data" / "events" / f"{name_or_path}.yaml"
    if not shipped.is_file():
        raise ApmtError(f"{name_or_path}: no such event file (shipped: "
                        f"{', '.join(shipped_event_files())})")
    return Path(str(shipped))


def read_event_file(name_or_path: str | Path) -> dict:
    """Read and check one event file; raises ApmtError naming the file and field."""
    path = _event_file(name_or_path)
    data = read_yaml(path)
    _check_event_file(data, str(path))
    data["_source"] = str(path)
    return data


def _check_event_file(data: object, source: str) -> None:
    if not isinstance(data, dict):
        raise ApmtError(f"{source}: an event file is a mapping of fields")
    if not isinstance(data.get("name"), str) or not data["name"].strip():
        raise ApmtError(f"{source}: field 'name' must be a non-empty text, "
                        f"not {shown(data.get('name'))}")
    _check_counters(data.get("counters"), f"{source}: field 'counters'")
    cpus = data.get("cpus")
    if cpus != "any":
        if not isinstance(cpus, list) or not cpus:
            raise ApmtError(f"{source}: field 'cpus' must list vendor/family/models, or be 'any'")
        for index, cpu in enumerate(cpus):
            _check_cpu_entry(cpu, f"{source}: cpus[{index}]")
    metrics = data.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise ApmtError(f"{source}: field 'metrics' must map metric names to events")
    for metric, entry in metrics.items():
        _check_metric_entry(metric, entry, f"{source}: metrics.{metric}")


def _check_counters(counters: object, where: str) -> None:
    if isinstance(counters, bool) or not isinstance(counters, int) \
            or not 1 <= counters <= MAX_COUNTERS:
        raise ApmtError(f"{where} must be a whole number from 1 to {MAX_COUNTERS}, "
                        f"not {shown(counters)}")


def _check_cpu_entry(cpu: object, where: str) -> None:
    if not isinstance(cpu, dict) or not isinstance(cpu.get("vendor"), str) \
            or isinstance(cpu.get("family"), bool) or not isinstance(cpu.get("family"), int):
        raise ApmtError(f"{where}: needs vendor (text) and family (number)")
    _model_ranges(cpu.get("models", "all"), where)
    if "counters" in cpu:
        _check_counters(cpu["counters"], f"{where}.counters")


def _check_metric_entry(metric: str, entry: object, where: str) -> None:
    if metric not in KNOWN_METRICS:
        raise ApmtError(f"{where}: unknown metric {metric!r} (known: {', '.join(KNOWN_METRICS)})")
    events = _entry_events(entry, where)
    if len(events) > 1 and (not isinstance(entry, dict) or entry.get("combine") != "sum"):
        raise ApmtError(f"{where}: {len(events)} events need 'combine: sum'")
    if isinstance(entry, dict):
        only_on = entry.get("only_on") or []
        if not isinstance(only_on, list):
            raise ApmtError(f"{where}.only_on must list vendor/family/models, "
                            f"not {shown(only_on)}")
        for index, cpu in enumerate(only_on):
            _check_cpu_entry(cpu, f"{where}.only_on[{index}]")
        if not isinstance(entry.get("note", ""), str):
            raise ApmtError(f"{where}.note must be text, not {shown(entry['note'])}")


def _entry_events(entry: object, where: str) -> list[tuple[str, int]]:
    """(event, slots) pairs of a metric entry: a name, a list, or a mapping with 'events'."""
    raw = entry.get("events") if isinstance(entry, dict) else entry
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ApmtError(f"{where}: 'events' must be an event name or a list of them")
    out = []
    for item in raw:
        name, slots = (item.get("name"), item.get("slots", 1)) if isinstance(item, dict) \
            else (item, 1)
        if not isinstance(name, str) or not name.strip() or isinstance(slots, bool) \
                or not isinstance(slots, int) or not 1 <= slots <= MAX_COUNTERS:
            raise ApmtError(f"{where}: bad event {item!r} (a name, or name and slots)")
        out.append((name.strip(), slots))
    return out


def _model_ranges(models: object, where: str) -> list[tuple[int, int]]:
    """Model list as inclusive ranges: 'all', a number, 'lo-hi', or a list of those."""
    if models == "all":
        return [(0, 1 << 16)]
    items = models if isinstance(models, list) else [models]
    ranges = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            ranges.append((item, item))
            continue
        match = re.fullmatch(r"\s*(0x[0-9a-fA-F]+|\d+)\s*-\s*(0x[0-9a-fA-F]+|\d+)\s*",
                             str(item))
        if not match:
            raise ApmtError(f"{where}: bad model {item!r} (a number, 'lo-hi' or 'all')")
        ranges.append((int(match[1], 0), int(match[2], 0)))
    return ranges


def _cpu_matches(cpu: CpuInfo, entries: object) -> dict | None:
    """The first entry of a 'cpus'/'only_on' list that covers this CPU, or None."""
    if entries == "any":
        return {}
    for entry in entries or []:
        if entry["vendor"] != cpu.vendor or entry["family"] != cpu.family or cpu.model is None:
            continue
        if any(lo <= cpu.model <= hi for lo, hi in _model_ranges(entry.get("models", "all"),
                                                                 "cpus")):
            return entry
    return None


def load_event_map(cpu: CpuInfo, name_or_path: str | Path | None = None) -> EventMap:
    """The event map for this CPU: the given file, else the shipped file covering its model,
    else generic.yaml. Metrics restricted by ``only_on`` to other models are dropped."""
    if name_or_path is not None:
        data = read_event_file(name_or_path)
        entry = _cpu_matches(cpu, data["cpus"])
        if entry is None:
            raise ApmtError(f"{data['_source']}: the event file does not cover this CPU "
                            f"({cpu.describe()})")
    else:
        data, entry = _shipped_map_for(cpu)
    counters = (entry or {}).get("counters", data["counters"])
    metrics, absent, slots_of = {}, [], {}
    for metric, item in data["metrics"].items():
        if isinstance(item, dict) and item.get("only_on") \
                and _cpu_matches(cpu, item["only_on"]) is None:
            absent.append(metric)
            continue
        events = _entry_events(item, metric)
        slots_of.update({event_key(e): s for e, s in events})
        metrics[metric] = MetricEvents(tuple(e for e, _ in events), sum(s for _, s in events),
                                       (item.get("note", "") if isinstance(item, dict) else ""))
    return EventMap(data["name"], data["_source"], counters, metrics, tuple(absent), slots_of)


def _shipped_map_for(cpu: CpuInfo) -> tuple[dict, dict | None]:
    fallback = None
    for name in shipped_event_files():
        data = read_event_file(name)
        if data["cpus"] == "any":
            fallback = data
            continue
        entry = _cpu_matches(cpu, data["cpus"])
        if entry is not None:
            return data, entry
    if fallback is None:
        raise ApmtError("no generic event file shipped with apmt")
    return fallback, {}


def check_metrics(metrics: Sequence[str] | None) -> list[str]:
    """Validate metric names a study asks for (one line naming the first unknown one)."""
    if metrics is None:
        return list(KNOWN_METRICS)
    for metric in metrics:
        if metric not in (*KNOWN_METRICS, "time"):
            raise ApmtError(f"unknown metric {metric!r} (known: time, {', '.join(KNOWN_METRICS)})")
    return list(metrics)


def event_key(event: str) -> str:
    """The name perf prints for an event, normalised: lower case, without modifiers, the
    ``name=`` of a raw ``pmu/.../`` event, and the inner name of ``cpu_core/cycles/``."""
    text = _MODIFIERS.sub("", event.strip())
    match = re.fullmatch(r"([\w.-]+)/(.*)/([a-zA-Z]*)", text)
    if match:
        terms = match[2]
        named = re.search(r"(?:^|,)name=([^,]+)", terms)
        if named:
            text = named[1]
        elif "=" not in terms and "," not in terms:
            text = terms
        else:
            text = f"{match[1]}/{terms}/"
    return text.lower()


def with_modifier(event: str, modifier: str) -> str:
    """Add a perf modifier (e.g. 'u': user space only) to an event spec."""
    if not modifier:
        return event
    return f"{event}{modifier}" if event.endswith("/") else f"{event}:{modifier}"


# ---------------------------------------------------------------- scheduling


@dataclass(frozen=True)
class Schedule:
    """Events grouped into passes; ``mode`` says whether passes are runs or one shared run."""

    mode: str                                  # "split" or "multiplex"
    counters: int
    passes: tuple[dict[str, MetricEvents], ...]
    reference: str | None                      # metric measured in every pass (split)
    multiplexed: bool                          # events exceed the counters within a run

    def describe(self) -> str:
        if self.mode == "multiplex":
            n = len(_pass_events(self.passes[0])) if self.passes else 0
            how = "multiplexed by the kernel" if self.multiplexed else "fit, no multiplexing"
            return f"multiplex: {n} events in one run on {self.counters} counters ({how})"
        ref = f", {self.reference} in every pass" if self.reference else ""
        return (f"split: {len(self.passes)} run(s) of at most {self.counters} counters each"
                f"{ref}")


def _pass_events(group: Mapping[str, MetricEvents]) -> dict[str, str]:
    """Distinct events of a pass: normalised name -> spec."""
    out: dict[str, str] = {}
    for entry in group.values():
        for event in entry.events:
            out.setdefault(event_key(event), event)
    return out


def _pass_slots(events: Mapping[str, str], slots_of: Mapping[str, int]) -> int:
    return sum(slots_of.get(key, 1) for key in events)


def schedule(metrics: Mapping[str, MetricEvents], counters: int, mode: str = "split",
             reference: str | None = REFERENCE_METRIC,
             slots_of: Mapping[str, int] | None = None) -> Schedule:
    """Group the metrics' events into passes that fit ``counters``.

    A metric's events (e.g. a sum pair) always stay in one pass. In ``split`` mode the
    ``reference`` metric (cycles), if among the metrics, is measured in every pass, as
    PerfExpert does, so that runs can be checked against each other. The other metrics are
    placed in apmt's metric order (instructions, stalls, the memory hierarchy, instruction
    cache, TLB, branches, floating point), so that metrics used together (CPI; the memory
    time of Eq. 3) tend to share a run, each into the first pass where it adds the fewest
    counters (an event already there costs nothing), else into a new pass.
    """
    if mode not in MODES:
        raise ApmtError(f"unknown counter mode {mode!r} (known: {', '.join(MODES)})")
    if counters < 1:
        raise ApmtError(f"counters must be at least 1, not {counters}")
    slots_of = dict(slots_of or {})
    for entry in metrics.values():
        for event in entry.events:
            slots_of.setdefault(event_key(event), entry.slots // max(len(entry.events), 1) or 1)
    if mode == "multiplex":
        group = dict(metrics)
        used = _pass_slots(_pass_events(group), slots_of)
        return Schedule(mode, counters, (group,) if group else (), None, used > counters)
    ref = reference if reference in metrics else None
    base = {ref: metrics[ref]} if ref else {}
    passes: list[dict[str, MetricEvents]] = []
    order = {m: i for i, m in enumerate(KNOWN_METRICS)}
    others = sorted((m for m in metrics if m != ref), key=lambda m: order.get(m, len(order)))
    for metric in others:
        _place(metric, metrics[metric], passes, base, counters, slots_of)
    if not passes and base:
        passes.append(dict(base))
    return Schedule(mode, counters, tuple(passes), ref, False)


def _place(metric: str, entry: MetricEvents, passes: list[dict[str, MetricEvents]],
           base: Mapping[str, MetricEvents], counters: int, slots_of: Mapping[str, int]) -> None:
    """Put one metric into the pass where it adds the fewest counters, or a new pass."""
    best, best_cost = None, None
    for group in passes:
        before = _pass_events(group)
        after = _pass_events({**group, metric: entry})
        if _pass_slots(after, slots_of) > counters:
            continue
        cost = _pass_slots(after, slots_of) - _pass_slots(before, slots_of)
        if best_cost is None or cost < best_cost:
            best, best_cost = group, cost
    if best is not None:
        best[metric] = entry
        return
    group = {**base, metric: entry}
    need = _pass_slots(_pass_events(group), slots_of)
    if need > counters:
        raise ApmtError(f"metric {metric!r} needs {need} counters with the reference events "
                        f"({', '.join(entry.events)}), but the CPU has {counters}")
    passes.append(group)
