"""perf backends: hardware events sampled per function (perf-events), and software-clock time per
function (perf-clock) where the machine has no PMU.

Both wrap each rank in ``perf record`` writing ``perf.<pass>.<rank>.data`` (``perf.clock.<rank>
.data``) into the run folder, and read the files back with ``perf report`` (one section per
event, ``Samples;Period;Shared Object;Symbol`` rows). Sampling attributes each event to the
function that was running when the counter overflowed; the sum of the sample periods of a
function estimates its count (cycles, instructions, ... or, for cpu-clock, nanoseconds).

Kernel names: the (demangled) symbol; code without a symbol is grouped by its library
(``<libfoo>``); everything inside an MPI library except its public ``MPI_*`` entry points is
grouped by library (``<libmpi>``, ``<libopen-pal>``, ``<mca_btl_vader>``, ...), since MPI
is modelled as communication from the PMPI trace; the kernel itself is ``<kernel>``, the
dynamic loader ``<loader>``. The text report is kept beside each data file
(``.report.txt``), so the numbers can be read again without perf or the binaries.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from apmt.collect.backends import cpu as cpumod
from apmt.errors import ApmtError
from apmt.kernels import MPI_LIBRARY, MPI_NAME, function_name

KERNEL = "<kernel>"
LOADER = "<loader>"
UNKNOWN = "<unknown>"
DEFAULT_CLOCK_HZ = 997                 # a prime, so sampling does not beat with periodic code
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_SECTION = re.compile(r"^#\s*Samples:\s*(\S+)\s+of event '(.*)'\s*$")
_EVENT_COUNT = re.compile(r"^#\s*Event count \(approx\.\):\s*(\d+)")
COLUMNS = ["kernel", "metric", "rank", "value"]


# ---------------------------------------------------------------- kernel names


def library_name(dso: str) -> str:
    """``libmpi.so.40.30.4`` -> ``libmpi``; ``mca_btl_vader.so`` -> ``mca_btl_vader``."""
    base = dso.strip().rsplit("/", 1)[-1].strip("[]")
    return re.sub(r"\.so(\.[\w.]*)?$", "", base)


def is_loader(dso: str) -> bool:
    base = dso.strip().rsplit("/", 1)[-1]
    return base.startswith(("ld-linux", "ld64.so", "ld.so")) \
        or bool(re.match(r"^ld-[\d.]+\.so", base))


def kernel_name(dso: str, symbol: str) -> str:
    """The kernel a sample belongs to, from its shared object and symbol (see module doc)."""
    dso, symbol = dso.strip(), symbol.strip()
    if symbol.startswith("[k]") or dso.startswith("[kernel") or dso.startswith("[guest.kernel"):
        return KERNEL
    symbol = re.sub(r"^\[[.kgu]\]\s*", "", symbol)
    if dso in ("[unknown]", "") and (not symbol or _HEX.match(symbol) or symbol == "[unknown]"):
        return UNKNOWN
    if is_loader(dso):
        return LOADER
    library = library_name(dso)
    if not symbol or _HEX.match(symbol) or symbol == "[unknown]":
        return f"<{library}>"
    if MPI_LIBRARY.match(library) and not MPI_NAME.match(symbol):
        return f"<{library}>"
    return function_name(symbol)


# ---------------------------------------------------------------- perf report text


@dataclass
class EventSection:
    """One event's part of a ``perf report``: per-kernel period sums, and perf's own total."""

    name: str
    periods: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    samples: int = 0
    total: float | None = None          # "Event count (approx.)" of the header

    def add(self, kernel: str, samples: int, period: float) -> None:
        self.periods[kernel] += period
        self.samples += samples


def parse_report(text: str, source: str = "perf report") -> dict[str, EventSection]:
    """Parse ``perf report --stdio -t ';' -F sample,period,dso,sym`` (headers kept: one
    ``# Samples: N of event 'E'`` section per event) into sections keyed by event name as
    perf printed it. Checks each section's rows against its ``Event count`` header."""
    sections: dict[str, EventSection] = {}
    current: EventSection | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            current = _header_line(line, current, sections)
            continue
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(";", 3)]
        if len(fields) != 4 or not fields[0].isdigit():
            raise ApmtError(f"{source}: line {number}: not a 'samples;period;dso;symbol' row: "
                            f"{line.strip()[:80]!r}")
        if current is None:                      # a report without headers: one event
            current = sections.setdefault("", EventSection(""))
        current.add(kernel_name(fields[2], fields[3]), int(fields[0]), float(fields[1]))
    for section in sections.values():
        _check_total(section, source)
    return sections


