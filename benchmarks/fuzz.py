"""Fuzz every reader of outside input with mutated copies of the real files the project carries.

Usage: python benchmarks/fuzz.py [--inputs 10000] [--readers extrap-text,cube,...]
                                 [--jobs 2] [--time-limit 10] [--seed 17]

Each reader (the function the command line calls for that input: ``apmt import``'s
importers, the study, machine and event files, the perf and cachegrind outputs, the PMPI
traces and the run record that ``apmt extract`` reads, and the measurements and communication
tables every later command reads) gets ``--inputs`` mutated versions of its seed files: byte
flips, truncations, deleted or doubled lines, a number replaced by a huge, negative, NaN,
infinite or malformed one, another encoding, inserted bytes (a cube profile: its members
mutated and packed again, or the archive itself). Every input ends in one of:

    rejected   apmt.errors.ApmtError: the one line the user sees, naming the input
    unnamed    an ApmtError whose line does not name the input's file or folder
    accepted   the reader returned, and what it returned holds no garbage
    garbage    the reader returned something no real file gives (NaN, infinite, negative or
               absurd numbers, P beyond 2**31, ...): see ``check_*`` below
    uncaught   any other exception: a traceback for the user
    hang       the reader ran past ``--time-limit`` seconds

and the table prints the counts per reader, with the first few uncaught and garbage cases
(their mutation and message) below it. The issue's target: 0 uncaught, 0 hangs, 0 garbage.
``tests/test_fuzz.py`` runs a few hundred inputs per reader with the same machinery.
"""

from __future__ import annotations

import argparse
import gzip
import io
import logging
import multiprocessing
import random
import re
import resource
import shutil
import signal
import sys
import tarfile
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from apmt.errors import ApmtError

REPOSITORY = Path(__file__).resolve().parents[1]
DATA = REPOSITORY / "data"
FIXTURES = REPOSITORY / "tests" / "fixtures"
SHIPPED = REPOSITORY / "apmt" / "data"
MAX_P = 2 ** 31
BOUND = 2.0 ** 64            # beyond what a 64-bit counter holds: no measured value is larger
MEMORY_LIMIT = 4 << 30       # a worker's address space: a blow-up fails instead of swapping
NUMBERS = ("9" * 400, "-1", "-7.5", "0", "nan", "NaN", ".nan", "inf", "-inf", ".inf", "-.inf",
           "1e308", "1e400", "-1e308", "2**70", "1180591620717411303424", "²", "1e", "0x1f",
           "true", "null", "1e20", "0.5", "", "١٢", "1_000")
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
HASWELL_EP = ("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 63\n"
              "model name\t: Intel(R) Xeon(R) CPU E5-2698 v3 @ 2.30GHz\n\n")


BAD = ("uncaught", "hang", "garbage", "unnamed")     # what must not happen


class Hang(Exception):
    """The per-input time limit ran out."""


# ------------------------------------------------------------------------------- mutations

def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def _lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    index = rng.randrange(len(lines))
    if rng.random() < 0.5:
        del lines[index]
    else:
        lines.insert(index, lines[index])
    return b"\n".join(lines)


def _number(data: bytes, rng: random.Random) -> bytes:
    found = list(NUMBER.finditer(data))
    if not found:
        return _flip(data, rng)
    out = data
    for match in sorted(rng.sample(found, min(len(found), rng.randint(1, 3))),
                        key=lambda m: -m.start()):
        out = out[:match.start()] + rng.choice(NUMBERS).encode() + out[match.end():]
    return out


def _encoding(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", errors="replace")
    choice = rng.randrange(4)
    if choice == 0:
        return text.encode("utf-16")
    if choice == 1:
        at = rng.randrange(len(text) + 1)
        return (text[:at] + "é²µ" + text[at:]).encode("latin-1", errors="replace")
    if choice == 2:
        at = rng.randrange(len(data) + 1)
        return data[:at] + b"\xff\xfe\x80" + data[at:]
    return b"\xef\xbb\xbf" + data


def _insert(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) + data[at:]


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "flip": _flip, "truncate": _truncate, "line": _lines, "number": _number,
    "encoding": _encoding, "insert": _insert,
}


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One to three mutations of a file's bytes, and their names."""
    names = [rng.choice(list(MUTATIONS)) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    for name in names:
        data = MUTATIONS[name](data, rng)
    return data, "+".join(names)


def mutate_cube(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A cube profile (a tar): mostly one member mutated and packed again, so that pycubexr
    reads the damage; sometimes the archive's own bytes."""
    if rng.random() < 0.2:
        return mutate(data, rng)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    index = rng.randrange(len(members))
    name = members[index][0].name
    changed, how = mutate(members[index][1], rng)
    members[index] = (members[index][0], changed)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member, content in members:
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content))
    return out.getvalue(), f"{name}:{how}"


