"""From a run to a command line: the launcher's words and each rank's start.

Launchers differ in what they need: Open MPI's ``mpirun`` refuses to run as root without
``--allow-run-as-root`` and more ranks than cores without ``--oversubscribe``; MPICH's Hydra
(``mpiexec``, or an ``mpirun`` that is MPICH's) takes ``-n`` and oversubscribes silently;
Slurm's ``srun`` needs ``--overcommit`` for more tasks than the allocation's CPUs and often a
``--mpi`` plugin. Each rank then starts through apmt's exec shim (``rank_exec.py``, Python
without a shell) that finds its rank, writes its process id to ``rank.<rank>.pid``, sets the
run's variables and execs the backend's prefix (``{rank}`` filled, so each rank writes its
own files) and the application's words as they are.

Where the measuring tool goes (``measurement_prefixes``): a backend that can follow a whole
process tree (perf: ``launch_prefix``) is put once before the launcher when every rank is a
descendant of the launcher on this host (``mpirun``/``mpiexec`` without a host list, outside
a multi-node allocation); its samples are split per rank by process afterwards. One perf
then starts once instead of once per rank, and at P ranks on P cores no P perf processes
compete with the ranks. Otherwise (``srun``, whose tasks slurmstepd starts; host lists;
multi-node allocations; backends without it, such as cachegrind) the prefix goes before
each rank. ``APMT_PERF_SCOPE=rank`` forces the second way, ``launch`` the first. The run's
``run.json`` shows which (``command.launcher`` and ``command.rank``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from apmt.collect import rank_exec
from apmt.collect.rank_exec import PID_FILE
from apmt.errors import ApmtError
from apmt.inputs import read_text

SCOPE_VARIABLE = "APMT_PERF_SCOPE"
SCOPES = ("auto", "launch", "rank")
# launcher options that place ranks on other hosts (Open MPI, MPICH Hydra, Intel MPI)
HOST_OPTIONS = ("-H", "--host", "-host", "--hostfile", "-hostfile", "--machinefile",
                "-machinefile", "-f", "-hosts", "--hosts", "--default-hostfile")
# variables of a batch allocation or launcher that list several hosts
MULTI_NODE_COUNTS = ("SLURM_JOB_NUM_NODES", "SLURM_NNODES")
HOST_LIST_VARIABLES = ("OMPI_MCA_orte_default_hostfile", "OMPI_MCA_rmaps_base_hostfile",
                       "HYDRA_HOST_FILE")


@dataclass(frozen=True)
class Launcher:
    """The launcher a study names, as found on this machine."""

    program: str                  # mpirun, mpiexec or srun
    flavour: str                  # openmpi, mpich (Hydra, also Intel MPI), slurm, unknown
    version: str                  # first line of ``--version``
    args: tuple[str, ...] = ()    # the study's launcher_args
    srun_mpi: str | None = None   # srun --mpi plugin


def find_launcher(program: str, args: tuple[str, ...] = (),
                  srun_mpi: str | None = None) -> Launcher:
    """The installed launcher (``auto`` resolved) and which MPI it belongs to; ApmtError if
    not installed."""
    chosen = resolve_launcher(program)
    if shutil.which(chosen) is None:
        why = f" (auto: {'inside' if chosen == 'srun' else 'outside'} a Slurm allocation)" \
            if program == "auto" else ""
        raise ApmtError(f"launcher {chosen!r}{why} is not installed (not found on PATH)")
    text = version_text(chosen)
    return Launcher(chosen, flavour_of(chosen, text), first_line(text), args,
                    srun_mpi if chosen == "srun" else None)


def resolve_launcher(program: str, environ: dict[str, str] | None = None) -> str:
    """``auto``: srun inside a Slurm allocation (SLURM_JOB_ID set: Snakemake's Slurm jobs
    keep only that of the SLURM_* variables, and mpirun finds no nodes there), else mpirun
    (mpiexec where only it is installed). Any other name as it is."""
    if program != "auto":
        return program
    environ = os.environ if environ is None else environ
    if environ.get("SLURM_JOB_ID", "").strip():
        return "srun"
    return "mpiexec" if not shutil.which("mpirun") and shutil.which("mpiexec") else "mpirun"


def version_text(program: str) -> str:
    """What ``PROGRAM --version`` prints (both streams); empty if it does not answer."""
    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True,
                              timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).strip()


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "unknown"


def flavour_of(program: str, version: str) -> str:
    """Which launcher family a ``--version`` text is from."""
    if program == "srun" or version.startswith("slurm"):
        return "slurm"
    if re.search(r"Open MPI|OpenRTE|open-mpi", version, re.IGNORECASE):
        return "openmpi"
    if re.search(r"HYDRA|MPICH|Intel\(R\) MPI", version, re.IGNORECASE):
        return "mpich"
    return "unknown"


def launch_command(launcher: Launcher, p: int, rank_command: list[str], cpus: int,
                   as_root: bool) -> list[str]:
    """The launcher's words for P ranks of ``rank_command`` on ``cpus`` CPUs."""
    over = p > cpus
    if launcher.flavour == "openmpi":
        words = [launcher.program, *(["--allow-run-as-root"] if as_root else []),
                 *(["--oversubscribe"] if over else []), "-np", str(p)]
    elif launcher.flavour == "slurm":
        words = ["srun", "-n", str(p), *(["--overcommit"] if over else []),
                 *([f"--mpi={launcher.srun_mpi}"] if launcher.srun_mpi else [])]
    else:  # Hydra and unknown launchers: -n is the MPI standard's mpiexec option
        words = [launcher.program, "-n", str(p)]
    return [*words, *launcher.args, *rank_command]


