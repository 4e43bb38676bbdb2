"""Run a study: every run in its own folder, with its log, wall time, exit status and versions.

The raw results are never overwritten: a finished run (its folder holds ``done``) is skipped
on a rerun, so an interrupted study resumes where it stopped; a folder without ``done`` (an
interrupted or failed run) is moved aside to ``<run>.failed-<time>`` and the run is redone.
A failed run (non-zero exit, past its time limit, or printing nothing when the study expects
output) is recorded with a one-line error naming the run and its log; the other runs go on.
A finished run records in its ``run.json`` (``files``) every file it produced, with its rank
where the name carries one, its size and sha256, after its backend has read them once (which
also writes the backend's text caches, e.g. perf's reports): extraction checks a run against
that record, so a rank's file deleted, cut or changed later is an error, not a smaller table.

When a backend needs several passes (e.g. more events than the PMU has counters, or
perf-clock then cachegrind), pass k > 1 of a run goes into ``<run>.pass<k>``. MPI tracing and
the application's time come from the timing pass: the first not run under a simulator
(cachegrind slows a rank 20-50x, which would be mistaken for the application's time).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from apmt import __version__, layout
from apmt.collect.backends.base import Backend
from apmt.collect.interrupt import (
    die_with_parent,
    interrupt_reason,
    raise_if_interrupted,
    stopped_by_signals,
)
from apmt.collect.launch import (
    Launcher,
    available_cpus,
    find_launcher,
    first_line,
    launch_command,
    measurement_prefixes,
    rank_command,
    running_as_root,
    version_text,
)
from apmt.errors import ApmtError
from apmt.machine import Machine, load_machine
from apmt.study import (
    Run,
    Study,
    app_command,
    app_words,
    check_setup,
    fill,
    find_program,
    program_of,
)

log = logging.getLogger("apmt")

DONE = "done"
RUN_JSON = "run.json"
TIME_ONLY_BACKENDS = ("none", "perf-clock")
STDOUT, STDERR = "stdout.log", "stderr.log"
# what a run at a lowered frequency adds to run.json (apmt.collect.frequency)
FREQUENCY_KEYS = ("frequency_ghz", "frequency_method", "frequency_changed", "frequency_reason",
                  "cpu_mhz")
KILL_GRACE_S = 5.0
# lines that measuring tools, not the application, print on stderr: they do not count as
# the application's output when deciding whether it printed anything
TOOL_LINES = re.compile(r"^(\[ perf record: .*|==\d+==.*|--\d+--.*|Couldn't record kernel "
                        r"reference relocation symbol|Symbol resolution may be skewed .*|"
                        r"Check /proc/kallsyms permission .*)$")


@dataclass
class RunRecord:
    """What became of one run (one pass of one run when the backend needs several)."""

    run: str                       # the run folder's name
    run_dir: Path
    p: int
    params: dict[str, float]
    rep: int
    pass_index: int                # 0 for the first pass
    backend: str                   # backend name, or "none"
    status: str                    # ok, failed, or skipped (finished in an earlier call)
    error: str | None = None
    wall_time_s: float | None = None
    exit_status: int | None = None
    timed_out: bool = False
    oversubscribed: bool = False
    info: dict = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "skipped")

    @property
    def log(self) -> Path:
        return self.run_dir / STDERR

    def line(self) -> str:
        """One line for the user: the run, and ok or why it failed with where its log is."""
        if self.status == "failed":
            return f"{self.run}: failed: {self.error}"
        over = ", oversubscribed" if self.oversubscribed else ""
        wall = f"{self.wall_time_s:.3g} s" if self.wall_time_s is not None else "?"
        state = "ok" if self.status == "ok" else "finished before, skipped"
        return f"{self.run}: {state} ({wall}{over})"

    def summary(self) -> dict:
        """The record as JSON-able data (the workflow keeps one file of them per P)."""
        return {"run": self.run, "run_dir": str(self.run_dir), "p": self.p,
                "params": self.params, "rep": self.rep, "pass": self.pass_index + 1,
                "backend": self.backend, "status": self.status, "error": self.error,
                "wall_time_s": self.wall_time_s, "exit_status": self.exit_status,
                "timed_out": self.timed_out, "oversubscribed": self.oversubscribed,
                "host": self.info.get("host"), "slurm_job_id": self.info.get("slurm_job_id"),
                **{key: self.info[key] for key in FREQUENCY_KEYS if key in self.info}}


# ---------------------------------------------------------------------------- preparation

def make_backends(study: Study, machine: Machine | None = None) -> list[Backend]:
    """The study's backend passes from the registry; none for backend ``none``."""
    if study.backend == "none":
        return []
    try:
        from apmt.collect.backends import registry
    except ImportError as error:
        raise ApmtError(f"{study.source}: field 'backend': {study.backend!r} is not available "
                        f"({error})") from None
    metrics = list(study.metrics) if study.metrics is not None else None
    try:
        return list(registry.make_backend(study.backend, machine, metrics))
    except ApmtError as error:
        raise ApmtError(f"{study.source}: backend {study.backend!r}: {error}") from None