# ------------------------------------------------------------------------------- garbage checks

def _finite(values: object, low: float = 0.0, high: float = BOUND) -> bool:
    return not _outside(values, low, high)


def _outside(values: object, low: float = 0.0, high: float = BOUND) -> list[float]:
    """The values that are not finite numbers within [low, high] (the first three)."""
    array = np.asarray(values, dtype=float).ravel()
    good = np.isfinite(array) & (array >= low) & (array <= high)
    return array[~good][:3].tolist()


def check_table(table: pd.DataFrame, kind: str = "measurements") -> str:
    """What is wrong with an accepted table ('' for nothing)."""
    if table.empty:
        return "empty table accepted"
    if not _finite(table["p"], 1, MAX_P) or (table["p"] % 1 != 0).any():
        return f"p {table['p'].tolist()[:3]}"
    values = ["value"] if kind == "measurements" else ["time", "calls"]
    for column in values:
        if _outside(table[column]):
            return f"{column} {_outside(table[column])}"
    if kind != "measurements" and _outside(table["bytes"].dropna()):
        return f"bytes {_outside(table['bytes'].dropna())}"
    text = ["kernel", "metric"] if kind == "measurements" else ["op", "library"]
    known = {*text, "p", "value", "time", "calls", "bytes", "rep", "rank", "peer", "unit"}
    for column in table.columns:
        if column not in known and _outside(table[column]):
            return f"parameter {column} {_outside(table[column])}"
    if "rank" in table.columns and not (_finite(table["rank"], 0, MAX_P)
                                        and (table["rank"] < table["p"]).all()):
        return f"rank {table['rank'].tolist()[:3]} at p {table['p'].tolist()[:3]}"
    for column in ("rep", "peer"):
        if column in table.columns and _outside(table[column], -3 if column == "peer" else 0):
            return f"{column} {_outside(table[column], -3 if column == 'peer' else 0)}"
    for column in text:
        if column in table.columns and not table[column].map(
                lambda v: isinstance(v, str) and v != "").all():
            return f"{column} not text"
    return ""


def check_study(study: object) -> str:
    if not all(isinstance(p, int) and 1 <= p <= MAX_P for p in study.p):
        return f"p {study.p}"
    if not 1 <= study.repetitions <= 1000:
        return f"repetitions {study.repetitions}"
    for values in study.params.values():
        if not _finite(values, 0):
            return f"params {values}"
    for point in study.points or ():
        if not _finite(list(point.values()), 0):
            return f"point {point}"
    if not _finite([study.timeout_s], 0, 1e9) or study.timeout_s <= 0:
        return f"timeout_s {study.timeout_s}"
    return ""


def check_machine(result: tuple[dict, object]) -> str:
    machine, _ = result
    numbers = [machine["frequency_ghz"], *machine["latency_cycles"].values()]
    for group in ("penalty_cycles", "cache_bytes", "cache_assoc"):
        if isinstance(machine.get(group), dict):
            numbers += list(machine[group].values())
    try:
        ok = _finite(numbers, 0, 1e15)
    except (TypeError, ValueError):
        return f"not numbers {numbers}"
    return "" if ok else f"numbers {numbers}"


def check_event_map(event_map: object) -> str:
    if not isinstance(event_map.counters, int) or not 1 <= event_map.counters <= 64:
        return f"counters {event_map.counters!r}"
    for metric, entry in event_map.metrics.items():
        if not entry.events or not all(isinstance(e, str) and e.strip() for e in entry.events):
            return f"metric {metric}: events {entry.events!r}"
    return ""


