"""From a run to a command line: the launcher's words and the per-rank wrapper script.

Launchers differ in what they need: Open MPI's ``mpirun`` refuses to run as root without
``--allow-run-as-root`` and more ranks than cores without ``--oversubscribe``; MPICH's Hydra
(``mpiexec``, or an ``mpirun`` that is MPICH's) takes ``-n`` and oversubscribes silently;
Slurm's ``srun`` needs ``--overcommit`` for more tasks than the allocation's CPUs and often a
``--mpi`` plugin. Each rank then runs a small shell script that finds its rank and ``exec``s
the backend's prefix and the application, so each rank writes its own files.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from apmt.errors import ApmtError

WRAPPER = "run.sh"
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "PMIX_RANK")


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
    """The installed launcher and which MPI it belongs to; ApmtError if not installed."""
    if shutil.which(program) is None:
        raise ApmtError(f"launcher {program!r} is not installed (not found on PATH)")
    text = version_text(program)
    return Launcher(program, flavour_of(program, text), first_line(text), args, srun_mpi)


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
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%C"], capture_output=True, text=True,
                              timeout=20, stdin=subprocess.DEVNULL)
        counts = done.stdout.split()[0].split("/")  # allocated/idle/other/total
        return int(counts[3])
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError):
        return None


def running_as_root() -> bool:
    return os.geteuid() == 0


# -------------------------------------------------------------------------------- wrapper

def wrapper_text(prefix: str, app_command: str, env: dict[str, str]) -> str:
    """The script each rank runs: its rank in ``$rank``, the variables, then the command.

    Variables are set here, on the node that runs the rank, because launchers do not
    forward the whole environment to other nodes (Open MPI forwards only ``-x`` names).
    """
    rank = "0"
    for variable in reversed(RANK_VARIABLES):
        rank = f"${{{variable}:-{rank}}}"
    lines = ["#!/bin/sh", "# written by apmt: one rank of this run", f'rank="{rank}"',
             'export APMT_RANK="$rank"']
    lines += [f"export {key}={shlex.quote(value)}" for key, value in env.items()]
    lines.append(" ".join(word for word in ("exec", prefix.strip(), app_command) if word))
    return "\n".join(lines) + "\n"


def write_wrapper(run_dir: Path, prefix: str, app_command: str,
                  env: dict[str, str]) -> Path:
    """Write the rank script into the run folder (it is part of what ran)."""
    path = run_dir / WRAPPER
    path.write_text(wrapper_text(prefix, app_command, env))
    path.chmod(0o755)
    return path


def rank_command(run_dir: Path) -> list[str]:
    """How the launcher starts the wrapper of a run."""
    return ["/bin/sh", str(run_dir.resolve() / WRAPPER)]
