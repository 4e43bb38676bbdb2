"""What a Slurm cluster can give one profiling job, asked before the job is submitted.

A job of P tasks (one CPU each) that no partition can hold is not refused by sbatch: it waits
in the queue forever (reason ``PartitionConfig``) and Snakemake says nothing. The workflow
asks here first and refuses such a job with one line naming P and the limit, unless the
config allows overcommitting (``slurm_overcommit``: sbatch ``--overcommit``, more tasks than
CPUs, as a 2-core test machine needs).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from apmt.errors import ApmtError


@dataclass(frozen=True)
class Partition:
    name: str
    cpus: int     # CPUs of all its nodes
    nodes: int


def partitions() -> list[Partition]:
    """The cluster's partitions with their CPUs (``sinfo``); empty when sinfo does not
    answer (then nothing is checked: Slurm will say what it says)."""
    try:
        done = subprocess.run(["sinfo", "--noheader", "--format=%R|%C|%D"],
                              capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_sinfo(done.stdout) if done.returncode == 0 else []


def parse_sinfo(text: str) -> list[Partition]:
    """``name|allocated/idle/other/total|nodes`` lines; a partition on several lines (nodes in
    different states) is summed; unreadable lines are skipped."""
    found: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        counts = parts[1].split("/")
        if len(counts) != 4 or not counts[3].isdigit() or not parts[2].isdigit():
            continue
        cpus, nodes = found.get(parts[0], (0, 0))
        found[parts[0]] = (cpus + int(counts[3]), nodes + int(parts[2]))
    return [Partition(name, cpus, nodes) for name, (cpus, nodes) in found.items()]


def needs_overcommit(p: int, what: str, allowed: bool,
                     known: list[Partition] | None = None) -> bool:
    """Whether a job of P tasks needs ``--overcommit`` to be placed at all; ApmtError when
    it does and ``allowed`` is false (one line: what asked, P, the largest partition)."""
    known = partitions() if known is None else known
    if not known:
        return False
    largest = max(known, key=lambda partition: partition.cpus)
    if p <= largest.cpus:
        return False
    if allowed:
        return True
    raise ApmtError(
        f"{what}: P={p} asks Slurm for {p} tasks, but the largest partition "
        f"({largest.name}: {largest.nodes} node(s)) has {largest.cpus} CPUs, so the job would "
        "wait forever; lower P (refine: max_p) or set slurm_overcommit: true in the config")