def with_machine(study: Study, results_dir: Path,
                 measure: Callable[[], Path]) -> Study:
    """The study with a machine file: its own; else the one its stored runs were measured
    with (a resumed study, or tables extracted on another host, keep that one); else the one
    ``measure`` gives (this host's, measured once: apmt.probe.this_machine). Not for a backend
    that measures time only: it has no caches to simulate and no counts to weigh."""
    if study.machine is not None or study.backend in TIME_ONLY_BACKENDS:
        return study
    runs = sorted(layout.raw_dir(study.name, results_dir).glob(f"*/{RUN_JSON}"))
    recorded = (read_run_json(runs[0].parent) or {}).get("machine") if runs else None
    chosen = recorded if recorded and Path(recorded).is_file() else str(measure())
    return replace(study, machine=chosen)


def load_study_machine(study: Study) -> Machine | None:
    """The study's machine file, read and checked (None when the study names none)."""
    if study.machine is None:
        return None
    try:
        return load_machine(study.machine)
    except ApmtError as error:
        raise ApmtError(f"{study.source}: field 'machine': {error}") from None


def check_runnable(study: Study, results_dir: Path, backends: list[Backend],
                   dry_run: bool = False) -> Launcher:
    """Everything a run needs, checked before the first one starts (one line per problem)."""
    results_dir = Path(results_dir)
    launcher = check_environment(study, results_dir)
    for backend in backends:
        backend.check()
    if study.trace_mpi and not dry_run:
        _pmpi_module(study).library_path()
    check_results_dir(results_dir, create=not dry_run)
    check_finished_runs(study, results_dir, backends)
    return launcher


def check_environment(study: Study, results_dir: Path) -> Launcher:
    """What the study needs of this host besides its backends: the launcher, the setup files,
    the program, a results folder it may write to (not created here)."""
    launcher = find_launcher(study.launcher, study.launcher_args, study.srun_mpi)
    check_setup(study)
    _check_program(study)
    check_results_dir(Path(results_dir), create=False)
    return launcher


def _check_program(study: Study) -> None:
    """The application exists: on PATH, or at its absolute path. A relative path is taken
    in the run folder (a setup file, say), where it is only found at run time."""
    program = program_of(study, study.runs()[0], Path("run"))
    if "{run_dir}" in shlex.split(study.command)[0] or ("/" in program
                                                        and not program.startswith("/")):
        return
    if find_program(program) is None:
        raise ApmtError(f"{study.source}: field 'command': program {program!r} not found "
                        "(not on PATH, or not an executable file)")


def _pmpi_module(study: Study):
    try:
        from apmt.collect import pmpi
    except ImportError as error:
        raise ApmtError(f"{study.source}: field 'trace_mpi': MPI tracing is not available "
                        f"({error}); set trace_mpi: false to run without it") from None
    return pmpi


def check_results_dir(results_dir: Path, create: bool = True) -> None:
    """The results folder can hold files: created and probed, or (dry run) its nearest
    existing ancestor is a folder we may write to."""
    if not create:
        ancestor = results_dir
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir() or not os.access(ancestor, os.W_OK):
            raise ApmtError(f"{results_dir}: results folder is not writable "
                            f"({ancestor} is not a writable folder)")
        return
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=results_dir):
            pass
    except OSError as error:
        raise ApmtError(f"{results_dir}: results folder is not writable "
                        f"({error.strerror or error})") from None


def check_finished_runs(study: Study, results_dir: Path, backends: list[Backend]) -> None:
    """Finished runs are only reused if they ran this command with this backend."""
    for run in study.runs():
        for index, backend in enumerate(backend_passes(backends)):
            run_dir = layout.raw_dir(study.name, results_dir) / pass_name(run, index)
            if not needs_pass(run, backend):
                continue
            info = read_run_json(run_dir) if (run_dir / DONE).exists() else None
            if info is None:
                continue
            before = (info.get("command", {}).get("template"), info.get("backend", {})
                      .get("name"))
            now = (study.command, _backend_name(backend))
            if before != now:
                raise ApmtError(f"{run_dir}: finished with command {before[0]!r} and backend "
                                f"{before[1]!r}, but the study now asks for {now[0]!r} with "
                                f"{now[1]!r}: use another --results folder or study name")