def check_rows(table: pd.DataFrame) -> str:
    """Per-rank rows of a backend (kernel, metric, rank, value)."""
    if _outside(table["value"]):
        return f"value {_outside(table['value'])}"
    if not _finite(table["rank"], 0, MAX_P):
        return "rank"
    return ""


# ------------------------------------------------------------------------------- readers

@dataclass
class Reader:
    """A reader of one kind of input: seed files, how one input is laid out and read."""

    seeds: list[Path]
    read: Callable[[Path, Path], object]     # (the mutated file, its seed) -> result
    check: Callable[[object], str]
    name_of: Callable[[Path], str] = lambda seed: seed.name   # file name of a mutated copy
    mutate: Callable[[bytes, random.Random], tuple[bytes, str]] = mutate
    cut_lines: int | None = None             # a large seed: a window of this many lines
    companions: Callable[[Path], list[Path]] = lambda seed: []   # files copied beside it
    folder: Callable[[Path], str] = lambda seed: "input"


def _import(fmt: str) -> Callable[[Path, Path], object]:
    def read(path: Path, seed: Path) -> pd.DataFrame:
        from apmt.ingest import import_profiles
        return import_profiles(fmt, [path])[0]
    return read


def _read_table(kind: str) -> Callable[[Path, Path], object]:
    def read(path: Path, seed: Path) -> pd.DataFrame:
        from apmt.tables import read_table
        return read_table(path, kind)
    return read


def _study(path: Path, seed: Path) -> object:
    from apmt.study import load_study
    return load_study(path)


def _machine(path: Path, seed: Path) -> tuple[dict, object]:
    from apmt.collect.backends.cachegrind import cache_geometry
    from apmt.machine import load_machine
    machine = load_machine(path).to_dict()
    return machine, (cache_geometry(machine, str(path)) if "cache_bytes" in machine else None)


def _event_map(path: Path, seed: Path) -> object:
    import yaml

    from apmt.collect.backends import cpu
    cpus = yaml.safe_load(seed.read_text())["cpus"]
    first = cpus[0] if isinstance(cpus, list) else None
    model = first.get("models", "0") if first else "0"
    model = model[0] if isinstance(model, list) else model
    model = int(str(model).split("-")[0].replace("all", "0"), 0)
    info = (cpu.CpuInfo(first["vendor"], first["family"], model) if first
            else cpu.CpuInfo("", None, None))
    return cpu.load_event_map(info, path)


def _perf(path: Path, seed: Path) -> pd.DataFrame:
    from apmt.collect.backends.perf import PerfClock
    from apmt.collect.backends.registry import make_backend
    run = seed.parent.name
    if run == "clock-run":
        backend = PerfClock()
    elif run == "software-run":
        backend = make_backend("perf-events", None, None, cpuinfo="",
                               event_file=FIXTURES / "perf" / "software-events.yaml")[0]
    else:
        backend = make_backend("perf-events", None, None, cpuinfo=HASWELL_EP)[0]
    return backend.parse(path.parent)


def _cachegrind(path: Path, seed: Path) -> pd.DataFrame:
    from apmt.collect.backends.cachegrind import Cachegrind
    from apmt.machine import load_machine
    return Cachegrind(load_machine("haswell-e5-2698v3")).parse(path.parent)


def _pmpi(path: Path, seed: Path) -> pd.DataFrame:
    from apmt.collect.pmpi import read_traces
    from apmt.tables import check_table as contract
    rows = read_traces(path.parent)
    return contract(rows.assign(p=rows.attrs["size"], rep=1), str(path.parent), "communication")


def _run_record(path: Path, seed: Path) -> pd.DataFrame:
    from apmt.collect.extract import _app_rows, around_launcher
    from apmt.collect.runner import load_run_json
    from apmt.study import Run
    from apmt.tables import check_table as contract
    rows = _app_rows(Run(2, {}, 1), path.parent)
    around_launcher(load_run_json(path.parent))
    return contract(rows.assign(p=2, rep=1), str(path.parent), "measurements")


def _gz_seed(path: Path) -> Path:
    """cachegrind fixtures are gzipped: the seed is their text, unpacked once."""
    target = Path(tempfile.gettempdir()) / f"apmt-fuzz-seed-{path.stem}"
    if not target.is_file():
        target.write_bytes(gzip.decompress(path.read_bytes()))
    return target


