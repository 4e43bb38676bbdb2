"""perf backends: hardware events sampled per function (perf-events), and software-clock time per
function (perf-clock) where the machine has no PMU.

Where perf runs (``apmt.collect.launch.measurement_scope``): by default, when every rank is
a descendant of ``mpirun``/``mpiexec`` on this host, one ``perf record`` runs around the
launcher, follows all ranks (inherited events) and writes ``perf.<pass>.data``
(``perf.clock.data``); its samples are split per rank by process afterwards, with the process
id each rank's start wrote (``rank.<rank>.pid``) and perf's task table (threads and child
processes count for their rank; the launcher's own samples for none, nor those of a rank's
process before it became the application: the launcher's fork and apmt's start, under their
own command names). Otherwise (srun, host lists, multi-node allocations, or
``APMT_PERF_SCOPE=rank``) each rank runs in its own ``perf record`` writing
``perf.<pass>.<rank>.data``. Both give the same per-function, per-rank
samples (each rank's events are its own, inherited or not); the single perf was made the
default because perf's start-up and exit are a fixed cost per perf process that ranks wait
for, and P perf processes compete with P ranks for P cores (at P=2 on 2 cores one perf per
rank, with perf 6.1's three full reads of /proc/kallsyms each, cost +24% of a 1.4 s LAMMPS
run). With the cuts in ``_record_words`` the fixed cost measured here (minimum of 15 runs of
``mpirun -np P true``) fell from 0.136 s to 0.016 s at P=1 and from 0.355 s (one perf per
rank) to 0.021 s (one perf around mpirun) at P=2; ``benchmarks/overhead.py --per-rank``
compares both ways on LAMMPS.

The data files are read back with ``perf report`` (one section per event,
``Samples;Period;Shared Object;Symbol`` rows, and a ``pid`` column for a launch-wide file).
Sampling attributes each event to the function that was running when the counter
overflowed; the sum of the sample periods of a function estimates its count (cycles,
instructions, ... or, for cpu-clock, nanoseconds).

Kernel names: the (demangled) symbol; code without a symbol is grouped by its library
(``<libfoo>``); everything inside an MPI library except its public ``MPI_*`` entry points is
grouped by library (``<libmpi>``, ``<libopen-pal>``, ``<mca_btl_vader>``, ...), since MPI
is modelled as communication from the PMPI trace; so is apmt's own tracer, entry points and
all (``<libapmt_pmpi>``: its ``MPI_Testany`` is the measurement's cost, not the application's
call, and cachegrind, which runs without it, gave that name time and no counts beside
libmpi's ``PMPI_Testany`` on Graph500); so is the C library (``<libc>``,
``<libpthread>``, ``<vdso>``: the system, not the application); the kernel itself is
``<kernel>``, the dynamic loader ``<loader>``. A PLT stub (``memcpy@plt``: the jump through
which a program calls a shared library) is not the function it jumps to, and cachegrind names
no PLT entry, counting its instructions under ``???``: perf's stubs are ``<unknown>`` too, so
that time and counts meet (miniAMR's ``memcpy@plt`` had been a kernel ``memcpy`` with time and
never a count); so is ``_init``, which perf stretches over the PLT's resolver entry after it
(apmt.names.linker_stub). The text report is kept beside each data file
(``.report.txt``, and perf's task table ``.tasks.txt`` for a launch-wide file), so the
numbers can be read again without perf or the binaries.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd

from apmt.collect.backends import cpu as cpumod
from apmt.collect.launch import SCOPE_VARIABLE, rank_pids
from apmt.collect.rank_exec import RANK_WORD
from apmt.errors import ApmtError
from apmt.inputs import MAX_VALUE, read_text
from apmt.names import (
    KERNEL,
    LOADER,
    MPI_LIBRARY,
    MPI_NAME,
    SYSTEM_LIBRARY,
    TRACER_LIBRARY,
    UNKNOWN,
    function_name,
    linker_stub,
)
from apmt.tables import write_text_atomic

DEFAULT_CLOCK_HZ = 997                 # a prime, so sampling does not beat with periodic code
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_SECTION = re.compile(r"^#\s*Samples:\s*(\S+)\s+of event '(.*)'\s*$")
_EVENT_COUNT = re.compile(r"^#\s*Event count \(approx\.\):\s*([0-9]+)")
_TASK = re.compile(r"^-?[0-9]+:")
_TASK_LINE = re.compile(r"^\s*(-?[0-9]+)\s+(-?[0-9]+)\s+(-?[0-9]+)\s+\|(.*)$")
_COMMAND_COLUMN = re.compile(r"Pid:Command\s*;\s*Command\s*;")
_COUNT = re.compile(r"[0-9]+")
_PERIOD = re.compile(r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")
REPORT_FIELDS = "sample,period,dso,sym"
TASK_REPORT_FIELDS = "sample,period,pid,comm,dso,sym"
COLUMNS = ["kernel", "metric", "rank", "value"]
Task = tuple[int, str | None]    # a thread id, and its command name at a sample (or None)


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
    if (MPI_LIBRARY.match(library) and not MPI_NAME.match(symbol)) \
            or SYSTEM_LIBRARY.match(library) or library == TRACER_LIBRARY:
        return f"<{library}>"
    if linker_stub(symbol):
        return UNKNOWN
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

    def merge(self, other: EventSection) -> None:
        for kernel, period in other.periods.items():
            self.periods[kernel] += period
        self.samples += other.samples


def parse_report(text: str, source: str = "perf report") -> dict[str, EventSection]:
    """Parse ``perf report --stdio -t ';' -F sample,period,dso,sym`` (headers kept: one
    ``# Samples: N of event 'E'`` section per event) into sections keyed by event name as
    perf printed it. Checks each section's rows against its ``Event count`` header."""
    by_task, totals = _parse_rows(text, source, with_task=False)
    return {event: tasks.get(None, EventSection(event, total=totals.get(event)))
            for event, tasks in by_task.items()}


def parse_task_report(text: str, source: str = "perf report"
                      ) -> dict[Task, dict[str, EventSection]]:
    """Parse ``perf report ... -F sample,period,pid,comm,dso,sym`` (the pid column is perf's
    ``tid:comm``, with the name the thread ended with; the comm column the name it had at
    the sample) into sections per (thread id, comm at the sample) and event; the rows of all
    threads together are checked against each event's ``Event count`` header. A report
    without the comm column (kept from an earlier apmt) has None for it."""
    by_task, _ = _parse_rows(text, source, with_task=True)
    out: dict[Task, dict[str, EventSection]] = defaultdict(dict)
    for event, tasks in by_task.items():
        for task, section in tasks.items():
            out[task or (0, None)][event] = section
    return dict(out)


def _parse_rows(text: str, source: str, with_task: bool
                ) -> tuple[dict[str, dict[Task | None, EventSection]], dict[str, float]]:
    """Rows of a text report by event and thread (None without a pid column), and the
    events' header totals, checked against the rows."""
    sections: dict[str, dict[Task | None, EventSection]] = {}
    totals: dict[str, float] = {}
    event: str | None = None
    width = 5 if with_task else 4
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            width = 6 if with_task and _COMMAND_COLUMN.search(line) else width
            event = _header_line(line, event, sections, totals)
            continue
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(";", width - 1)]
        if len(fields) != width or not _COUNT.fullmatch(fields[0]) \
                or not _PERIOD.fullmatch(fields[1]) or float(fields[1]) > MAX_VALUE \
                or (with_task and not _TASK.match(fields[2])):
            shape = ("samples;period;tid:comm;" + "comm;" * (width == 6) + "dso;symbol") \
                if with_task else "samples;period;dso;symbol"
            raise ApmtError(f"{source}: line {number}: not a '{shape}' row: "
                            f"{line.strip()[:80]!r}")
        if event is None:                        # a report without headers: one event
            event = ""
            sections.setdefault(event, {})
        task = (int(fields[2].split(":", 1)[0]), fields[3] if width == 6 else None) \
            if with_task else None
        section = sections[event].setdefault(task, EventSection(event, total=totals.get(event)))
        section.add(kernel_name(fields[-2], fields[-1]), int(fields[0]), float(fields[1]))
    for name, total in totals.items():
        _check_total(name, sum(sum(s.periods.values()) for s in sections[name].values()),
                     total, source)
    return sections, totals


