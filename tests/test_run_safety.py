"""What a profiling run may not do behind the user's back: run a shell on the command
template, lose a rank's file silently, or leave ranks running after an interrupt.

The runs are real: mpirun starting ``echo`` or a small MPI program from tests/mpi_programs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_collect import HAVE_MPI, FakeBackend, study_file

from apmt.collect.extract import extract
from apmt.collect.interrupt import Interrupted, raise_if_interrupted, stopped_by_signals
from apmt.collect.runner import load_study_machine, make_backends, run_study
from apmt.errors import ApmtError
from apmt.study import load_study

REPO = Path(__file__).resolve().parents[1]
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpicc and mpirun (Open MPI)")
PROGRAMS = REPO / "tests" / "mpi_programs"


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/mpi_programs/ring.c built with mpicc: ``ring N STEPS``."""
    if not HAVE_MPI:
        pytest.skip("needs mpicc and mpirun (Open MPI)")
    program = tmp_path_factory.mktemp("ring") / "ring"
    subprocess.run(["mpicc", "-O1", "-g", "-o", str(program), str(PROGRAMS / "ring.c")],
                   check=True)
    return program


# ------------------------------------------------------------------ commands without a shell

@needs_mpi
@pytest.mark.parametrize("command", ["echo hello|touch FILE", "echo x$(touch FILE)",
                                     "echo 'a;touch FILE' x`touch FILE`"])
def test_the_template_runs_without_a_shell(tmp_path: Path, command: str) -> None:
    """Shell syntax inside a word is the program's text: nothing creates FILE, and echo
    prints the words as they were typed."""
    study = load_study(study_file(tmp_path, command=command, p=[1, 2], params={}))
    records = run_study(study, tmp_path / "results", [])
    assert [r.status for r in records] == ["ok", "ok"], [r.line() for r in records]
    for record in records:
        assert not (record.run_dir / "FILE").exists()
        assert not list(tmp_path.rglob("FILE"))
        printed = (record.run_dir / "stdout.log").read_text().splitlines()
        words = command.split(" ", 1)[1].replace("'", "")
        assert printed == [words] * record.p, printed


@needs_mpi
def test_the_application_words_are_not_filled_per_rank(tmp_path: Path) -> None:
    """``$HOME``, ``~`` and a literal ``{rank}`` (written ``{{rank}}``) reach the program as
    typed on every rank, while ``{rank}`` in the backend's words is each rank's number."""
    command = "echo $HOME ~ {{rank}} x$(touch FILE) 'a;b'"
    study = load_study(study_file(tmp_path, command=command, p=[2], params={}))
    record = run_study(study, tmp_path / "results", [FakeBackend()])[0]
    assert record.status == "ok", record.line()
    printed = (record.run_dir / "stdout.log").read_text().splitlines()
    assert printed == ["$HOME ~ {rank} x$(touch FILE) a;b"] * 2, printed
    assert sorted(path.name for path in record.run_dir.glob("instructions.*.txt")) == [
        "instructions.0.txt", "instructions.1.txt"]
    assert not list(tmp_path.rglob("FILE"))


@needs_mpi
def test_placeholders_fill_one_word_each(tmp_path: Path) -> None:
    """A folder with a space stays one argument; ``< FILE`` is the standard input."""
    folder = tmp_path / "a b"
    folder.mkdir()
    (folder / "in.txt").write_text("from stdin\n")
    study = load_study(study_file(folder, command="sh -c 'cat; echo \"$1\"' x {run_dir} "
                                  "< {run_dir}/in.txt", p=[1], params={},
                                  setup=["in.txt"]))
    # sh is the application here (a program like any other), given its words as they are
    record = run_study(study, folder / "results", [])[0]
    assert record.status == "ok", record.line()
    assert (record.run_dir / "stdout.log").read_text().splitlines() == [
        "from stdin", str(record.run_dir)]


SHELLS = ("sh", "dash", "bash", "busybox", "zsh", "ksh")


