"""What a Slurm cluster can give one profiling job, asked before the job is submitted.

A job of P tasks (one CPU each) that its partition cannot hold is not refused by sbatch: it
waits in the queue forever (reason ``PartitionConfig``) and Snakemake says nothing. The
workflow asks here first and refuses such a job with one line naming P and the limit, unless
the config allows overcommitting (``slurm_overcommit``: sbatch ``--overcommit``, more tasks
than CPUs, as a 2-core test machine needs). The partition is the one the job goes to: the
profile's ``slurm_partition`` where it names one, else the cluster's default; where neither
is known (a partition file lets the executor choose), the largest.
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
    default: bool = False   # the cluster's default partition (sinfo marks it with '*')


def partitions() -> list[Partition]:
    """The cluster's partitions with their CPUs (``sinfo``); empty when sinfo does not
    answer (then nothing is checked: Slurm will say what it says)."""
    try:
        done = subprocess.run(["sinfo", "--noheader", "--format=%P|%C|%D"],
                              capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_sinfo(done.stdout) if done.returncode == 0 else []


def parse_sinfo(text: str) -> list[Partition]:
    """``name|allocated/idle/other/total|nodes`` lines, the default partition's name ending
    in '*'; a partition on several lines (nodes in different states) is summed; unreadable
    lines are skipped."""
    found: dict[str, tuple[int, int]] = {}
    defaults = set()
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        counts = parts[1].split("/")
        if len(counts) != 4 or not counts[3].isdigit() or not parts[2].isdigit():
            continue
        name = parts[0].removesuffix("*")
        if name != parts[0]:
            defaults.add(name)
        cpus, nodes = found.get(name, (0, 0))
        found[name] = (cpus + int(counts[3]), nodes + int(parts[2]))
    return [Partition(name, cpus, nodes, name in defaults)
            for name, (cpus, nodes) in found.items()]


def target_partition(known: list[Partition], named: str | None) -> tuple[Partition, str] | None:
    """The partition a job goes to and how it was chosen: the one named, else the default,
    else the largest; None when the named one is not known here (Slurm will say)."""
    if named:
        chosen = [partition for partition in known if partition.name == named]
        return (chosen[0], "the partition") if chosen else None
    defaults = [partition for partition in known if partition.default]
    if defaults:
        return defaults[0], "the default partition"
    return max(known, key=lambda partition: partition.cpus), "the largest partition"


def needs_overcommit(p: int, what: str, allowed: bool,
                     known: list[Partition] | None = None, named: str | None = None) -> bool:
    """Whether a job of P tasks needs ``--overcommit`` to be placed in its partition (named,
    else the default); ApmtError when it does and ``allowed`` is false (one line: what
    asked, P, the partition)."""
    known = partitions() if known is None else known
    target = target_partition(known, named) if known else None
    if target is None:
        return False
    partition, how = target
    if p <= partition.cpus:
        return False
    if allowed:
        return True
    raise ApmtError(
        f"{what}: P={p} asks Slurm for {p} tasks, but {how} ({partition.name}: "
        f"{partition.nodes} node(s)) has {partition.cpus} CPUs, so the job would wait "
        "forever; lower P (refine: max_p), choose a larger partition (slurm_partition) or set "
        "slurm_overcommit: true in the config")