def _header_line(line: str, event: str | None, sections: dict[str, dict],
                 totals: dict[str, float]) -> str | None:
    match = _SECTION.match(line)
    if match:
        sections.setdefault(match[2], {})
        return match[2]
    match = _EVENT_COUNT.match(line)
    if match and event is not None and event in sections:
        totals[event] = float(match[1])
        for section in sections[event].values():
            section.total = totals[event]
    return event


def _check_total(event: str, rows: float, total: float, source: str) -> None:
    """The rows of an event must add up to perf's own count: else the text is cut short."""
    if abs(rows - total) > 1e-9 * max(total, 1.0):
        raise ApmtError(f"{source}: event {event!r}: rows sum to {rows:.0f} but perf "
                        f"counted {total:.0f} (a truncated report?)")


def report_text(data: Path, fields: str = REPORT_FIELDS) -> str:
    """The text report of one perf data file, made once and kept as ``<data>.report.txt``."""
    return _perf_text(data, ".report.txt", ["report", "-f", "--stdio", "--no-children",
                                            "-t", ";", "-F", fields])


def tasks_text(data: Path) -> str:
    """perf's table of the recorded tasks (``pid tid ppid comm``), kept as
    ``<data>.tasks.txt``: which process each sampled thread belongs to, and its parent."""
    return _perf_text(data, ".tasks.txt", ["report", "-f", "--tasks"])


