"""Measure a machine file on the current machine (``apmt machine probe``).

The model needs the core clock and the load latency of each cache level and of memory (Eq. 3).
``probe_machine`` compiles ``chase.c`` (a pointer-chasing benchmark in the manner of lmbench's
lat_mem_rd and Intel's MLC), runs it over working sets from 4 KiB to ``max_bytes``, reads the
cache geometry from sysfs, and picks each level's latency from the curve (``plateau``).
``write_machine`` writes the result in the machine-file format of ``apmt.machine``.

Not measured: branch and TLB penalties (no pointer chase shows them); the file leaves them out.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import logging
import os
import platform
import re
import statistics
import subprocess
import tempfile
import textwrap
from collections.abc import Callable
from importlib import resources
from itertools import pairwise
from pathlib import Path

import yaml

from apmt.errors import ApmtError
from apmt.machine import Machine, check_machine
from apmt.tables import write_text_atomic

log = logging.getLogger("apmt")
MIB = 1 << 20
DEFAULT_MAX_BYTES = 256 * MIB
QUICK_MAX_BYTES = 128 * MIB
FLAT = 1.25
"""Points of a plateau are at most this much slower than its fastest point."""
CFLAGS = ("-O2",)
SYSFS_CPU = Path("/sys/devices/system/cpu")


# -- building and running the benchmark -------------------------------------------------------

def _cache_dir() -> Path:
    """Where compiled benchmarks live: $XDG_CACHE_HOME/apmt, else a private temp folder."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "apmt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    folder = Path(tempfile.gettempdir()) / f"apmt-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def build_chase(folder: Path | None = None) -> Path:
    """Compile chase.c once per source and compiler; the name carries their hash, so an edited
    source or another $CC gets a fresh binary and concurrent probes never see a partial one."""
    compiler = os.environ.get("CC", "cc")
    source = resources.files(__name__).joinpath("chase.c").read_bytes()
    digest = hashlib.sha256(source + " ".join((compiler, *CFLAGS)).encode()).hexdigest()[:16]
    folder = folder or _cache_dir()
    binary = folder / f"chase-{digest}"
    if binary.is_file():
        return binary
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        source_file = Path(scratch) / "chase.c"
        source_file.write_bytes(source)
        built = Path(scratch) / "chase"
        try:
            result = subprocess.run([compiler, *CFLAGS, "-o", str(built), str(source_file)],
                                    capture_output=True, text=True, check=False)
        except OSError as error:
            raise ApmtError(f"cannot run the C compiler '{compiler}' ({error}); set $CC") from None
        if result.returncode != 0:
            raise ApmtError(f"compiling chase.c with '{compiler}' failed: "
                            f"{result.stderr.strip().splitlines()[-1:]}")
        os.replace(built, binary)
    return binary