def readers() -> dict[str, Reader]:
    cube_seeds = [DATA / "scorep_cube_sample" / "lulesh.p27.size25.r1" / "profile.cubex",
                  *sorted((DATA / "scorep_counters" / "mm_cubeset").glob("*/profile.cubex"))[:3]]
    perf_runs = FIXTURES / "perf"
    cachegrind = [_gz_seed(FIXTURES / "cachegrind" / f"cachegrind.{r}.out.gz") for r in (0, 1)]
    record = FIXTURES / "run-record"
    return {
        "extrap-text": Reader([DATA / "relearn" / "relearn_data.txt"], _import("extrap-text"),
                              check_table),
        "collectives": Reader([DATA / "mpi_collectives" / "mpi_data.csv"],
                              _import("collectives"), lambda t: check_table(t, "comm")),
        "caliper": Reader(sorted((DATA / "lulesh_caliper_opal").glob("*.cali"))[:2],
                          _import("caliper"), check_table),
        "cube": Reader(cube_seeds, _import("cube"), check_table, mutate=mutate_cube,
                       folder=lambda seed: seed.parent.name),
        "study": Reader([*sorted((REPOSITORY / "config" / "studies").glob("*.yaml")),
                         DATA / "lammps" / "p1-32" / "study.yaml"], _study, check_study),
        "machine": Reader(sorted((SHIPPED / "machines").glob("*.yaml")), _machine,
                          check_machine),
        "event file": Reader([*sorted((SHIPPED / "events").glob("*.yaml")),
                              perf_runs / "software-events.yaml"], _event_map, check_event_map),
        "perf output": Reader(sorted(perf_runs.glob("*-run/*.report.txt")), _perf, check_rows,
                              companions=lambda seed: sorted(seed.parent.glob("*.report.txt"))),
        "cachegrind output": Reader(cachegrind, _cachegrind, check_rows,
                                    name_of=lambda seed: seed.name.removeprefix(
                                        "apmt-fuzz-seed-")),
        "pmpi trace": Reader(sorted(record.glob("pmpi.*.tsv")), _pmpi,
                             lambda t: check_table(t, "comm"),
                             companions=lambda seed: sorted(record.glob("pmpi.*.tsv"))),
        "run record": Reader([record / "run.json"], _run_record, check_table),
        "measurements table": Reader([DATA / "lammps" / "p1-32" / "measurements.csv"],
                                     _read_table("measurements"), check_table, cut_lines=120),
        "communication table": Reader([DATA / "lammps" / "p1-32" / "comm.csv"],
                                      _read_table("communication"),
                                      lambda t: check_table(t, "comm"), cut_lines=120),
    }


# ------------------------------------------------------------------------------- one input

@dataclass
class Outcome:
    kind: str           # rejected, accepted, garbage, uncaught, hang
    how: str            # the mutation
    detail: str = ""    # the message, exception or what was wrong


def seed_bytes(reader: Reader, seed: Path, rng: random.Random) -> bytes:
    data = seed.read_bytes()
    if reader.cut_lines is None:
        return data
    lines = data.split(b"\n")
    start = rng.randrange(1, max(2, len(lines) - reader.cut_lines))
    return b"\n".join([lines[0], *lines[start:start + reader.cut_lines]]) + b"\n"


def run_one(name: str, reader: Reader, index: int, base_seed: int, workdir: Path,
            time_limit: float) -> Outcome:
    """Mutate one seed (chosen by the index) and read it; never raises."""
    rng = random.Random(f"{base_seed}:{name}:{index}")
    seed = reader.seeds[index % len(reader.seeds)]
    data, how = reader.mutate(seed_bytes(reader, seed, rng), rng)
    folder = workdir / reader.folder(seed)
    shutil.rmtree(workdir, ignore_errors=True)
    folder.mkdir(parents=True)
    for companion in reader.companions(seed):
        if companion != seed:
            shutil.copyfile(companion, folder / reader.name_of(companion))
    path = folder / reader.name_of(seed)
    path.write_bytes(data)
    how = f"{seed.name}: {how}"
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        result = reader.read(path, seed)
        signal.setitimer(signal.ITIMER_REAL, 0)
        wrong = reader.check(result)
        return Outcome("garbage", how, wrong) if wrong else Outcome("accepted", how)
    except ApmtError as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        message = str(error)
        if "\n" in message or not message.strip():
            return Outcome("uncaught", how, f"ApmtError not one line: {message[:200]!r}")
        if str(folder) not in message:
            return Outcome("unnamed", how, message)
        return Outcome("rejected", how, message)
    except Hang:
        return Outcome("hang", how, f"over {time_limit:g} s")
    except BaseException as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if isinstance(error, KeyboardInterrupt):
            raise
        where = traceback.extract_tb(error.__traceback__)[-1]
        return Outcome("uncaught", how, f"{type(error).__name__}: {str(error)[:120]} "
                                        f"({Path(where.filename).name}:{where.lineno})")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _alarm(signum: int, frame: object) -> None:
    raise Hang