# ---------------------------------------------------------------------------------- paths

def pass_name(run: Run, index: int) -> str:
    return run.name if index == 0 else f"{run.name}.pass{index + 1}"


def backend_passes(backends: list[Backend]) -> list[Backend | None]:
    return list(backends) or [None]


def needs_pass(run: Run, backend: Backend | None) -> bool:
    """A simulator's counts are the same in every repetition (cachegrind is deterministic),
    so its pass runs in the first repetition only: the slowest pass is not repeated."""
    return run.rep == 1 or backend is None or not backend.simulated


def timing_pass(backends: list[Backend]) -> int:
    """The pass whose clock is the application's: the first not under a simulator."""
    for index, backend in enumerate(backend_passes(backends)):
        if backend is None or not backend.simulated:
            return index
    return 0


def _backend_name(backend: Backend | None) -> str:
    return "none" if backend is None else backend.name


def read_run_json(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / RUN_JSON).read_text())
    except (OSError, ValueError):
        return None


def load_run_json(run_dir: Path) -> dict:
    """A finished run's record, which must be there and whole: ApmtError calling a missing
    or damaged one so (not "no wall time recorded")."""
    path = Path(run_dir) / RUN_JSON
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ApmtError(f"{path}: missing: the run's record is gone") from None
    except OSError as error:
        raise ApmtError(f"{path}: not readable ({error.strerror or error})") from None
    except ValueError as error:
        raise ApmtError(f"{path}: damaged: not valid JSON ({str(error)[:80]})") from None
    if not isinstance(data, dict):
        raise ApmtError(f"{path}: damaged: not a JSON object")
    return data


# ------------------------------------------------------------------- what a run produced

RANK_IN_NAME = re.compile(r"^[^.]+(?:\.[a-z]+)*?\.(\d+)\.")   # cachegrind.1.out, perf.clock.1.data


def file_record(run_dir: Path) -> dict[str, dict]:
    """Every file of a run folder but its record and marker: rank (from the name, else
    None), bytes and sha256."""
    out = {}
    for path in sorted(Path(run_dir).rglob("*")):
        if not path.is_file() or path.name in (RUN_JSON, DONE):
            continue
        match = RANK_IN_NAME.match(path.name)
        out[path.relative_to(run_dir).as_posix()] = {
            "rank": int(match.group(1)) if match else None,
            "bytes": path.stat().st_size, "sha256": file_sha256(path)}
    return out


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_run_files(run_dir: Path) -> dict:
    """The run's record, once every file it lists is there as it was when the run finished
    (ApmtError naming the first that is gone, cut or changed). Runs recorded before apmt
    kept a file list are taken as they are."""
    info = load_run_json(run_dir)
    files = info.get("files")
    if files is None:
        return info
    if not isinstance(files, dict):
        raise ApmtError(f"{Path(run_dir) / RUN_JSON}: damaged: field 'files' is not a mapping")
    for name, entry in files.items():
        _check_file(Path(run_dir), name, entry)
    _check_no_stranger(Path(run_dir), files)
    return info


def _check_no_stranger(run_dir: Path, files: dict) -> None:
    """A rank's file that the run did not make (copied in from another run) would be read as
    that rank's data: refused, named."""
    for path in sorted(run_dir.rglob("*")):
        name = path.relative_to(run_dir).as_posix()
        if path.is_file() and name not in files and RANK_IN_NAME.match(path.name):
            raise ApmtError(f"{path}: not the run's: a rank's file that run.json does not "
                            f"list (added after the run finished); move it out of {run_dir}")


