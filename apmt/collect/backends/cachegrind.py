"""cachegrind (valgrind): exact, simulated counts per function and rank, for machines without a
PMU. Every row it gives is simulated; its provenance says so and names the simulated caches.

Each rank runs under ``valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes`` with the
I1, D1 and LL caches pinned to the machine file's geometry (else valgrind copies the host's,
and results would differ between hosts) and writes ``cachegrind.<rank>.out``. The file is text:
``events:`` names the columns, ``fl=``/``fn=`` open a source file / function, each further line
is a source line number followed by its counts, and ``summary:`` holds the totals, against
which the per-function sums are checked.

cachegrind event -> apmt metric (exact within the simulated machine):
    Ir            instructions    instructions executed
    Dr            mem_loads       data reads (an x86 read-modify-write instruction counts as one
                                  read and no write: cachegrind's rule, so mem_stores is low by
                                  those)
    Dw            mem_stores      data writes
    Dr - D1mr     l1_hits         reads that hit D1: loads, as the hardware L1-hit events count
    D1mr + D1mw   l1d_misses      D1 misses, reads and writes (a metric of apmt's own)
    DLmr + DLmw   llc_misses      data misses of the simulated last-level cache
    Ir            l1i_accesses    every instruction is one I1 read in cachegrind's model
    I1mr          l1i_misses      I1 misses
    ILmr          lli_misses      instruction misses of the last level (a metric of apmt's own)
    Bc + Bi       branches        conditional and indirect branches executed
    Bcm + Bim     branch_misses   their simulated mispredictions
    D1mr - DLmr   llc_hits        only when the machine has no L2: cachegrind simulates two
                                  levels, so on a three-level machine D1 misses that hit LL would
                                  be L2 or LLC hits, and llc_hits/l2_hits are not measured.
Not measured: cycles, stall_cycles, l2 metrics, TLB misses, fp_ops (no timing, no TLB model).

Geometry (machine file): ``cache_bytes`` l1d, llc (and l1i, else the l1d size); optional
``cache_assoc`` (l1d, l1i, llc; defaults 8, the l1d value, 16) and ``line_bytes`` (default
64). valgrind needs a power-of-two number of sets, so an associativity that does not give one
is replaced by the nearest that does (e.g. 20 ways for a 40 MiB LLC), and the provenance says
so.
Kernel names: the function; the dynamic loader's and valgrind's own under ``<loader>``; MPI
library internals grouped by library from their name prefix (``ompi_``/``mca_`` -> ``<libmpi>``,
``opal_`` -> ``<libopen-pal>``, ...), public ``MPI_*`` entry points kept; the C library's
functions, known by glibc's source file names (``./string/...``, ``../sysdeps/unix/...``), under
``<libc>``, its math functions (``sysdeps/ieee754``) kept; ``???`` and the ELF's ``_init``
and ``_fini`` stubs -> ``<unknown>``, as perf names them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from apmt.collect.backends.cpu import MEASURABLE_METRICS
from apmt.collect.backends.perf import COLUMNS
from apmt.collect.rank_exec import RANK_WORD
from apmt.errors import ApmtError
from apmt.inputs import read_text
from apmt.machine import Machine
from apmt.names import LOADER, MPI_NAME, UNKNOWN, function_name, linker_stub

LEVELS = ("I1", "D1", "LL")
COUNT = re.compile(r"[0-9]+")
MAX_DIGITS = 19                 # counts below 10**19 < 2**64
DIGITS = frozenset("0123456789")
DEFAULT_ASSOC = {"l1d": 8, "l1i": 8, "llc": 16}
DEFAULT_LINE = 64
METRICS: dict[str, tuple[tuple[int, str], ...]] = {
    "instructions": ((1, "Ir"),),
    "mem_loads": ((1, "Dr"),),
    "mem_stores": ((1, "Dw"),),
    "l1_hits": ((1, "Dr"), (-1, "D1mr")),
    "l1d_misses": ((1, "D1mr"), (1, "D1mw")),
    "llc_misses": ((1, "DLmr"), (1, "DLmw")),
    "l1i_accesses": ((1, "Ir"),),
    "l1i_misses": ((1, "I1mr"),),
    "lli_misses": ((1, "ILmr"),),
    "branches": ((1, "Bc"), (1, "Bi")),
    "branch_misses": ((1, "Bcm"), (1, "Bim")),
    "llc_hits": ((1, "D1mr"), (-1, "DLmr")),
}
MPI_PREFIXES = (
    (("ompi_", "OMPI_", "mca_", "NBC_"), "libmpi"), (("opal_", "OPAL_"), "libopen-pal"),
    (("orte_", "ORTE_"), "libopen-rte"), (("pmix_", "PMIx_", "PMIX_"), "libpmix"),
    (("MPIR_", "MPID", "MPII_", "MPIU_", "MPL_"), "libmpich"), (("ucp_",), "libucp"),
    (("uct_",), "libuct"), (("ucs_",), "libucs"), (("ucm_",), "libucm"),
    (("apmt_",), "libapmt_pmpi"),
)
_LOADER_NAME = re.compile(r"^(_dl_|_dl[A-Z]|dl_main|_rtld|rtld_|__rtld|do_lookup_x|check_match"
                          r"|_start$|__GI__dl|vgPlain_|_vgn|_vgr|vg_)")
_LOADER_FILE = re.compile(r"(^|/)(elf/|rtld\.c|dl-[\w-]+\.[ch]$)|vg_preloaded|vg_replace")
# glibc's source files as its debug information names them (relative to its build tree)
_LIBC_FILE = re.compile(
    r"^\.{1,2}/(string|stdlib|stdio-common|libio|malloc|nptl|posix|misc|io|time|wcsmbs|csu"
    r"|signal|sysvipc|termios|sunrpc|nss|iconv|locale|setjmp|dirent|resolv|socket|inet|login"
    r"|pwd|grp|gmon|intl|ctype|assert|debug|argp|rt|htl|sysdeps(?!/ieee754))/")


@dataclass(frozen=True)
class Cache:
    """One simulated cache: size in bytes, associativity, line size in bytes."""

    size: int
    assoc: int
    line: int

    def option(self) -> str:
        return f"{self.size},{self.assoc},{self.line}"

    def describe(self) -> str:
        return f"{self.size} B, {self.line} B, {self.assoc}-way associative"


# ---------------------------------------------------------------- geometry


def cache_geometry(machine: dict, source: str = "machine") -> tuple[dict[str, Cache], list[str]]:
    """I1, D1 and LL from a machine file's mapping (Machine.to_dict), and notes on every
    default or adjustment used."""
    sizes = machine.get("cache_bytes")
    if not isinstance(sizes, dict):
        raise ApmtError(f"{source}: cachegrind needs field 'cache_bytes' (l1d, llc) to pin "
                        f"the simulated caches")
    assoc = machine.get("cache_assoc") or {}
    line = machine.get("line_bytes", DEFAULT_LINE)
    notes = [] if "line_bytes" in machine else [f"line size {DEFAULT_LINE} B (default)"]
    if not isinstance(line, int) or line < 16 or line & (line - 1):
        raise ApmtError(f"{source}: field 'line_bytes' must be a power of two >= 16, "
                        f"not {line!r}")
    caches = {}
    for level, key, fallback in (("I1", "l1i", "l1d"), ("D1", "l1d", None), ("LL", "llc", None)):
        size = sizes.get(key, sizes.get(fallback) if fallback else None)
        if key not in sizes and fallback:
            notes.append(f"{level} size taken from cache_bytes.{fallback}")
        if not isinstance(size, int) or size < line:
            raise ApmtError(f"{source}: field 'cache_bytes.{key}' must be a whole number of "
                            f"bytes, not {size!r}")
        wanted = assoc.get(key, assoc.get(fallback) if fallback else None)
        if wanted is None:
            wanted = DEFAULT_ASSOC[key]
            notes.append(f"{level} associativity {wanted} (default)")
        elif key not in assoc:
            notes.append(f"{level} associativity taken from cache_assoc.{fallback}")
        if not isinstance(wanted, int) or wanted < 1:
            raise ApmtError(f"{source}: field 'cache_assoc.{key}' must be a positive whole "
                            f"number, not {wanted!r}")
        ways = _power_of_two_sets(size, line, wanted)
        if ways is None:
            raise ApmtError(f"{source}: no associativity gives cachegrind a power-of-two number "
                            f"of sets for cache_bytes.{key} = {size}")
        if ways != wanted:
            notes.append(f"{level} associativity {ways}, not {wanted}: valgrind needs a "
                         f"power-of-two number of sets")
        caches[level] = Cache(size, ways, line)
    return caches, notes


def _power_of_two_sets(size: int, line: int, wanted: int) -> int | None:
    """The associativity nearest ``wanted`` for which size/(ways*line) is a power of two."""
    if size % line:
        return None
    lines = size // line
    fits = [w for w in range(1, min(lines, 64) + 1)
            if lines % w == 0 and (lines // w) & (lines // w - 1) == 0]
    return min(fits, key=lambda w: (abs(w - wanted), w)) if fits else None


# ---------------------------------------------------------------- the out file


@dataclass
class CachegrindOut:
    """One cachegrind.out file: its event names, per-function counts, summary, caches."""

    events: list[str]
    functions: dict[str, list[int]]
    summary: list[int]
    caches: dict[str, str]          # level -> the "desc:" text, e.g. "32768 B, 64 B, 8-way ..."


def read_out(text: str, source: str = "cachegrind.out") -> CachegrindOut:
    """Parse a cachegrind out file and check the per-function sums against its summary."""
    events: list[str] = []
    caches: dict[str, str] = {}
    functions: dict[str, list[int]] = {}
    summary: list[int] | None = None
    fl, counts = "", None
    for number, line in enumerate(text.splitlines(), 1):
        if line[:1] in DIGITS:                 # most lines: a line number and its counts
            if counts is None:
                raise ApmtError(f"{source}: line {number}: counts before any 'fn=' line")
            values = _numbers(line.split()[1:], len(events), source, number)
            for i, value in enumerate(values):
                counts[i] += value
        elif line.startswith("events:"):
            if events:
                raise ApmtError(f"{source}: line {number}: a second 'events:' line")
            events = line.split(":", 1)[1].split()
        elif line.startswith("desc:"):
            _read_desc(line, caches)
        elif line.startswith("fl="):
            fl = line[3:]
        elif line.startswith("fn="):
            name = function_kernel(line[3:], fl)
            counts = functions.setdefault(name, [0] * len(events))
        elif line.startswith(("summary:", "totals:")):
            summary = _numbers(line.split(":", 1)[1].split(), len(events), source, number)
    if not events or summary is None:
        raise ApmtError(f"{source}: not a complete cachegrind out file (no "
                        f"{'events' if not events else 'summary'} line)")
    _check_summary(functions, summary, events, source)
    return CachegrindOut(events, functions, summary, caches)


def _read_desc(line: str, caches: dict[str, str]) -> None:
    match = re.match(r"desc:\s*(I1|D1|LL) cache:\s*(.*)$", line)
    if match:
        caches[match[1]] = " ".join(match[2].split())


def _numbers(words: list[str], width: int, source: str, number: int) -> list[int]:
    """Counts of a line: ASCII digits ('²' is a digit to str.isdigit, not to int), at most
    19 of them (below 2**64: a 400-digit count would overflow every float after it)."""
    if len(words) > width or not (all(map(str.isdigit, words)) and all(map(str.isascii, words))
                                  and max(map(len, words), default=0) <= MAX_DIGITS):
        raise ApmtError(f"{source}: line {number}: expected up to {width} counts (whole "
                        f"numbers of at most {MAX_DIGITS} digits)")
    return [int(w) for w in words] + [0] * (width - len(words))


def _check_summary(functions: dict[str, list[int]], summary: list[int], events: list[str],
                   source: str) -> None:
    totals = [sum(c[i] for c in functions.values()) for i in range(len(events))]
    for event, total, expected in zip(events, totals, summary, strict=True):
        if total != expected:
            raise ApmtError(f"{source}: {event} of the functions sums to {total}, the summary "
                            f"says {expected}")


def function_kernel(function: str, source_file: str = "") -> str:
    """The kernel a cachegrind function belongs to (see module doc), named as perf names it
    (apmt.names.function_name), so that time and counts of one function meet."""
    function = function_name(function)
    if function in ("???", "") or linker_stub(function):
        return UNKNOWN
    if _LOADER_NAME.match(function) or _LOADER_FILE.search(source_file):
        return LOADER
    if MPI_NAME.match(function):
        return function
    for prefixes, library in MPI_PREFIXES:
        if function.startswith(prefixes):
            return f"<{library}>"
    return "<libc>" if _LIBC_FILE.match(source_file) else function


def metric_values(out: CachegrindOut, metrics: list[str]) -> dict[str, dict[str, float]]:
    """metric -> kernel -> value, from the per-function event counts. A zero is kept: the
    function ran and cachegrind counted none of that event (no miss), which is a measured
    value, not a missing one."""
    index = {e: i for i, e in enumerate(out.events)}
    result: dict[str, dict[str, float]] = defaultdict(dict)
    for metric in metrics:
        terms = METRICS[metric]
        if any(event not in index for _, event in terms):
            continue                          # e.g. no branch simulation in this file
        for kernel, counts in out.functions.items():
            result[metric][kernel] = float(sum(sign * counts[index[event]]
                                               for sign, event in terms))
    return result


# ---------------------------------------------------------------- the backend


class Cachegrind:
    """Simulated instruction, cache and branch counts per function and rank."""

    name = "cachegrind"
    simulated = True

    def __init__(self, machine: Machine, metrics: list[str] | None = None,
                 source: str = "machine") -> None:
        self.caches, self.notes = cache_geometry(machine.to_dict(), source)
        self.machine_name = str(machine.fields.get("name", source))
        self.three_levels = "l2" in machine.group("cache_bytes")
        available = [m for m in METRICS if not (m == "llc_hits" and self.three_levels)]
        asked = list(MEASURABLE_METRICS) if metrics is None else list(metrics)
        self.metrics = [m for m in available if m in asked]
        self.not_measured = [m for m in asked if m not in available]

    def check(self) -> None:
        if shutil.which("valgrind") is None:
            raise ApmtError("cachegrind: valgrind is not installed (package valgrind)")

    def rank_prefix(self, run_dir: Path) -> list[str]:
        """valgrind's words before each rank's command; ``{rank}`` names its output."""
        out = Path(run_dir) / f"cachegrind.{RANK_WORD}.out"
        return ["valgrind", "--tool=cachegrind", "-q", "--cache-sim=yes", "--branch-sim=yes",
                *(f"--{level}={self.caches[level].option()}" for level in LEVELS),
                f"--cachegrind-out-file={out}", "--"]

    def parse(self, run_dir: Path) -> pd.DataFrame:
        rows = []
        for rank, path in _out_files(Path(run_dir)).items():
            out = read_out(read_text(path), str(path))
            self._check_caches(out, path)
            for metric, per_kernel in metric_values(out, self.metrics).items():
                rows += [{"kernel": k, "metric": metric, "rank": rank, "value": v}
                         for k, v in per_kernel.items()]
        table = pd.DataFrame(rows, columns=COLUMNS)
        table.attrs["provenance"] = self.provenance()
        return table

    def _check_caches(self, out: CachegrindOut, path: Path) -> None:
        """The file must have simulated the caches this backend stands for."""
        for level, cache in self.caches.items():
            found = out.caches.get(level)
            if found is not None and found != cache.describe():
                raise ApmtError(f"{path}: simulated {level} is {found}, but the machine "
                                f"{self.machine_name} asks for {cache.describe()}")

    def provenance(self) -> dict:
        formulas = {m: " ".join(f"{'+' if s > 0 else '-'} {e}" for s, e in METRICS[m])
                    .removeprefix("+ ") for m in self.metrics}
        return {"backend": self.name, "simulated": True, "tool": valgrind_version(),
                "machine": self.machine_name,
                "caches": {level: c.describe() for level, c in self.caches.items()},
                "geometry_notes": self.notes, "metrics": formulas,
                "not_measured": self.not_measured,
                "note": "simulated by cachegrind (two cache levels, no timing): counts are "
                        "exact for the simulated machine, not measured on hardware"}


def _out_files(run_dir: Path) -> dict[int, Path]:
    files = {}
    for path in run_dir.glob("cachegrind.*.out"):
        rank = path.name[len("cachegrind."):-len(".out")]
        if COUNT.fullmatch(rank):
            files[int(rank)] = path
    if not files:
        raise ApmtError(f"{run_dir}: no cachegrind.<rank>.out files (was the run measured "
                        f"with cachegrind?)")
    return dict(sorted(files.items()))


def valgrind_version() -> str:
    try:
        done = subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                              check=False)
    except FileNotFoundError:
        return "valgrind (not installed)"
    return done.stdout.strip() or "valgrind (version unknown)"