def fuzz(name: str, inputs: int, base_seed: int = 17, time_limit: float = 10.0,
         start: int = 0) -> list[Outcome]:
    """``inputs`` mutated inputs of one reader, read in this process."""
    reader = readers()[name]
    with tempfile.TemporaryDirectory(prefix="apmt-fuzz-") as folder:
        return [run_one(name, reader, index, base_seed, Path(folder) / "w", time_limit)
                for index in range(start, start + inputs)]


# ------------------------------------------------------------------------------- the table

@dataclass
class Tally:
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[Outcome]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            self.counts[outcome.kind] += 1
            if outcome.kind in BAD:
                self.examples.setdefault(outcome.kind, []).append(outcome)


def _chunk(work: tuple[str, int, int, int, float]) -> list[Outcome]:
    name, start, count, base_seed, time_limit = work
    return fuzz(name, count, base_seed, time_limit, start)


def _limit_memory() -> None:
    logging.disable(logging.WARNING)     # the readers' warnings about dropped series
    warnings.simplefilter("ignore")      # and pycubexr's about tar checksums
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(names: list[str], inputs: int, jobs: int, base_seed: int, time_limit: float
        ) -> dict[str, Tally]:
    tallies = {}
    chunk = 50
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_limit_memory,
                                                  maxtasksperchild=20) as pool:
        for name in names:
            tally = Tally()
            began = time.perf_counter()
            work = [(name, start, min(chunk, inputs - start), base_seed, time_limit)
                    for start in range(0, inputs, chunk)]
            for outcomes in pool.imap_unordered(_chunk, work):
                tally.add(outcomes)
            tally.seconds = time.perf_counter() - began
            tallies[name] = tally
            print(f"{name}: {dict(tally.counts)} in {tally.seconds:.0f} s", file=sys.stderr)
    return tallies


def table(tallies: dict[str, Tally]) -> str:
    lines = ["| reader | inputs | rejected | accepted | uncaught | hangs | garbage | unnamed "
             "| time |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, tally in tallies.items():
        c = tally.counts
        lines.append(f"| {name} | {sum(c.values()):,} | {c['rejected']:,} | {c['accepted']:,} "
                     f"| {c['uncaught']:,} | {c['hang']:,} | {c['garbage']:,} "
                     f"| {c['unnamed']:,} | {tally.seconds:.0f} s |")
    for name, tally in tallies.items():
        for kind, outcomes in tally.examples.items():
            kinds = Counter(o.detail.split(" (")[0][:90] for o in outcomes)
            for detail, count in kinds.most_common(5):
                example = next(o for o in outcomes if o.detail.startswith(detail))
                lines.append(f"{name} {kind} x{count}: {example.detail}  [{example.how}]")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="mutated inputs per reader")
    parser.add_argument("--readers", default=",".join(readers()),
                        help="comma-separated reader names (default: all)")
    parser.add_argument("--jobs", type=int, default=len(__import__("os").sched_getaffinity(0)))
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="seconds one input may take before it counts as a hang")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.readers.split(",")]
    unknown = [n for n in names if n not in readers()]
    if unknown:
        parser.error(f"unknown reader {unknown[0]!r} (known: {', '.join(readers())})")
    tallies = run(names, args.inputs, args.jobs, args.seed, args.time_limit)
    print(table(tallies))
    bad = sum(t.counts[kind] for t in tallies.values() for kind in BAD)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