def executable(pid: int) -> str:
    """The file a process runs, by name ("" once it is gone)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return ""


def command_line(pid: int) -> list[bytes]:
    """The words a process runs with ([] while an exec has not set them yet, or once gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    except OSError:
        return []


def ancestors(pid: int, until: int) -> list[str]:
    """What the processes between a process and its ancestor ``until`` run, nearest first;
    AssertionError if ``until`` is not an ancestor."""
    names = []
    while True:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if pid == until:
            return names
        assert pid > 1, f"{until} is not an ancestor (chain: {names})"
        names.append(executable(pid))


@needs_mpi
def test_each_rank_is_the_application_with_no_shell_before_it(ring: Path,
                                                              tmp_path: Path) -> None:
    """The process id a rank records is the application's own (apmt's start exec'd it into
    the program), and between apmt and each rank run only the launcher's processes: no
    shell, and no Python but apmt itself."""
    program = tmp_path / "ring"
    shutil.copy2(ring, program)
    process = apmt_profile(ring_study(tmp_path, program), tmp_path / "results")
    try:
        run_dir = wait_for_ranks(tmp_path / "results" / "raw" / "long", program)
        for rank in (0, 1):
            pid = int((run_dir / f"rank.{rank}.pid").read_text())
            deadline = time.monotonic() + 30
            # the pid file is written just before the exec, and the kernel names the new
            # executable a moment before it sets the new command line (once seen empty)
            while not (executable(pid) == program.name and command_line(pid)) \
                    and time.monotonic() < deadline:
                time.sleep(0.02)
            assert executable(pid) == program.name
            assert command_line(pid) == [str(program).encode(), b"20000",
                                         str(LONG_STEPS).encode()]
            chain = ancestors(pid, process.pid)
            assert chain and not [name for name in chain
                                  if name in SHELLS or name.startswith("python")], chain
    finally:
        process.terminate()
        seconds_until_gone(program)
        process.communicate(timeout=30)


def programs_run(log: Path) -> dict[int, list[str]]:
    """What each process exec'd, in order, from strace's per-process files (``-ff``)."""
    done = re.compile(r'^execve\("([^"]+)", .* = 0$')
    return {int(path.suffix[1:]): [match[1] for line in path.read_text().splitlines()
                                   if (match := done.match(line))]
            for path in log.parent.glob(f"{log.name}.*")}


@needs_mpi
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_no_shell_runs_anywhere_in_a_profiling_run(tmp_path: Path) -> None:
    """Every program ``apmt profile`` and its launch exec, traced: each rank's process
    runs apmt's start (Python) and then the application, and nothing runs a shell."""
    study = study_file(tmp_path, command="echo x$(touch FILE) x`id` $HOME", p=[2], params={})
    log = tmp_path / "strace" / "exec"
    log.parent.mkdir()
    apmt = Path(sys.executable).parent / "apmt"
    done = subprocess.run(["strace", "-f", "-ff", "-qq", "-e", "trace=execve", "-e",
                           "signal=none", "-o", str(log), str(apmt), "profile", str(study),
                           "--results", str(tmp_path / "results"), "--no-extract"],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:100]}")
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "results" / "raw" / "s" / "p2_r1"
    runs = programs_run(log)
    shells = sorted({path for paths in runs.values() for path in paths
                     if Path(path).name in SHELLS})
    assert not shells, shells
    echo = shutil.which("echo")
    for rank in (0, 1):
        pid = int((run_dir / f"rank.{rank}.pid").read_text())
        assert runs[pid] == [sys.executable, echo], runs[pid]
    assert (run_dir / "stdout.log").read_text() == "x$(touch FILE) x`id` $HOME\n" * 2
    assert not list(tmp_path.rglob("FILE"))


