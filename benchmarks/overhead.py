"""Overhead of apmt's measurement on LAMMPS: perf sampling plus the PMPI library, and cachegrind.

Usage: python benchmarks/overhead.py [--reps 7] [--size 1] [--steps 100] [--warmup 1]
                                     [--cachegrind-runs 1] [--split] [--per-rank] [-o runs.csv]

The shipped LAMMPS LJ study (config/studies/lammps-lj.yaml, data/lammps/in.lj) runs at P=1 and
P=2 in interleaved order (plain, measured, plain, measured, ...), so a slow drift of a shared
machine touches both alike. "measured" is one run exactly as ``apmt profile --backend
perf-clock`` makes it: each rank starts through apmt's exec shim (it records the rank's pid
and sets LD_PRELOAD to the PMPI library) and, on one host, apmt puts one ``perf record``
around mpirun (apmt.collect.launch.measurement_scope; run.json shows the words). "plain" is
the same launcher command (apmt's launch words) running the application directly: no
shim, no preload, no perf. With --split, two more modes say which part costs what: "perf"
(perf-clock, no PMPI) and "pmpi" (backend none: the shim and the PMPI library only).
With --per-rank, "per-rank" is measured with one perf per rank (APMT_PERF_SCOPE=rank), as
apmt does where ranks are not the launcher's children (srun, several hosts).

Two clocks per run: the wall time of the launcher process (start-up, perf's exit and the
trace files included) and LAMMPS' own "Loop time" (the time steps only). Overheads are given
in percent and in seconds: a fixed cost per run (a tool's start-up and exit) weighs more on
a short run than on a long one, while a cost per sample or per MPI call scales with the run.
The target for sampling plus PMPI is <= 3% of wall time, the APMT paper's figure
(instrumenting tools such as Score-P exceed 10%). cachegrind's slowdown is reported as it is:
1 run per P (the cachegrind pass of backend ``auto``: no PMPI library), against the plain
median.

Runs go into a temporary folder, removed at the end. Timings on a shared machine are noisy:
LAMMPS' "% CPU use" is kept per run, and a median below 90% means something else ran too.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from apmt.collect.launch import (
    PID_FILE,
    SCOPE_VARIABLE,
    Launcher,
    available_cpus,
    find_launcher,
    launch_command,
    running_as_root,
)
from apmt.collect.runner import (
    STDOUT,
    RunRecord,
    execute,
    failure,
    load_study_machine,
    make_backends,
    run_study,
)
from apmt.errors import ApmtError
from apmt.study import Study, app_words, load_study, with_backend

REPOSITORY = Path(__file__).resolve().parents[1]
STUDY_FILE = REPOSITORY / "config" / "studies" / "lammps-lj.yaml"
PROCESS_COUNTS = (1, 2)
TARGET_PERCENT = 3.0
BUSY_CPU_USE = 90.0
WALL_HEAD, LOOP_HEAD = "wall s: median [min-max]", "loop s: median [min-max]"
STEPS_WORDS = re.compile(r"-var\s+steps\s+\S+")
LOOP_TIME = re.compile(r"^Loop time of (\S+) on (\d+) procs", re.MULTILINE)
CPU_USE = re.compile(r"^\s*([\d.]+)% CPU use", re.MULTILINE)
# files a measured run must leave per rank, or it did not measure what it claims: perf's
# per rank, or one perf file around the launcher and each rank's pid to split it by
BACKEND_FILES = {"perf-clock": ("perf.clock.{rank}.data", "perf.clock.data", PID_FILE),
                 "cachegrind": ("cachegrind.{rank}.out",)}
PMPI_FILE = "pmpi.{rank}.tsv"
# mode -> (apmt backend, PMPI tracing, APMT_PERF_SCOPE); "plain" runs without apmt
MODES = {"measured": ("perf-clock", True, "auto"), "perf": ("perf-clock", False, "auto"),
         "pmpi": ("none", True, "auto"), "cachegrind": ("cachegrind", False, "auto"),
         "per-rank": ("perf-clock", True, "rank")}


@dataclass
class Sample:
    """One timed run: what ran, its two clocks, and how busy the machine was."""

    p: int
    rep: int
    mode: str                   # plain, or a key of MODES
    wall_s: float
    loop_s: float
    cpu_use: float | None       # LAMMPS' "% CPU use": below 100 when something else ran too


# ---------------------------------------------------------------------------------- runs

def lammps_study(p: int, size: float, steps: int) -> Study:
    """The shipped LAMMPS study narrowed to one run: P ranks, this size and length."""
    study = load_study(STUDY_FILE)
    command, found = STEPS_WORDS.subn(f"-var steps {steps}", study.command)
    if not found:
        command += f" -var steps {steps}"
    return replace(study, command=command, p=(p,), params={"size": (float(size),)},
                   points=None, repetitions=1)


def apmt_run(study: Study, backend: str, trace_mpi: bool, results: Path,
             scope: str = "auto") -> RunRecord:
    """One run as ``apmt profile --backend BACKEND`` makes it (runner, rank start, backend);
    ``scope`` as APMT_PERF_SCOPE (auto: what apmt profile chooses)."""
    study = replace(with_backend(study, backend), trace_mpi=trace_mpi)
    backends = make_backends(study, load_study_machine(study))
    with environment({SCOPE_VARIABLE: scope}):
        (record,) = run_study(study, results, backends)
    if not record.ok:
        raise ApmtError(f"{backend} run failed: {record.line()}")
    check_measured(record.run_dir, study.p[0], backend, trace_mpi)
    return record


def check_measured(run_dir: Path, p: int, backend: str, trace_mpi: bool) -> None:
    """Every rank left its measurement files: a run that measured nothing costs nothing."""
    per_rank, *whole = BACKEND_FILES.get(backend, (None,))
    if whole and nonempty(run_dir / whole[0]):
        per_rank = whole[1]
    for pattern in [per_rank] * (per_rank is not None) + [PMPI_FILE] * trace_mpi:
        for rank in range(p):
            path = run_dir / pattern.format(rank=rank)
            if not nonempty(path):
                raise ApmtError(f"{run_dir}: {path.name} is missing or empty")


def nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def plain_run(study: Study, launcher: Launcher, run_dir: Path) -> float:
    """The same launcher command with the application itself per rank; its wall time."""
    run = study.runs()[0]
    run_dir.mkdir(parents=True)
    for source in study.setup:
        shutil.copy2(source, run_dir / source.name)
    words = app_words(study, run, run_dir)[0]
    command = launch_command(launcher, run.p, words, available_cpus(launcher),
                             running_as_root())
    values = run.placeholders(run_dir)
    with environment({key: value.format(**values) for key, value in study.env.items()}):
        outcome = execute(command, run_dir, study.timeout_s)
    error = failure(outcome, run_dir, study.expect_output)
    if error is not None:
        raise ApmtError(f"{run_dir}: plain run failed: {error}")
    return float(outcome["wall_time_s"])


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """The study's variables for a plain run: mpirun hands its own environment to local
    ranks, as the shim's ``--env`` words do for a measured one."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def lammps_clocks(run_dir: Path) -> tuple[float, float | None]:
    """LAMMPS' loop time and CPU use from the run's stdout."""
    text = (run_dir / STDOUT).read_text(errors="replace")
    loop = LOOP_TIME.search(text)
    if loop is None:
        raise ApmtError(f"{run_dir / STDOUT}: no 'Loop time of ...' line")
    cpu = CPU_USE.search(text)
    return float(loop[1]), float(cpu[1]) if cpu else None