def _check_file(run_dir: Path, name: str, entry: object) -> None:
    path = run_dir / name
    if not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int):
        raise ApmtError(f"{run_dir / RUN_JSON}: damaged: field 'files.{name}' is {entry!r:.60}")
    owner = f"rank {entry['rank']}'s file" if entry.get("rank") is not None else "a file"
    redo = f"remove {run_dir / DONE} to run it again"
    if not path.is_file():
        raise ApmtError(f"{path}: missing: {owner} of the run ({entry['bytes']} bytes when it "
                        f"finished) is gone; {redo}")
    size = path.stat().st_size
    if size != entry["bytes"]:
        change = "cut" if size < entry["bytes"] else "grown"
        raise ApmtError(f"{path}: damaged: {owner} has {size} bytes, {entry['bytes']} when "
                        f"the run finished ({change}); {redo}")
    if file_sha256(path) != entry.get("sha256"):
        raise ApmtError(f"{path}: damaged: {owner} changed since the run finished (its sha256 "
                        f"differs from run.json); {redo}")


# ---------------------------------------------------------------------------------- plans

@dataclass(frozen=True)
class Planned:
    """One launch to make: where, with which backend, and the words to run."""

    run: Run
    pass_index: int
    backend: Backend | None
    run_dir: Path
    command: list[str]
    rank_line: str        # what each rank runs, as one line ({rank}: the rank's number)
    oversubscribed: bool
    cpus: int
    timing: bool          # the timing pass: traced, and its wall time is the application's


def plan(study: Study, results_dir: Path, backends: list[Backend],
         launcher: Launcher) -> list[Planned]:
    """Every launch of the study, in order, without touching the disk."""
    cpus, root = available_cpus(launcher), running_as_root()
    timing = timing_pass(backends)
    out = []
    for run in study.runs():
        for index, backend in enumerate(backend_passes(backends)):
            if not needs_pass(run, backend):
                continue
            run_dir = (layout.raw_dir(study.name, results_dir) / pass_name(run, index)).absolute()
            around, prefix = measurement_prefixes(backend, run_dir, launcher)
            line = " ".join(w for w in (shlex.join(prefix), app_command(study, run, run_dir))
                            if w)
            ranks = rank_command(run_dir, prefix, *app_words(study, run, run_dir),
                                 _rank_env(study, run, run_dir, index == timing))
            command = [*around, *launch_command(launcher, run.p, ranks, cpus, root)]
            out.append(Planned(run, index, backend, run_dir, command, line, run.p > cpus,
                               cpus, index == timing))
    return out


def describe_plan(planned: Planned) -> str:
    """A dry run's line: the folder, the launcher command and what each rank runs."""
    return f"cd {shlex.quote(str(planned.run_dir))} && {shlex.join(planned.command)}  " \
           f"# each rank: {planned.rank_line}"


# ------------------------------------------------------------------------------------ run

def run_study(study: Study, results_dir: str | Path, backends: list[Backend],
              report: Callable[[RunRecord], None] | None = None,
              annotate: Callable[[dict], dict] | None = None) -> list[RunRecord]:
    """Run every run of the study that has not finished before; return all their records.

    Bad input raises ApmtError before the first run; a failing run does not raise: its
    record says why. The caller decides the exit code. ``annotate`` adds to each new run's
    run.json what only the caller knows (a lowered frequency and whether it took).
    """
    results_dir = Path(results_dir)
    launcher = check_runnable(study, results_dir, backends)
    versions = study_versions(launcher, backends)
    records = []
    with stopped_by_signals():
        for planned in plan(study, results_dir, backends, launcher):
            raise_if_interrupted()
            record = _run_one(study, planned, versions, annotate)
            records.append(record)
            if report is not None:
                report(record)
            elif record.status == "failed":
                log.error("%s", record.line())
    return records


def stored_runs(study: Study, results_dir: str | Path,
                backends: list[Backend]) -> list[RunRecord]:
    """The records of the study's stored runs, running nothing (``apmt profile
    --stored-only``: a paper artifact rebuilt from raw profiles alone, where the application
    and the launcher may not even be installed); a missing run is a failed record."""
    records = []
    for run in study.runs():
        for index, backend in enumerate(backend_passes(backends)):
            if not needs_pass(run, backend):
                continue
            run_dir = (layout.raw_dir(study.name, results_dir) / pass_name(run, index)).absolute()
            stored = (run_dir / DONE).exists()
            info = (read_run_json(run_dir) or {}) if stored else {}
            records.append(RunRecord(
                run=run_dir.name, run_dir=run_dir, p=run.p, params=dict(run.params),
                rep=run.rep, pass_index=index, backend=_backend_name(backend),
                status="skipped" if stored else "failed",
                error=None if stored else "not stored, and --stored-only runs nothing",
                wall_time_s=info.get("wall_time_s"), exit_status=info.get("exit_status"),
                oversubscribed=bool(info.get("oversubscribed")), info=info))
    return records