def _perf_text(data: Path, suffix: str, words: list[str]) -> str:
    cached = data.with_suffix(suffix)
    if cached.is_file() and (not data.exists()
                             or cached.stat().st_mtime >= data.stat().st_mtime):
        return read_text(cached)
    if not data.is_file():
        raise ApmtError(f"{data}: no such perf data file")
    if shutil.which("perf") is None:
        raise ApmtError(f"{data}: perf is needed to read it and is not installed")
    done = subprocess.run(["perf", *words, "-i", str(data)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise ApmtError(f"{data}: perf {words[0]} failed "
                        f"({lines[-1] if lines else 'no message'})")
    write_text_atomic(done.stdout, cached)
    return done.stdout


def parse_tasks(text: str, source: str) -> dict[int, tuple[int, int, str]]:
    """``perf report --tasks`` as thread id -> (process id, parent's process id, the
    command name the thread ended with)."""
    tasks = {}
    for line in text.splitlines():
        match = _TASK_LINE.match(line)
        if match:
            tasks[int(match[2])] = (int(match[1]), int(match[3]), match[4].strip())
        elif line.strip() and not line.startswith("#"):
            raise ApmtError(f"{source}: not a 'pid tid ppid |comm' line: {line.strip()[:80]!r}")
    return tasks


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


def rank_sections(run_dir: Path, stem: str) -> dict[int, dict[str, EventSection]]:
    """Each rank's event sections: split by process from ``<stem>.data`` when one perf
    recorded the whole launch, else from each rank's own ``<stem>.<rank>.data``."""
    run_dir = Path(run_dir)
    whole = run_dir / f"{stem}.data"
    if whole.is_file() or whole.with_suffix(".report.txt").is_file():
        return split_by_rank(whole, rank_pids(run_dir))
    return {rank: parse_report(report_text(data), str(data))
            for rank, data in _rank_files(run_dir, stem).items()}


def split_by_rank(data: Path, pids: Mapping[int, int]) -> dict[int, dict[str, EventSection]]:
    """The samples of one perf around the launcher, per rank: a thread belongs to the rank
    whose process (the rank start's, which execs the application) is its process or an
    ancestor of it. The launcher's own samples belong to no rank and are left out, as a perf
    per rank never sees them; so are those of a rank's process before it became the
    application (``_before_exec``). A rank without a sample was not followed: an error."""
    by_task = parse_task_report(report_text(data, TASK_REPORT_FIELDS), str(data))
    tasks = parse_tasks(tasks_text(data), str(data.with_suffix(".tasks.txt")))
    rank_of = {pid: rank for rank, pid in pids.items()}
    out: dict[int, dict[str, EventSection]] = {rank: {} for rank in sorted(pids)}
    for (tid, comm), sections in by_task.items():
        rank = _rank_of_task(tid, tasks, rank_of)
        if rank is None or _before_exec(tid, comm, tasks, rank_of):
            continue
        for event, section in sections.items():
            out[rank].setdefault(event, EventSection(event)).merge(section)
    unsampled = [rank for rank, sections in out.items() if not sections]
    if unsampled:
        raise ApmtError(f"{data}: no samples of rank {unsampled[0]} (pid {pids[unsampled[0]]}): "
                        f"the launcher did not start it as its descendant; measure each rank "
                        f"with its own perf ({SCOPE_VARIABLE}=rank)")
    return out


def _before_exec(tid: int, comm: str | None, tasks: Mapping[int, tuple[int, int, str]],
                 rank_of: Mapping[int, int]) -> bool:
    """A sample of a rank's own thread under another command name than the one it ended
    with: taken before it exec'd the application (in the launcher's fork, or in apmt's
    start, ``rank_exec``: Python's start-up, some 10 ms a rank), which a perf per rank,
    started by that exec, never sees."""
    return comm is not None and tid in rank_of and tid in tasks and comm != tasks[tid][2]


def _rank_of_task(tid: int, tasks: Mapping[int, tuple[int, int, str]],
                  rank_of: Mapping[int, int]) -> int | None:
    """The rank a thread works for: its process's, or the nearest ancestor process's."""
    pid = tasks.get(tid, (tid, -1, ""))[0]
    seen = set()
    while pid not in rank_of:
        if pid in seen or pid not in tasks:
            return None
        seen.add(pid)
        pid = tasks[pid][1]
    return rank_of[pid]


def _rows(per_kernel: Mapping[str, float], metric: str, rank: int,
          scale: float = 1.0) -> list[dict]:
    return [{"kernel": k, "metric": metric, "rank": rank, "value": v * scale}
            for k, v in per_kernel.items() if v > 0]


def _table(rows: Iterable[dict], provenance: dict) -> pd.DataFrame:
    table = pd.DataFrame(list(rows), columns=COLUMNS)
    table = table.groupby(["kernel", "metric", "rank"], as_index=False, sort=True)["value"].sum()
    table.attrs["provenance"] = provenance
    return table


def _record_words(options: list[str]) -> list[str]:
    """``perf record`` with what cuts its fixed cost per run (start-up and exit).

    No BPF events (0.8 s at exit with perf 6.1) and no build-ids (-B, --no-buildid-cache:
    0.08 s; the report is made right after the run, on the same binaries). perf 6.1 reads
    all of /proc/kallsyms three times at start (0.04 s each here: 120,000 symbols) to name
    kernel functions, which apmt groups as one ``<kernel>`` anyway. As root, apmt hides the
    file from perf (see ``_kallsyms_hidden``), or else drops CAP_SYSLOG (``setpriv``), which
    makes perf skip two of the reads. Kernel samples still count, as ``<kernel>``.
    """
    return [*_kallsyms_hidden(), "perf", "record", "--no-bpf-event", "-B",
            "--no-buildid-cache", "-q", *options]


@cache
def _kallsyms_hidden() -> tuple[str, ...]:
    """Words that run perf (and the launch or rank it starts) with /proc/kallsyms empty: a
    private mount namespace with /dev/null over it (root only; probed once). Without it,
    the words that drop CAP_SYSLOG; nothing when not root (perf then skips the reads that
    need kernel addresses by itself, as those are hidden from users)."""
    if not cpumod.is_root():
        return ()
    hide = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind /dev/null /proc/kallsyms && exec "$@"', "apmt-perf"]
    if shutil.which("unshare") and _runs([*hide, "true"]):
        return tuple(hide)
    if shutil.which("setpriv"):
        return ("setpriv", "--inh-caps=-syslog", "--bounding-set=-syslog", "--")
    return ()


def _runs(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=20,
                              check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _record_prefix(run_dir: Path, stem: str, options: list[str]) -> list[str]:
    """``perf record`` words before each rank's command; ``{rank}`` in the output file is
    the rank (filled by the rank's start, ``apmt.collect.rank_exec``)."""
    return [*_record_words(options), "-o", str(run_dir / f"{stem}.{RANK_WORD}.data"), "--"]


def _launch_prefix(run_dir: Path, stem: str, options: list[str]) -> list[str]:
    """``perf record`` words before the launcher: one perf follows every rank (inherit)."""
    return [*_record_words(options), "-o", str(Path(run_dir) / f"{stem}.data"), "--"]


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

    def options(self) -> list[str]:
        return ["-e", self.event(), "-F", str(self.frequency)]

    def rank_prefix(self, run_dir: Path) -> list[str]:
        return _record_prefix(Path(run_dir), "perf.clock", self.options())

    def launch_prefix(self, run_dir: Path) -> list[str]:
        return _launch_prefix(Path(run_dir), "perf.clock", self.options())

    def parse(self, run_dir: Path) -> pd.DataFrame:
        rows = []
        for rank, sections in rank_sections(Path(run_dir), "perf.clock").items():
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
        self.unsupported: dict[str, str] = {}     # metric -> why perf cannot count it here

    @property
    def metrics(self) -> dict[str, cpumod.MetricEvents]:
        """The pass's metrics, less those ``check`` found perf cannot count on this CPU."""
        return {m: e for m, e in self.plan.passes[self.index].items()
                if m not in self.unsupported}

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
        rows = check_events_accepted(self.events())
        counts = cpumod.stat_metrics(rows, self.metrics)
        self.unsupported = {m: c.note for m, c in counts.items()
                            if c.status == cpumod.NOT_SUPPORTED}
        if not self.metrics:
            raise ApmtError(f"perf-events: no metric of pass {self.index} can be counted on "
                            f"this CPU ({'; '.join(self.unsupported.values())})")

    def options(self) -> list[str]:
        options: list[str] = []
        for event in self.events():
            options += ["-e", event]
        if self.period is not None:
            options += ["-c", str(self.period)]
        return options

    def rank_prefix(self, run_dir: Path) -> list[str]:
        return _record_prefix(Path(run_dir), self.stem(), self.options())

    def launch_prefix(self, run_dir: Path) -> list[str]:
        return _launch_prefix(Path(run_dir), self.stem(), self.options())

    def parse(self, run_dir: Path) -> pd.DataFrame:
        rows = []
        for rank, sections in rank_sections(Path(run_dir), self.stem()).items():
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

    def provenance(self) -> dict:
        return {
            "backend": self.name, "simulated": False, "tool": perf_version(),
            "cpu": self.cpu.describe() if self.cpu else "unknown",
            "event_file": self.event_map.name, "counters": self.plan.counters,
            "mode": self.plan.mode, "schedule": self.plan.describe(),
            "pass": self.index, "passes": len(self.plan.passes),
            "events": {m: list(e.events) for m, e in self.metrics.items()},
            "combine": {m: "sum" for m, e in self.metrics.items() if len(e.events) > 1},
            "notes": {**{m: e.note for m, e in self.metrics.items() if e.note},
                      **{m: f"not supported on this CPU: {why}"
                         for m, why in self.unsupported.items()}},
            "reference": (f"{self.plan.reference} in every pass, reported from pass 0"
                          if self.plan.reference and self.plan.mode == "split" else None),
            "period": self.period if self.period else "perf's default per event",
            "user_space_only": self.modifier == "u",
            "not_measured": sorted({*self.not_measured, *self.unsupported}),
            "multiplexed": self.plan.multiplexed,
            "attribution": "per function by sampling: the sum of sample periods estimates "
                           "each function's count" + (
                               "; multiplexed events are sampled only while on a counter, "
                               "so their totals are low by that share of time"
                               if self.plan.multiplexed else ""),
        }


def check_events_accepted(events: list[str], timeout: float = 30.0) -> list[cpumod.StatRow]:
    """Ask perf to count the events once (``perf stat ... true``); raise one line naming an
    event perf does not know on this CPU. perf's rows are returned: an event it knows but
    the kernel cannot count here (``<not supported>``, e.g. in a virtual machine that passes
    on only some events) is the caller's to report as not measured."""
    command = ["perf", "stat", "-x", ","]
    for event in events:
        command += ["-e", event]
    done = subprocess.run([*command, "true"], capture_output=True, text=True, timeout=timeout,
                          check=False)
    problem = stat_problem(done.stderr, done.returncode, events)
    if problem:
        raise ApmtError(f"perf-events: {problem}")
    return cpumod.parse_stat(done.stderr, "perf stat")


def stat_problem(text: str, returncode: int, events: list[str]) -> str:
    """What keeps perf from counting these events at all (an event it does not know, a
    failed run), or '' if nothing; a ``<not supported>`` row is perf's answer for one event,
    read by ``cpu.parse_stat``."""
    syntax = re.search(r"event syntax error: '([^']*)'", text)
    if syntax:
        reason = re.search(r"\\___\s*(.+)", text)
        why = f" ({reason[1].strip()})" if reason else ""
        return f"perf does not accept event {syntax[1]!r} on this CPU{why}"
    if returncode != 0:
        lines = [line for line in text.splitlines() if line.strip()]
        return f"perf stat failed on {', '.join(events)}: {lines[-1] if lines else returncode}"
    return ""