# --------------------------------------------------------------------------------- series

def sample(study: Study, mode: str, rep: int, launcher: Launcher, work: Path) -> Sample:
    """One timed run of a mode, in its own folder under ``work``."""
    p = study.p[0]
    folder = work / f"{mode}-p{p}-r{rep}"
    if mode == "plain":
        wall, run_dir = plain_run(study, launcher, folder), folder
    else:
        backend, traced, scope = MODES[mode]
        record = apmt_run(study, backend, traced, folder, scope)
        wall, run_dir = float(record.wall_time_s or 0.0), record.run_dir
    loop, cpu = lammps_clocks(run_dir)
    found = Sample(p, rep, mode, wall, loop, cpu)
    cpu_text = f", CPU use {cpu:.0f}%" if cpu is not None else ""
    print(f"  P={p} rep {rep} {mode}: wall {wall:.2f} s, loop {loop:.2f} s{cpu_text}",
          file=sys.stderr, flush=True)
    return found


def interleaved(studies: dict[int, Study], modes: list[str], reps: int, warmup: int,
                launcher: Launcher, work: Path) -> list[Sample]:
    """plain, measured, plain, measured ... at every P in turn, after untimed warm-ups (the
    first run after a while reads the binary and libraries from disk)."""
    for p, study in studies.items():
        for index in range(warmup):
            plain_run(study, launcher, work / f"warmup-p{p}-{index}")
    samples = []
    for rep in range(1, reps + 1):
        for study in studies.values():
            samples += [sample(study, mode, rep, launcher, work) for mode in modes]
    return samples