def available_cpus(launcher: Launcher) -> int:
    """CPUs the ranks share: the Slurm allocation's (or partition's) for srun, else ours."""
    if launcher.flavour == "slurm":
        cpus = slurm_cpus()
        if cpus:
            return cpus
    return len(os.sched_getaffinity(0))


def _job_cpus(job: str) -> int | None:
    """The CPUs Slurm gave a job (squeue %C), e.g. 1 for an --overcommit job of 4 tasks."""
    try:
        done = subprocess.run(["squeue", "-h", "-j", job, "-o", "%C"], capture_output=True,
                              text=True, timeout=20, stdin=subprocess.DEVNULL)
        return int(done.stdout.split()[0])
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError):
        return None


def slurm_cpus() -> int | None:
    """CPUs of the current allocation (SLURM_JOB_CPUS_PER_NODE, e.g. ``2(x3),1``), or of
    all nodes Slurm knows (``sinfo``) when srun will allocate by itself."""
    spec = os.environ.get("SLURM_JOB_CPUS_PER_NODE")
    if spec:
        total = 0
        for part in spec.split(","):
            match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
            if not match:
                return None
            total += int(match.group(1)) * int(match.group(2) or 1)
        return total
    job = os.environ.get("SLURM_JOB_ID")
    if job:     # inside a job whose SLURM_* variables were dropped (Snakemake's MPI jobs)
        return _job_cpus(job)
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%C"], capture_output=True, text=True,
                              timeout=20, stdin=subprocess.DEVNULL)
        counts = done.stdout.split()[0].split("/")  # allocated/idle/other/total
        return int(counts[3])
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError):
        return None


def running_as_root() -> bool:
    return os.geteuid() == 0


# ------------------------------------------------------------------- where the tool goes

def single_host(launcher: Launcher, environ: dict[str, str] | None = None) -> bool:
    """Whether every rank is a descendant of the launcher process on this host: mpirun or
    mpiexec (Open MPI, MPICH) with no host list in its arguments or environment, and not
    in an allocation of several nodes. srun never: slurmstepd starts its tasks."""
    environ = dict(os.environ if environ is None else environ)
    if launcher.flavour not in ("openmpi", "mpich"):
        return False
    for word in launcher.args:
        if word.split("=", 1)[0] in HOST_OPTIONS:
            return False
    if any(environ.get(name) for name in HOST_LIST_VARIABLES):
        return False
    for name in MULTI_NODE_COUNTS:
        if environ.get(name, "1").strip() not in ("", "1"):
            return False
    return _hosts_in_file(environ.get("PBS_NODEFILE")) <= 1 \
        and len(set(environ.get("LSB_HOSTS", "").split())) <= 1


def _hosts_in_file(path: str | None) -> int:
    if not path:
        return 0
    try:
        return len({line.strip() for line in Path(path).read_text().splitlines()
                    if line.strip()})
    except OSError:
        return 2            # an allocation we cannot read: assume several hosts


def measurement_scope(backend: object, launcher: Launcher,
                      environ: dict[str, str] | None = None) -> str:
    """``launch`` (one tool before the launcher) or ``rank`` (one per rank): see the
    module doc. ApmtError for an unknown APMT_PERF_SCOPE."""
    environ = dict(os.environ if environ is None else environ)
    wanted = environ.get(SCOPE_VARIABLE, "auto").strip() or "auto"
    if wanted not in SCOPES:
        raise ApmtError(f"{SCOPE_VARIABLE}={wanted!r}: expected one of {', '.join(SCOPES)}")
    if not hasattr(backend, "launch_prefix") or wanted == "rank":
        return "rank"
    return "launch" if wanted == "launch" or single_host(launcher, environ) else "rank"


def measurement_prefixes(backend: object | None, run_dir: Path,
                         launcher: Launcher) -> tuple[list[str], list[str]]:
    """(words before the launcher, words before each rank's command, ``{rank}`` in them the
    rank) for a backend pass (None: no backend)."""
    if backend is None:
        return [], []
    if measurement_scope(backend, launcher) == "launch":
        return list(backend.launch_prefix(Path(run_dir))), []   # type: ignore[attr-defined]
    return [], list(backend.rank_prefix(Path(run_dir)))        # type: ignore[attr-defined]


def rank_pids(run_dir: Path) -> dict[int, int]:
    """Process id of each rank, from the ``rank.<rank>.pid`` files its start wrote."""
    pids = {}
    for path in Path(run_dir).glob(PID_FILE.format(rank="*")):
        rank = path.name.split(".")[1]
        text = read_text(path).strip()
        if not re.fullmatch("[0-9]{1,9}", rank) or not re.fullmatch("[0-9]{1,10}", text):
            raise ApmtError(f"{path}: expected a process id, found {text[:40]!r}")
        pids[int(rank)] = int(text)
    if not pids:
        raise ApmtError(f"{run_dir}: no {PID_FILE.format(rank='<rank>')} files: the ranks' "
                        f"start did not record their process ids")
    return dict(sorted(pids.items()))


# ----------------------------------------------------------------------------- rank start

def rank_command(run_dir: Path, prefix: list[str], app: list[str], stdin: str | None,
                 env: dict[str, str]) -> list[str]:
    """How the launcher starts each rank of a run: apmt's exec shim (``rank_exec``) with the
    folder for the process ids, the variables, the standard input, and the words to exec,
    the backend's ``prefix`` first (``{rank}`` in them is filled) and the application's."""
    words = [sys.executable, "-I", "-S", rank_exec.__file__,
             "--pid-dir", str(Path(run_dir).resolve())]
    for key, value in env.items():
        words += ["--env", f"{key}={value}"]
    if stdin is not None:
        words += ["--stdin", stdin]
    return [*words, "--prefix", str(len(prefix)), "--", *prefix, *app]