def _run_one(study: Study, planned: Planned, versions: dict,
             annotate: Callable[[dict], dict] | None = None) -> RunRecord:
    run_dir = planned.run_dir
    if (run_dir / DONE).exists():
        return _skipped(planned)
    if run_dir.exists():
        aside = move_aside(run_dir)
        log.warning("%s: unfinished run folder moved to %s; running it again", run_dir,
                    aside.name)
    run_dir.mkdir(parents=True)
    for source in study.setup:
        shutil.copy2(source, run_dir / source.name)
    info = _run_info(study, planned, versions)
    if annotate is not None:
        info = annotate(info)
    _write_json(info, run_dir / RUN_JSON)
    try:
        outcome = execute(planned.command, run_dir, study.timeout_s)
    except KeyboardInterrupt as stop:   # the launch is stopped: say so, and stop too
        info.update(ok=False, error=f"{interrupt_reason(stop)}: unfinished, a rerun redoes it",
                    interrupted=True)
        _write_json(info, run_dir / RUN_JSON)
        log.error("%s: %s", run_dir.name, info["error"])
        raise
    info.update(outcome)
    error = failure(outcome, run_dir, study.expect_output)
    if error is None:
        error = unreadable(planned.backend, run_dir)
    info.update(ok=error is None, error=error)
    if error is None:
        info["files"] = file_record(run_dir)
    _write_json(info, run_dir / RUN_JSON)
    if error is None:
        (run_dir / DONE).write_text(f"{info['finished']}\n")
    return _record(planned, "ok" if error is None else "failed",
                   None if error is None else f"{error} (log: {run_dir / STDERR})", info)


def _skipped(planned: Planned) -> RunRecord:
    info = read_run_json(planned.run_dir) or {}
    return _record(planned, "skipped", None, info)


def _record(planned: Planned, status: str, error: str | None, info: dict) -> RunRecord:
    return RunRecord(
        run=planned.run_dir.name, run_dir=planned.run_dir, p=planned.run.p,
        params=dict(planned.run.params), rep=planned.run.rep, pass_index=planned.pass_index,
        backend=_backend_name(planned.backend), status=status, error=error,
        wall_time_s=info.get("wall_time_s"), exit_status=info.get("exit_status"),
        timed_out=bool(info.get("timed_out")),
        oversubscribed=bool(info.get("oversubscribed", planned.oversubscribed)), info=info)