def cachegrind_samples(studies: dict[int, Study], runs: int, launcher: Launcher,
                       work: Path) -> list[Sample]:
    """cachegrind runs after the timed series: each is 30-50x longer than a plain run."""
    return [sample(study, "cachegrind", rep, launcher, work)
            for study in studies.values() for rep in range(1, runs + 1)]


# -------------------------------------------------------------------------------- summary

def values(samples: list[Sample], p: int, mode: str, clock: str) -> list[float]:
    return [getattr(s, clock) for s in samples if s.p == p and s.mode == mode]


def percent(measured: float, plain: float) -> float:
    return 100.0 * (measured / plain - 1.0)


def paired_percent(samples: list[Sample], p: int, mode: str, clock: str) -> float:
    """Median over repetitions of each run against the plain run of its round (just before
    it): robust to a drift that medians of the two modes would mix in."""
    plain = {s.rep: getattr(s, clock) for s in samples if s.p == p and s.mode == "plain"}
    pairs = [percent(getattr(s, clock), plain[s.rep]) for s in samples
             if s.p == p and s.mode == mode and s.rep in plain]
    return statistics.median(pairs)


def spread(numbers: list[float]) -> str:
    """Median [min-max]."""
    return f"{statistics.median(numbers):6.3f} [{min(numbers):.3f}-{max(numbers):.3f}]"


def overhead_lines(samples: list[Sample], ps: list[int], modes: list[str]) -> list[str]:
    """Per P: each mode's medians and spreads, then each measuring mode's overhead against
    plain, per clock, in percent and (wall) seconds."""
    lines = [f"{'P':>2}  {'mode':<9} {WALL_HEAD:<36}{LOOP_HEAD:<36}{'CPU use':>7}"]
    for p in ps:
        for mode in modes:
            cpu = [s.cpu_use for s in samples if s.p == p and s.mode == mode and s.cpu_use]
            cpu_text = f"{statistics.median(cpu):6.0f}%" if cpu else "      ?"
            lines.append(f"{p:>2}  {mode:<9} {spread(values(samples, p, mode, 'wall_s')):<36}"
                         f"{spread(values(samples, p, mode, 'loop_s')):<36}{cpu_text}")
        lines += [overhead_line(samples, p, mode) for mode in modes if mode != "plain"]
    return lines


def overhead_line(samples: list[Sample], p: int, mode: str) -> str:
    cells = [f"{median_overhead(samples, p, mode, clock):+6.1f}% "
             f"{difference(samples, p, mode, clock):+.3f} s "
             f"(paired {paired_percent(samples, p, mode, clock):+.1f}%)"
             for clock in ("wall_s", "loop_s")]
    within = median_overhead(samples, p, mode, "wall_s") <= TARGET_PERCENT
    verdict = f"{'within' if within else 'above'} {TARGET_PERCENT:g}%" \
        if mode == "measured" else ""
    return f"{p:>2}  {'+' + mode:<9} {cells[0]:<36}{cells[1]:<36}  {verdict}".rstrip()


def median_overhead(samples: list[Sample], p: int, mode: str, clock: str) -> float:
    """The overhead of measuring in percent: the mode's median against plain's."""
    return percent(statistics.median(values(samples, p, mode, clock)),
                   statistics.median(values(samples, p, "plain", clock)))


def difference(samples: list[Sample], p: int, mode: str, clock: str) -> float:
    """The same in seconds: a fixed cost per run (tool start-up and exit) shows here."""
    return (statistics.median(values(samples, p, mode, clock))
            - statistics.median(values(samples, p, "plain", clock)))