def probe_sizes(max_bytes: int, min_bytes: int = 4096) -> list[int]:
    """Working sets from 4 KiB to max_bytes, two per octave (2^k and 1.5 * 2^k): fine enough to
    see each level's plateau, and every power of two is on it, so cache sizes are."""
    sizes, power = [], min_bytes
    while power <= max_bytes:
        sizes += [size for size in (power, power * 3 // 2) if size <= max_bytes]
        power *= 2
    return sizes


def run_chase(binary: Path, sizes: list[int], *, line: int, target_ms: float, reps: int,
              cpu: int, clock: bool) -> tuple[dict[int, float], float | None]:
    """One pass of the benchmark: ns per load by size, and the measured clock in GHz."""
    command = [str(binary), "-l", str(line), "-t", str(target_ms), "-r", str(reps),
               "-c", str(cpu), *(["-f"] if clock else []), *map(str, sizes)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ApmtError(f"the latency benchmark failed (exit {result.returncode}): "
                        f"{result.stderr.strip()}")
    latencies, ghz = {}, None
    for row in result.stdout.splitlines():
        words = row.split()
        if words[:2] == ["#", "frequency_ghz"]:
            ghz = float(words[2]) or None
        elif words and not row.startswith("#"):
            latencies[int(words[0])] = float(words[1])
    return latencies, ghz


def latency_curve(binary: Path, sizes: list[int], *, line: int, target_ms: float, reps: int,
                  passes: int, cpu: int) -> tuple[list[int], list[float], float | None]:
    """Fastest ns per load by size over several whole sweeps. Sweeping again rather than
    repeating each size longer spreads the runs over time, so a neighbour who fills a shared
    cache or memory bus for a few seconds spoils one pass, not the curve; noise only adds
    time, so the minimum is the unloaded latency."""
    best: dict[int, float] = {}
    ghz = None
    for index in range(passes):
        latencies, measured = run_chase(binary, sizes, line=line, target_ms=target_ms,
                                        reps=reps, cpu=cpu, clock=index == 0)
        ghz = ghz or measured
        for size, ns in latencies.items():
            best[size] = min(ns, best.get(size, ns))
    ordered = sorted(best)
    return ordered, [best[size] for size in ordered], ghz


# -- what the system says ---------------------------------------------------------------------

def _size_bytes(text: str) -> int:
    """sysfs cache sizes read like '32K', '1024K', '8M'."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if not match:
        raise ApmtError(f"unreadable cache size in sysfs: {text!r}")
    return int(match[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[match[2]]


def _field(folder: Path, name: str) -> str:
    path = folder / name
    return path.read_text().strip() if path.is_file() else ""


def read_caches(cpu: int = 0) -> list[dict]:
    """Data and unified caches of one CPU from sysfs, by level: level, type, size, ways, line."""
    caches = []
    for index in sorted((SYSFS_CPU / f"cpu{cpu}" / "cache").glob("index*")):
        kind = _field(index, "type")
        if kind not in ("Data", "Unified") or not _field(index, "size"):
            continue
        caches.append({"level": int(_field(index, "level")), "type": kind,
                       "size_bytes": _size_bytes(_field(index, "size")),
                       "ways": int(_field(index, "ways_of_associativity") or 0),
                       "line_bytes": int(_field(index, "coherency_line_size") or 64)})
    return sorted(caches, key=lambda cache: cache["level"])


def cpu_model() -> str:
    """The 'model name' line of /proc/cpuinfo (x86), else the platform's processor string."""
    try:
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = row.partition(":")
            if key.strip() in ("model name", "Model", "cpu model"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def system_frequency_ghz(cpu: int = 0) -> float | None:
    """The clock the system reports: cpufreq's current value, else /proc/cpuinfo's 'cpu MHz'.
    In a virtual machine both are often the host's nominal (TSC) clock, not the running one."""
    for name in ("scaling_cur_freq", "cpuinfo_cur_freq", "cpuinfo_max_freq"):
        path = SYSFS_CPU / f"cpu{cpu}" / "cpufreq" / name
        if path.is_file():
            return int(path.read_text()) / 1e6
    try:
        rows = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    mhz = [float(row.split(":")[1]) for row in rows if row.startswith("cpu MHz")]
    return mhz[0] / 1e3 if mhz else None


def _huge_pages() -> str:
    """The transparent-huge-page mode; chase.c asks for huge pages, granted unless 'never'."""
    path = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    match = re.search(r"\[(\w+)\]", path.read_text()) if path.is_file() else None
    return match[1] if match else "unknown"


# -- reading the curve ------------------------------------------------------------------------

def plateau(sizes: list[int], ns: list[float], low: float, high: float) -> float | None:
    """Latency of a level's plateau: the median of the points between working sets low and
    high that lie within FLAT (1.25) times the fastest of them; None if no point is there.

    Noise only adds time (interrupts, a cache or memory bus shared with other cores or virtual
    machines), so the fastest point is the least disturbed and slow points are dropped rather
    than averaged in. The level below can only make points faster, by the share of loads it
    still serves at the window's low end (at most a quarter, see level_window), which FLAT
    tolerates and the median of the kept points mostly absorbs.
    """
    values = [value for size, value in zip(sizes, ns, strict=True) if low <= size <= high]
    if not values:
        return None
    fastest = min(values)
    return statistics.median(value for value in values if value <= FLAT * fastest)


def level_window(sizes: list[int], below: int, capacity: int) -> tuple[int, int]:
    """The working sets that show a cache level of `capacity` bytes above one of `below` bytes:
    [4 x below, capacity / 2], where at most a quarter of the loads hit the level below and
    the level is at most half full. Levels only 4-8x apart leave fewer than two measured sizes
    there; the window then grows up to the capacity, then down to 2 x below, then to all of
    (below, capacity]."""
    windows = ((4 * below, capacity // 2), (4 * below, capacity), (2 * below, capacity),
               (below + 1, capacity))
    for low, high in windows:
        if sum(low <= size <= high for size in sizes) >= 2:
            return low, high
    return windows[-1]


def memory_window(sizes: list[int], llc: int) -> tuple[tuple[int, int], bool]:
    """Working sets that show memory: the top octave of the curve, and beyond 4 x the LLC, so
    that few loads still hit it (a share up to LLC / size may, which biases the value low by
    that share at most). When max_bytes stops short of 4 x the LLC the value includes many
    LLC hits and is too low: the second result marks that."""
    largest = max(sizes)
    limited = largest < 4 * llc
    low = largest // 2 if limited else max(4 * llc, largest // 2)
    return (max(low, llc + 1), largest), limited


# -- the machine file ---------------------------------------------------------------------------

def model_caches(caches: list[dict]) -> tuple[dict[str, dict], list[str]]:
    """Map read_caches' caches to the model's l1, l2 and llc. llc is the last level listed
    (the L2 on a two-level machine); without an L2, l2 repeats the L1. Notes say so."""
    by_level = {cache["level"]: cache for cache in caches}
    if 1 not in by_level:
        raise ApmtError("sysfs shows no level-1 data cache: give the machine file by hand")
    notes = []
    l2 = by_level.get(2, by_level[1])
    if 2 not in by_level:
        notes.append("no L2 in sysfs: l2 and llc repeat the L1")
    llc = by_level[max(by_level)]
    if max(by_level) == 2:
        notes.append("no L3 in sysfs: llc is the L2 (its latency repeats l2)")
    if max(by_level) > 3:
        notes.append(f"llc is the level-{max(by_level)} cache, the last one sysfs lists")
    return {"l1d": by_level[1], "l2": l2, "llc": llc}, notes


def _latencies_ns(sizes: list[int], ns: list[float], levels: dict[str, dict]
                  ) -> tuple[dict[str, float], dict[str, list[int]], bool]:
    """Each level's plateau, the windows used, and whether memory was limited by max_bytes."""
    latency: dict[str, float] = {}
    windows: dict[str, list[int]] = {}
    below, previous = 0, ""
    for key, name in (("l1", "l1d"), ("l2", "l2"), ("llc", "llc")):
        capacity = levels[name]["size_bytes"]
        if capacity <= below:  # a level repeated by model_caches: same cache, same latency
            latency[key], windows[key] = latency[previous], windows[previous]
            continue
        window = level_window(sizes, below, capacity)
        value = plateau(sizes, ns, *window)
        if value is None:
            raise ApmtError(f"no working set measured inside {name} ({capacity} bytes): "
                            "widen the probe's sizes")
        latency[key], windows[key], below, previous = value, list(window), capacity, key
    window, limited = memory_window(sizes, below)
    value = plateau(sizes, ns, *window)
    latency["memory"] = value if value is not None else ns[-1]
    windows["memory"] = list(window)
    return latency, windows, limited


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "machine"


def _allowed_cpu() -> int:
    """The first CPU this process may run on (a batch job may not own CPU 0)."""
    return min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0


def probe_machine(name: str | None = None, max_bytes: int | None = None, quick: bool = False,
                  frequency: float | str = "measured") -> Machine:
    """Measure this machine and return its machine file, checked (check_machine).

    max_bytes: largest working set (default 256 MiB; 128 MiB when quick). quick: short timing
    and fewer sweeps, for tests (a few seconds; the full probe takes about half a minute).
    frequency: 'measured' (dependent adds: the running clock), 'system' (cpufreq or
    /proc/cpuinfo), or a number in GHz.
    """
    cpu = _allowed_cpu()
    caches = read_caches(cpu)
    if not caches:
        raise ApmtError(f"sysfs lists no caches for CPU {cpu}: give the machine file by hand")
    levels, notes = model_caches(caches)
    line = levels["l1d"]["line_bytes"]
    max_bytes = max_bytes or (QUICK_MAX_BYTES if quick else DEFAULT_MAX_BYTES)
    timing = ({"target_ms": 10, "reps": 5, "passes": 3} if quick
              else {"target_ms": 60, "reps": 15, "passes": 5})
    sizes, ns, measured_ghz = latency_curve(build_chase(), probe_sizes(max_bytes), line=line,
                                            cpu=cpu, **timing)
    ghz, method = _frequency(frequency, measured_ghz, cpu)
    latency_ns, windows, limited = _latencies_ns(sizes, ns, levels)
    if limited:
        notes.append(f"memory latency limited by max_bytes ({max_bytes} bytes, less than 4x the "
                     f"{levels['llc']['size_bytes']}-byte LLC): part of its loads hit the LLC, "
                     "so it is too low")
    notes += _shared_cache_notes(latency_ns, windows, sizes, ns)
    if any(later < 0.9 * earlier for earlier, later in pairwise(latency_ns.values())):
        notes.append("latencies do not grow level by level: check the curve under probe")
    machine = {
        "name": name or _slug(cpu_model()),
        "description": _description(levels),
        "source": f"measured by apmt machine probe on {datetime.date.today().isoformat()}",
        "host": platform.node(),
        "cpu_model": cpu_model(),
        "frequency_ghz": round(ghz, 3),
        "latency_cycles": {key: round(value * ghz, 1) for key, value in latency_ns.items()},
        "latency_ns": {key: round(value, 3) for key, value in latency_ns.items()},
        "cache_bytes": {key: level["size_bytes"] for key, level in levels.items()},
        "cache_assoc": {key: level["ways"] for key, level in levels.items()},
        "line_bytes": line,
        "notes": notes,
        "probe": {"frequency_method": method, "frequency_measured_ghz": measured_ghz,
                  "frequency_system_ghz": system_frequency_ghz(cpu), "cpu": cpu,
                  "huge_pages": _huge_pages(), "max_bytes": max_bytes, **timing,
                  "windows": windows, "memory_limited_by_max_bytes": limited,
                  "sizes": sizes, "ns_per_load": [round(value, 3) for value in ns]},
    }
    return check_machine(machine, "apmt machine probe")


def this_machine(report: Callable[[str], None]) -> Path:
    """This host's machine file, for a study or a one-off diagnosis that names none: measured
    once (the full probe, about half a minute) and kept in the cache folder, where every later
    run on this host finds it. A lock makes concurrent jobs wait for one probe, not run
    several that disturb each other's timings. ``report`` says when it measures and where
    the file went."""
    path = _cache_dir() / "machines" / f"{_slug(platform.node())}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            log.info("machine file of this host: %s (measured earlier; delete it to measure "
                     "again)", path)
            return path
        report("no machine file named: measuring this host once (apmt machine probe, about "
               "half a minute)")
        write_machine(probe_machine(), path)
    report(f"machine file of this host written to {path}; later runs here use it (name "
           "another with --machine or a study's machine:)")
    return path


def _frequency(choice: float | str, measured: float | None, cpu: int) -> tuple[float, str]:
    """The clock to convert ns to cycles, and how it was obtained."""
    if isinstance(choice, int | float) and not isinstance(choice, bool):
        return float(choice), "given by the user"
    system = system_frequency_ghz(cpu)
    if choice == "measured" and measured:
        return measured, "dependent register adds, one cycle each (chase.c)"
    if choice in ("measured", "system") and system:
        return system, "reported by the system (cpufreq or /proc/cpuinfo)"
    raise ApmtError(f"no clock frequency ({choice!r} unavailable here): give it in GHz")


def _shared_cache_notes(latency_ns: dict[str, float], windows: dict[str, list[int]],
                        sizes: list[int], ns: list[float]) -> list[str]:
    """Say when the LLC stops holding data well before its size: the cache is shared (other
    cores, other virtual machines), and llc is the latency of the working sets it still held."""
    low, high = windows["llc"]
    slow = [size for size, value in zip(sizes, ns, strict=True)
            if low <= size <= high and value > FLAT * latency_ns["llc"]]
    if not slow:
        return []
    return [f"the LLC curve leaves its plateau from {min(slow) // 1024} KiB, below half its "
            "size: the cache is shared with other cores or machines; llc is the plateau before"]


def _description(levels: dict[str, dict]) -> str:
    sizes = ", ".join(f"{key} {level['size_bytes'] // 1024} KiB" for key, level in levels.items())
    virtual = " (virtual machine)" if "hypervisor" in _cpu_flags() else ""
    return f"{cpu_model()}, {os.cpu_count()} CPUs{virtual}; {sizes}"


def _cpu_flags() -> set[str]:
    try:
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            if row.startswith("flags"):
                return set(row.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


class _FlowList(list):
    """A list written on one (wrapped) line: the probe's long curve stays readable."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _FlowList, lambda dumper, data: dumper.represent_sequence(
        "tag:yaml.org,2002:seq", data, flow_style=True))


def write_machine(checked: Machine, path: str | Path) -> None:
    """Write a machine file atomically, with a header saying how it was made and what the
    probe does not measure."""
    machine = checked.to_dict()
    source = machine.get("source", "written by apmt")
    about = (
        f"Machine file for apmt: {machine.get('description', machine['name'])}. "
        f"{source[:1].upper()}{source[1:]}: pointer chasing over random cyclic "
        "permutations of cache lines (apmt/probe/chase.c), clock from dependent adds. "
        "latency_cycles = latency_ns x frequency_ghz. Each level's latency is the median of the "
        "curve's points well inside the level, slow outliers dropped (apmt.probe.plateau); the "
        "raw curve is under probe. Branch and TLB penalties are not measured: add "
        "penalty_cycles by hand if a diagnosis needs them."
    )
    header = textwrap.fill(about, 96, initial_indent="# ", subsequent_indent="# ") + "\n"
    body = yaml.dump(_flow_lists(machine), Dumper=_Dumper, sort_keys=False,
                     default_flow_style=False, width=96)
    write_text_atomic(header + body, path)


def _flow_lists(value: object) -> object:
    """The same data with every list of numbers marked to be written in flow style."""
    if isinstance(value, dict):
        return {key: _flow_lists(item) for key, item in value.items()}
    if isinstance(value, list) and all(isinstance(item, int | float) for item in value):
        return _FlowList(value)
    return value