@pytest.mark.parametrize(("command", "fragment"), [
    ("app {n:>400000000}", "{n:>400000000}"),
    ("app {p!r}", "{p!r}"),
    ("app {p:05d}", "{p:05d}"),
    ("app {n} | tee out", "'|'"),
    ("app {n} ; rm x", "';'"),
    ("app < in.txt extra", "'<'"),
    ("< in.txt app", "'<'"),
])
def test_bad_templates_are_one_line(tmp_path: Path, command: str, fragment: str) -> None:
    path = study_file(tmp_path, command=command)
    with pytest.raises(ApmtError) as caught:
        load_study(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: field 'command'"), message
    assert fragment in message and len(message) < 300, message


# ------------------------------------------------------------------- nothing lost silently

@pytest.fixture(scope="module")
def recorded_run(ring: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One 2-rank run of ring under cachegrind (a file per rank), as the issue's example."""
    if not shutil.which("valgrind"):
        pytest.skip("needs valgrind")
    folder = tmp_path_factory.mktemp("recorded")
    study = load_study(study_file(folder, "rec", command=f"{ring} 20000 20", p=[2], params={},
                                  backend="cachegrind", machine="generic-x86-2core-vm"))
    backends = make_backends(study, load_study_machine(study))
    records = run_study(study, folder / "results", backends)
    assert [r.status for r in records] == ["ok"], [r.line() for r in records]
    return {"study": study, "results": folder / "results", "backends": backends,
            "run_dir": records[0].run_dir}


def test_a_finished_run_records_its_files(recorded_run: dict) -> None:
    run_dir = recorded_run["run_dir"]
    files = json.loads((run_dir / "run.json").read_text())["files"]
    assert files["cachegrind.1.out"]["rank"] == 1 and files["cachegrind.0.out"]["rank"] == 0
    for name, entry in files.items():
        assert entry["bytes"] == (run_dir / name).stat().st_size > 0 or name.endswith(".log")
        assert len(entry["sha256"]) == 64
    assert "run.json" not in files and "done" not in files


@pytest.mark.parametrize("damage", ["delete", "cut", "change", "run.json", "added"])
def test_extraction_names_a_lost_or_damaged_file(recorded_run: dict, damage: str) -> None:
    """A rank's file gone, cut or changed, another run's rank file copied in, or the record
    itself cut: one line naming the file, and no table made from what is left."""
    run_dir, study = recorded_run["run_dir"], recorded_run["study"]
    out = run_dir.parent / f"tables-{damage}"
    extract(recorded_run["results"], study, recorded_run["backends"], out_dir=out)  # whole
    victim = run_dir / ("run.json" if damage == "run.json" else "cachegrind.1.out")
    saved = victim.read_bytes()
    stranger = run_dir / "cachegrind.2.out"      # another run's rank 2, copied in
    try:
        if damage == "added":
            stranger.write_bytes(saved)
            victim = stranger
        elif damage == "delete":
            victim.unlink()
        elif damage in ("cut", "run.json"):
            victim.write_bytes(saved[:len(saved) // 2])
        else:
            victim.write_bytes(saved.replace(b"fn=", b"fx=", 1))
        assert damage != "change" or victim.stat().st_size == len(saved)
        with pytest.raises(ApmtError) as caught:
            extract(recorded_run["results"], study, recorded_run["backends"],
                    out_dir=run_dir.parent / f"again-{damage}")
    finally:
        if damage == "added":
            stranger.unlink()
        else:
            victim.write_bytes(saved)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{victim}: "), message
    expected = {"delete": "missing: rank 1's file", "cut": "(cut)",
                "change": "changed since the run finished", "run.json": "damaged: not valid JSON",
                "added": "not the run's: a rank's file that run.json does not list"}
    assert expected[damage] in message, message
    assert not (run_dir.parent / f"again-{damage}").exists()


# ---------------------------------------------------------------------- interrupts stop work

LONG_STEPS = 2_000_000       # ring at N=20000: about 0.2 ms a step, minutes in all


def ring_study(folder: Path, ring: Path) -> Path:
    """A short run that finishes, then a long one to interrupt (2 ranks each)."""
    return study_file(folder, "long", command=f"{ring} {{n}} {{steps}}", p=[2], params=None,
                      points=[{"n": 2000, "steps": 10}, {"n": 20000, "steps": LONG_STEPS}])


def processes_of(program: Path) -> list[int]:
    """Processes running this program (by their command line)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(program).encode() in (entry / "cmdline").read_bytes():
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def wait_for_ranks(raw: Path, program: Path, limit_s: float = 60) -> Path:
    """The long run's folder, once both its ranks run."""
    run_dir = raw / f"p2_n20000_steps{LONG_STEPS}_r1"
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if (run_dir / "rank.1.pid").exists() and (run_dir / "rank.0.pid").exists() \
                and len(processes_of(program)) >= 2:
            return run_dir
        time.sleep(0.05)
    raise AssertionError(f"the long run did not start within {limit_s} s")


def seconds_until_gone(program: Path, limit_s: float = 20) -> float:
    start = time.monotonic()
    while processes_of(program) and time.monotonic() - start < limit_s:
        time.sleep(0.05)
    left = processes_of(program)
    for pid in left:                      # no orphans left behind by a failing test
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"ranks of {program} still run after {limit_s} s"
    return time.monotonic() - start


def apmt_profile(study: Path, results: Path) -> subprocess.Popen:
    apmt = Path(sys.executable).parent / "apmt"
    return subprocess.Popen([str(apmt), "profile", str(study), "--results", str(results),
                             "--no-extract"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def test_a_signal_whose_exception_was_swallowed_still_stops_the_work() -> None:
    """A SIGINT that lands in logging's at-fork handler while a launch starts is printed as
    "Exception ignored" and lost (seen under Snakemake: the job ran its remaining runs to the
    end); the next check raises it again."""
    with stopped_by_signals():
        raise_if_interrupted()                       # nothing received: goes on
        with contextlib.suppress(KeyboardInterrupt):  # what Python does in a fork handler
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        with pytest.raises(Interrupted, match="interrupted by SIGINT"):
            raise_if_interrupted()
    with stopped_by_signals():                       # a new scope starts clean
        raise_if_interrupted()


@needs_mpi
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_apmt_profile_ends_its_ranks(ring: Path, tmp_path: Path,
                                                 signum: int) -> None:
    """SIGINT or SIGTERM: the launch is ended, the run marked unfinished, and apmt exits
    128 + the signal with one line; SIGKILL: the kernel ends mpirun (parent-death signal),
    which ends its ranks. A rerun redoes the interrupted run and keeps the finished one."""
    program = tmp_path / "ring"
    shutil.copy2(ring, program)           # a path of its own: only this test's ranks count
    study = ring_study(tmp_path, program)
    process = apmt_profile(study, tmp_path / "results")
    run_dir = wait_for_ranks(tmp_path / "results" / "raw" / "long", program)
    process.send_signal(signum)
    gone = seconds_until_gone(program)
    out, err = process.communicate(timeout=30)
    print(f"{signal.Signals(signum).name}: ranks gone after {gone:.2f} s")
    assert gone < 10
    assert not (run_dir / "done").exists()
    if signum != signal.SIGKILL:
        assert process.returncode == 128 + signum, (out, err)
        assert err.strip().splitlines()[-1] == (
            f"apmt: error: {run_dir.name}: interrupted by {signal.Signals(signum).name}: "
            "unfinished, a rerun redoes it"), err
        recorded_interrupt(run_dir)
    finished = run_dir.parent / "p2_n2000_steps10_r1"
    stamp = (finished / "run.json").stat().st_mtime_ns
    # the rerun: the finished run skipped, the interrupted one moved aside and started again
    again = apmt_profile(study, tmp_path / "results")
    wait_for_ranks(tmp_path / "results" / "raw" / "long", program)
    again.terminate()
    seconds_until_gone(program)
    out = again.communicate(timeout=30)[0]
    assert "p2_n2000_steps10_r1: finished before, skipped" in out, out
    assert (finished / "run.json").stat().st_mtime_ns == stamp
    assert len(list(run_dir.parent.glob(f"{run_dir.name}.failed-*"))) == 1


@needs_mpi
def test_ranks_do_not_outlive_a_killed_snakemake(ring: Path, tmp_path: Path) -> None:
    """SIGKILL of Snakemake leaves its job's shell and apmt profile running; apmt watches
    Snakemake (APMT_WATCH_PID, set by the workflow), so the ranks end within seconds."""
    program = tmp_path / "ring"
    shutil.copy2(ring, program)
    for name in ("Snakefile", "workflow", "profiles"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, tmp_path / name)
    (tmp_path / "config" / "studies").mkdir(parents=True)
    shutil.move(ring_study(tmp_path, program), tmp_path / "config" / "studies" / "long.yaml")
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(
        {"studies": {"long": {"profile": "config/studies/long.yaml", "holdout": None}}}))
    snakemake = Path(sys.executable).parent / "snakemake"
    process = subprocess.Popen([str(snakemake), "--cores", "2", "results/long/runs/p2.json"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        run_dir = wait_for_ranks(tmp_path / "results" / "raw" / "long", program, 120)
    except AssertionError:
        process.kill()
        raise AssertionError(process.communicate()[0]) from None
    process.kill()
    process.wait()
    gone = seconds_until_gone(program)
    print(f"Snakemake SIGKILL: ranks gone after {gone:.2f} s")
    assert gone < 10
    info = recorded_interrupt(run_dir)
    assert "(Snakemake) ended" in info["error"], info["error"]
    assert not (run_dir / "done").exists()


def recorded_interrupt(run_dir: Path, limit_s: float = 20) -> dict:
    """The run's record once apmt, which outlives its ranks by a moment, marked it."""
    deadline = time.monotonic() + limit_s
    while True:
        info = json.loads((run_dir / "run.json").read_text())
        if info.get("interrupted") or time.monotonic() > deadline:
            assert info.get("interrupted") is True and info["ok"] is False, info
            return info
        time.sleep(0.1)


# ------------------------------------------------------------------------- Slurm as typed

def test_auto_is_srun_inside_an_allocation_and_mpirun_elsewhere() -> None:
    from apmt.collect.launch import resolve_launcher
    assert resolve_launcher("auto", {"SLURM_JOB_ID": "4711"}) == "srun"
    expected = "mpirun" if shutil.which("mpirun") or not shutil.which("mpiexec") else "mpiexec"
    assert resolve_launcher("auto", {"PATH": os.environ.get("PATH", "")}) == expected
    assert resolve_launcher("mpirun", {"SLURM_JOB_ID": "4711"}) == "mpirun"   # as typed
    assert load_study(REPO / "config/studies/lammps-lj.yaml").launcher == "auto"


def test_a_p_beyond_its_partition_needs_overcommit() -> None:
    from apmt.collect.slurm import needs_overcommit, parse_sinfo
    known = parse_sinfo("local*|0/2/0/2|1\nbig|8/24/0/32|1\nbig|0/32/0/32|1\nbad line\n")
    assert [(k.name, k.cpus, k.nodes, k.default) for k in known] == [
        ("local", 2, 1, True), ("big", 64, 2, False)]
    # the job goes to the default partition unless the profile names one
    assert needs_overcommit(3, "study s", True, known)
    assert not needs_overcommit(64, "study s", False, known, named="big")
    assert needs_overcommit(65, "study s", True, known, named="big")
    with pytest.raises(ApmtError) as caught:
        needs_overcommit(65, "profile_p: study s", False, known, named="big")
    assert str(caught.value).startswith("profile_p: study s: P=65 asks Slurm for 65 tasks, "
                                        "but the partition (big: 2 node(s)) has 64 CPUs")
    with pytest.raises(ApmtError) as caught:
        needs_overcommit(3, "profile_p: study s", False, known)
    assert "but the default partition (local: 1 node(s)) has 2 CPUs" in str(caught.value)
    assert not needs_overcommit(10**6, "study s", False, known, named="elsewhere")
    largest = parse_sinfo("a|0/2/0/2|1\nb|0/8/0/8|1\n")            # no default: the largest
    assert not needs_overcommit(8, "study s", False, largest)
    assert not needs_overcommit(10**6, "study s", False, [])     # no sinfo: Slurm decides