def move_aside(run_dir: Path, label: str = "failed") -> Path:
    """Keep a folder under a new name, ``<name>.<label>-<time>``: raw results are never
    deleted (an unfinished run's folder, an earlier one-off diagnosis)."""
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    target = run_dir.with_name(f"{run_dir.name}.{label}-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = run_dir.with_name(f"{run_dir.name}.{label}-{stamp}-{counter}")
    run_dir.rename(target)
    return target


def _rank_env(study: Study, run: Run, run_dir: Path, timing: bool) -> dict[str, str]:
    """Variables for each rank: the PMPI tracer's (timing pass only; the library where
    check_runnable builds it) and the study's."""
    env: dict[str, str] = {}
    if study.trace_mpi and timing:
        pmpi = _pmpi_module(study)
        env.update(pmpi.environment(run_dir, pmpi.library_file()))
    for key, template in study.env.items():
        value = fill(template, run, run_dir)
        if key == "LD_PRELOAD" and env.get(key):
            value = f"{env[key]}:{value}"
        env[key] = value
    return env


# ------------------------------------------------------------------------------ execution

def execute(command: list[str], run_dir: Path, timeout_s: float) -> dict:
    """Run the launcher in its own session with a time limit; on timeout stop every
    process of the session (the launcher and all ranks), so nothing outlives the run."""
    started = datetime.datetime.now(datetime.UTC)
    with open(run_dir / STDOUT, "wb") as out, open(run_dir / STDERR, "wb") as err:
        start = time.monotonic()
        process = subprocess.Popen(command, cwd=run_dir, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=die_with_parent)
        timed_out = False
        try:
            raise_if_interrupted()
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_session(process)
        except BaseException:
            stop_session(process)
            raise
        wall = time.monotonic() - start
        signal_session(process.pid, signal.SIGKILL)  # ranks a launcher left behind
    return {"started": started.isoformat(timespec="seconds"),
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "wall_time_s": wall, "exit_status": process.returncode, "timed_out": timed_out}


def stop_session(process: subprocess.Popen) -> None:
    """SIGTERM first (launchers pass it on and profilers flush), SIGKILL after a grace."""
    signal_session(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        signal_session(process.pid, signal.SIGKILL)
        process.wait()


def signal_session(session: int, signum: int) -> None:
    """Signal every process of a session: the launcher's group and the ranks, which Open MPI
    puts in process groups of their own."""
    for pid in session_members(session):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def session_members(session: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session:  # state, ppid, pgrp, session
            members.append(int(entry.name))
    return members


def failure(outcome: dict, run_dir: Path, expect_output: bool) -> str | None:
    """Why a run failed, in a few words, or None if it did not."""
    if outcome["timed_out"]:
        return f"timed out (limit reached after {outcome['wall_time_s']:.3g} s)"
    status = outcome["exit_status"]
    if status != 0:
        return (f"killed by signal {-status}" if status < 0 else f"exit status {status}")
    if expect_output and printed_nothing(run_dir):
        return "printed nothing (set expect_output: false if the application is silent)"
    return None


def unreadable(backend: Backend | None, run_dir: Path) -> str | None:
    """Why the backend cannot read what the run left, or None. Read once here, the run's
    files (and the caches reading writes, e.g. perf's text reports) are complete before
    they are recorded, and a run whose output is unusable fails now, naming its log."""
    if backend is None:
        return None
    try:
        backend.parse(run_dir)
    except (ApmtError, OSError, ValueError) as error:
        return f"backend {backend.name} cannot read its output: {str(error)[:200]}"
    return None


def printed_nothing(run_dir: Path) -> bool:
    """No output on stdout, and none on stderr besides what the measuring tools print."""
    if (run_dir / STDOUT).stat().st_size > 0:
        return False
    text = (run_dir / STDERR).read_text(errors="replace")
    return all(not line.strip() or TOOL_LINES.match(line.strip())
               for line in text.splitlines())


# ----------------------------------------------------------------------------- provenance

def _run_info(study: Study, planned: Planned, versions: dict) -> dict:
    """run.json before the run: what runs, where, with what."""
    run_dir = planned.run_dir
    app = app_command(study, planned.run, run_dir)
    backend = planned.backend
    return {
        "study": study.name, "study_file": str(study.source), "run": run_dir.name,
        "p": planned.run.p, "params": planned.run.params, "rep": planned.run.rep,
        "pass": planned.pass_index + 1,
        "command": {"launcher": planned.command, "rank": planned.rank_line, "app": app,
                    "template": study.command},
        "env": study.env, "host": platform.node(), "cpu_mhz": cpu_mhz(),
        "cpus": planned.cpus, "oversubscribed": planned.oversubscribed,
        "timeout_s": study.timeout_s, "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "machine": study.machine,
        "versions": {**versions["common"], "application": application_version(
            program_of(study, planned.run, run_dir))},
        "backend": {"name": _backend_name(backend),
                    "simulated": bool(backend.simulated) if backend else False,
                    "provenance": versions["backends"][planned.pass_index]},
        "trace_mpi": study.trace_mpi and planned.timing, "timing_pass": planned.timing,
    }


def study_versions(launcher: Launcher, backends: list[Backend]) -> dict:
    """Versions of what runs, once per study: apmt, Python, the launcher, the MPI, and each
    backend pass's provenance (its tools and their versions, events)."""
    mpi = launcher.version if launcher.flavour in ("openmpi", "mpich") else (
        first_line(version_text("mpirun")) if shutil.which("mpirun") else "unknown")
    common = {"apmt": __version__, "python": sys.version.split()[0],
              "launcher": f"{launcher.program}: {launcher.version}", "mpi": mpi,
              "os": platform.platform()}
    return {"common": common,
            "backends": [b.provenance() if b else {} for b in backend_passes(backends)]}


@cache
def application_version(program: str) -> dict:
    """``--version`` is not universal: the binary's path and its sha256 identify it."""
    path = find_program(program)
    if path is None:
        return {"program": program, "path": None, "sha256": None}
    return {"program": program, "path": str(path), "sha256": file_sha256(path)}


def cpu_mhz() -> float | str:
    """The CPU's current frequency, from /proc/cpuinfo or cpufreq; "unknown" if neither."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    try:
        khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").read_text()
        return float(khz) / 1000
    except (OSError, ValueError):
        return "unknown"


def _write_json(data: dict, path: Path) -> None:
    from apmt.tables import write_text_atomic
    write_text_atomic(json.dumps(data, indent=1, default=str) + "\n", path)