def _header_line(line: str, current: EventSection | None,
                 sections: dict[str, EventSection]) -> EventSection | None:
    match = _SECTION.match(line)
    if match:
        return sections.setdefault(match[2], EventSection(match[2]))
    match = _EVENT_COUNT.match(line)
    if match and current is not None:
        current.total = float(match[1])
    return current


def _check_total(section: EventSection, source: str) -> None:
    """The rows of an event must add up to perf's own count: else the text is cut short."""
    if section.total is None:
        return
    total = sum(section.periods.values())
    if abs(total - section.total) > 1e-9 * max(section.total, 1.0):
        raise ApmtError(f"{source}: event {section.name!r}: rows sum to {total:.0f} but perf "
                        f"counted {section.total:.0f} (a truncated report?)")


def report_text(data: Path) -> str:
    """The text report of one perf data file, made once and kept as ``<data>.report.txt``."""
    cached = data.with_suffix(".report.txt")
    if cached.is_file() and (not data.exists()
                             or cached.stat().st_mtime >= data.stat().st_mtime):
        return cached.read_text()
    if not data.is_file():
        raise ApmtError(f"{data}: no such perf data file")
    if shutil.which("perf") is None:
        raise ApmtError(f"{data}: perf is needed to read it and is not installed")
    done = subprocess.run(["perf", "report", "-f", "--stdio", "--no-children", "-t", ";",
                           "-F", "sample,period,dso,sym", "-i", str(data)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise ApmtError(f"{data}: perf report failed ({lines[-1] if lines else 'no message'})")
    cached.write_text(done.stdout)
    return done.stdout


def perf_version() -> str:
    try:
        done = subprocess.run(["perf", "--version"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return "perf (not installed)"
    return done.stdout.strip() or "perf (version unknown)"


def _rank_files(run_dir: Path, stem: str) -> dict[int, Path]:
    """``<stem>.<rank>.data`` files of a run folder by rank (the data file need not be there
    any more when its text report is)."""
    files = {}
    for path in [*run_dir.glob(f"{stem}.*.data"), *run_dir.glob(f"{stem}.*.report.txt")]:
        rank = path.name[len(stem) + 1:].split(".", 1)[0]
        if rank.isdigit():
            files.setdefault(int(rank), path.parent / f"{stem}.{rank}.data")
    if not files:
        raise ApmtError(f"{run_dir}: no {stem}.<rank>.data files (was the run measured "
                        f"with this backend?)")
    return dict(sorted(files.items()))


def _rows(per_kernel: Mapping[str, float], metric: str, rank: int,
          scale: float = 1.0) -> list[dict]:
    return [{"kernel": k, "metric": metric, "rank": rank, "value": v * scale}
            for k, v in per_kernel.items() if v > 0]


def _table(rows: Iterable[dict], provenance: dict) -> pd.DataFrame:
    table = pd.DataFrame(list(rows), columns=COLUMNS)
    table = table.groupby(["kernel", "metric", "rank"], as_index=False, sort=True)["value"].sum()
    table.attrs["provenance"] = provenance
    return table


def _record_prefix(run_dir: Path, stem: str, options: list[str]) -> str:
    """``perf record`` words for the rank wrapper; the output path expands ``$rank``.

    Start-up and exit are a fixed cost per rank that short runs feel: no BPF events (0.8 s
    at exit with perf 6.1) and no build-ids (-B, --no-buildid-cache: 0.08 s; the report is
    made right after the run, on the same binaries).
    """
    out = f"{shlex.quote(str(run_dir))}/{stem}.${{rank}}.data"
    words = ["perf", "record", "--no-bpf-event", "-B", "--no-buildid-cache", "-q", *options]
    return " ".join(shlex.quote(w) for w in words) + f" -o {out} --"


def _require_perf(backend: str) -> None:
    if shutil.which("perf") is None:
        raise ApmtError(f"{backend}: perf is not installed (Debian: linux-perf, "
                        f"Ubuntu: linux-tools-generic)")


# ---------------------------------------------------------------- perf-clock


class PerfClock:
    """On-CPU time per function and rank from the software clock (no PMU needed)."""

    name = "perf-clock"
    simulated = False

    def __init__(self, frequency: int = DEFAULT_CLOCK_HZ) -> None:
        if not isinstance(frequency, int) or frequency < 1:
            raise ApmtError(f"perf-clock: sampling frequency must be a positive whole number "
                            f"of Hz, not {frequency!r}")
        self.frequency = frequency
        self.modifier = ""

    def check(self) -> None:
        _require_perf(self.name)
        self.modifier = cpumod.check_paranoid(cpumod.perf_event_paranoid(), cpumod.is_root())

    def event(self) -> str:
        return cpumod.with_modifier("cpu-clock", self.modifier)

    def rank_prefix(self, run_dir: Path) -> str:
        return _record_prefix(Path(run_dir), "perf.clock",
                              ["-e", self.event(), "-F", str(self.frequency)])

    def parse(self, run_dir: Path) -> pd.DataFrame:
        rows = []
        for rank, data in _rank_files(Path(run_dir), "perf.clock").items():
            sections = parse_report(report_text(data), str(data))
            for section in sections.values():
                if cpumod.event_key(section.name) in ("cpu-clock", ""):
                    rows += _rows(section.periods, "time", rank, 1e-9)   # periods in ns
        return _table(rows, self.provenance())

    def provenance(self) -> dict:
        return {"backend": self.name, "simulated": False, "tool": perf_version(),
                "event": self.event(), "frequency_hz": self.frequency,
                "metrics": {"time": "sum of cpu-clock sample periods (ns) per function, in s"},
                "user_space_only": self.modifier == "u",
                "note": "on-CPU time only: time a rank waits blocked (e.g. in MPI) is not seen"}


# ---------------------------------------------------------------- perf-events


class PerfEvents:
    """Hardware events sampled per function and rank: one object per pass of a schedule."""

    name = "perf-events"
    simulated = False

    def __init__(self, event_map: cpumod.EventMap, plan: cpumod.Schedule, index: int = 0,
                 period: int | None = None, cpu: cpumod.CpuInfo | None = None,
                 not_measured: Iterable[str] = ()) -> None:
        if not 0 <= index < len(plan.passes):
            raise ApmtError(f"perf-events: pass {index} does not exist ({len(plan.passes)} "
                            f"pass(es))")
        if period is not None and (not isinstance(period, int) or period < 1):
            raise ApmtError(f"perf-events: sampling period must be a positive whole number, "
                            f"not {period!r}")
        self.event_map, self.plan, self.index = event_map, plan, index
        self.period, self.cpu = period, cpu
        self.not_measured = sorted(set(not_measured))
        self.modifier = ""

    @property
    def metrics(self) -> dict[str, cpumod.MetricEvents]:
        return self.plan.passes[self.index]

    def stem(self) -> str:
        return f"perf.{self.index}"

    def events(self) -> list[str]:
        """The distinct event specs of this pass, with the modifier, in a stable order."""
        seen: dict[str, str] = {}
        for entry in self.metrics.values():
            for event in entry.events:
                seen.setdefault(cpumod.event_key(event), event)
        return [cpumod.with_modifier(e, self.modifier) for e in seen.values()]

    def check(self) -> None:
        _require_perf(self.name)
        self.modifier = cpumod.check_paranoid(cpumod.perf_event_paranoid(), cpumod.is_root())
        answers, why = cpumod.pmu_answers()
        if not answers:
            raise ApmtError(f"perf-events: no hardware PMU answers here ({why}); use backend "
                            f"'auto' (cpu-clock time and cachegrind counts) instead")
        check_events_accepted(self.events())

    def rank_prefix(self, run_dir: Path) -> str:
        options: list[str] = []
        for event in self.events():
            options += ["-e", event]
        if self.period is not None:
            options += ["-c", str(self.period)]
        return _record_prefix(Path(run_dir), self.stem(), options)

    def parse(self, run_dir: Path) -> pd.DataFrame:
        rows = []
        for rank, data in _rank_files(Path(run_dir), self.stem()).items():
            sections = parse_report(report_text(data), str(data))
            rows += self.rows_from_sections(sections, rank)
        return _table(rows, self.provenance())

    def rows_from_sections(self, sections: Mapping[str, EventSection], rank: int) -> list[dict]:
        """Per-kernel metric values from one rank's event sections (a sum metric adds its
        events; the reference cycles come from the first pass only)."""
        by_event: dict[str, list[EventSection]] = defaultdict(list)
        for name, section in sections.items():     # a hybrid CPU reports cpu_core/cycles/
            by_event[cpumod.event_key(name)].append(section)    # and cpu_atom/cycles/
        rows = []
        for metric, entry in self.metrics.items():
            if metric == self.plan.reference and self.index > 0:
                continue
            total: dict[str, float] = defaultdict(float)
            for event in entry.events:
                for section in by_event.get(cpumod.event_key(event), []):
                    for kernel, value in section.periods.items():
                        total[kernel] += value
            rows += _rows(total, metric, rank)
        return rows

    def reference_totals(self, run_dir: Path) -> dict[int, float]:
        """Total reference (cycles) count per rank of this pass: compare passes with it."""
        ref = self.plan.reference
        if ref is None:
            return {}
        key = {cpumod.event_key(e) for e in self.metrics[ref].events}
        out = {}
        for rank, data in _rank_files(Path(run_dir), self.stem()).items():
            sections = parse_report(report_text(data), str(data))
            out[rank] = sum(sum(s.periods.values()) for n, s in sections.items()
                            if cpumod.event_key(n) in key)
        return out

    def provenance(self) -> dict:
        return {
            "backend": self.name, "simulated": False, "tool": perf_version(),
            "cpu": self.cpu.describe() if self.cpu else "unknown",
            "event_file": self.event_map.name, "counters": self.plan.counters,
            "mode": self.plan.mode, "schedule": self.plan.describe(),
            "pass": self.index, "passes": len(self.plan.passes),
            "events": {m: list(e.events) for m, e in self.metrics.items()},
            "combine": {m: "sum" for m, e in self.metrics.items() if len(e.events) > 1},
            "notes": {m: e.note for m, e in self.metrics.items() if e.note},
            "reference": (f"{self.plan.reference} in every pass, reported from pass 0"
                          if self.plan.reference and self.plan.mode == "split" else None),
            "period": self.period if self.period else "perf's default per event",
            "user_space_only": self.modifier == "u",
            "not_measured": self.not_measured,
            "multiplexed": self.plan.multiplexed,
            "attribution": "per function by sampling: the sum of sample periods estimates "
                           "each function's count" + (
                               "; multiplexed events are sampled only while on a counter, "
                               "so their totals are low by that share of time"
                               if self.plan.multiplexed else ""),
        }


def check_events_accepted(events: list[str], timeout: float = 30.0) -> None:
    """Ask perf to count the events once (``perf stat ... true``); raise one line naming an
    event perf rejects or cannot count on this CPU."""
    command = ["perf", "stat", "-x", ","]
    for event in events:
        command += ["-e", event]
    done = subprocess.run([*command, "true"], capture_output=True, text=True, timeout=timeout,
                          check=False)
    problem = stat_problem(done.stderr, done.returncode, events)
    if problem:
        raise ApmtError(f"perf-events: {problem}")


def stat_problem(text: str, returncode: int, events: list[str]) -> str:
    """What is wrong with ``perf stat -x,`` output for these events, or '' if nothing."""
    syntax = re.search(r"event syntax error: '([^']*)'", text)
    if syntax:
        reason = re.search(r"\\___\s*(.+)", text)
        why = f" ({reason[1].strip()})" if reason else ""
        return f"perf does not accept event {syntax[1]!r} on this CPU{why}"
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[0].strip() == "<not supported>":
            return f"event {fields[2].strip()!r} is not supported on this CPU"
    if returncode != 0:
        lines = [line for line in text.splitlines() if line.strip()]
        return f"perf stat failed on {', '.join(events)}: {lines[-1] if lines else returncode}"
    return ""