def cachegrind_lines(samples: list[Sample], ps: list[int]) -> list[str]:
    """cachegrind's slowdown per P against the plain medians, per clock."""
    lines = [f"{'P':>2}  {'wall s':>8} {'x plain':>8}   {'loop s':>8} {'x plain':>8}"]
    for p in ps:
        wall = statistics.median(values(samples, p, "cachegrind", "wall_s"))
        loop = statistics.median(values(samples, p, "cachegrind", "loop_s"))
        plain_wall = statistics.median(values(samples, p, "plain", "wall_s"))
        plain_loop = statistics.median(values(samples, p, "plain", "loop_s"))
        lines.append(f"{p:>2}  {wall:8.1f} {wall / plain_wall:7.1f}x   {loop:8.1f} "
                     f"{loop / plain_loop:7.1f}x")
    return lines


def busy_warning(samples: list[Sample]) -> str | None:
    """A line when LAMMPS did not get its cores to itself (its "% CPU use")."""
    low = [s for s in samples if s.cpu_use is not None and s.cpu_use < BUSY_CPU_USE]
    if not low:
        return None
    return (f"warning: {len(low)} of {len(samples)} runs had LAMMPS CPU use below "
            f"{BUSY_CPU_USE:g}%: something else ran on the machine; the figures are noisier")


def write_csv(samples: list[Sample], path: Path) -> None:
    with open(path, "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(asdict(samples[0])))
        writer.writeheader()
        writer.writerows(asdict(s) for s in samples)


# ----------------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="timed runs per mode and P (>= 5)")
    parser.add_argument("--size", type=float, default=1.0, help="32,000 atoms * size^3")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=1, help="untimed plain runs per P")
    parser.add_argument("--cachegrind-runs", type=int, default=1, help="per P; 0: none")
    parser.add_argument("--split", action="store_true",
                        help="also time perf alone and PMPI alone (twice the runs)")
    parser.add_argument("--per-rank", action="store_true",
                        help="also time measured with one perf per rank (APMT_PERF_SCOPE=rank)")
    parser.add_argument("-o", "--output", type=Path, help="CSV of every timed run")
    args = parser.parse_args(argv)
    if args.reps < 5:
        parser.error("--reps must be at least 5 (medians of fewer runs say little here)")
    if args.steps < 1 or args.size <= 0 or args.warmup < 0 or args.cachegrind_runs < 0:
        parser.error("--steps and --size must be positive, --warmup and --cachegrind-runs "
                     "not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    os.environ.pop("LD_PRELOAD", None)   # plain means no preload; measured adds only apmt's
    studies = {p: lammps_study(p, args.size, args.steps) for p in PROCESS_COUNTS}
    modes = ["plain", "measured", *(["perf", "pmpi"] if args.split else []),
             *(["per-rank"] if args.per_rank else [])]
    first = studies[PROCESS_COUNTS[0]]
    launcher = find_launcher(first.launcher, first.launcher_args, first.srun_mpi)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="apmt-overhead-") as work:
        samples = interleaved(studies, modes, args.reps, args.warmup, launcher, Path(work))
        samples += cachegrind_samples(studies, args.cachegrind_runs, launcher, Path(work))
    atoms = round(32000 * args.size ** 3)
    print(f"LAMMPS LJ, {atoms:,} atoms, {args.steps} steps, OMP_NUM_THREADS=1; {args.reps} "
          f"interleaved runs per mode and P; measured = perf cpu-clock sampling + PMPI "
          f"library, as apmt profile --backend perf-clock runs them (one perf around mpirun)")
    print("\n".join(overhead_lines(samples, list(studies), modes)))
    if args.cachegrind_runs:
        print(f"\ncachegrind (apmt's backend, {args.cachegrind_runs} run(s) per P; slowdown "
              f"against the plain medians)")
        print("\n".join(cachegrind_lines(samples, list(studies))))
    warning = busy_warning(samples)
    if warning:
        print(warning)
    print(f"\nload average before: {load:.2f}; took {time.perf_counter() - started:.0f} s")
    if args.output:
        write_csv(samples, args.output)
        print(f"{args.output}: {len(samples)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
