"""Planning time of a batch: `snakemake -n` on many profiled studies of several P each.

Usage: python benchmarks/plan.py [--studies 20] [--p 6] [--repeat 3]

Writes a config with ``--studies`` copies of a profiled study (the shipped LAMMPS study file
with ``--p`` process counts and two repetitions), each with a holdout, baselines and two
predictions, into a temporary copy of the workflow, and times ``snakemake -n`` there (Snakemake
started as a user starts it, so its own start-up counts). Prints the jobs planned and the
median wall time of ``--repeat`` dry runs. The issue's target: under 10 s for 20 studies of
6 P.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPOSITORY = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "workflow", "data", "profiles")
STUDY_FILE = REPOSITORY / "config" / "studies" / "lammps-lj.yaml"


def batch_config(folder: Path, studies: int, p_count: int) -> Path:
    """A config of ``studies`` profiled studies, each its own study file at ``p_count`` P."""
    template = yaml.safe_load(STUDY_FILE.read_text())
    (folder / "config" / "studies").mkdir(parents=True)
    entries = {}
    for index in range(studies):
        name = f"app{index:03d}"
        study = {**template, "name": name, "p": [2 ** k for k in range(p_count)],
                 "setup": [str(REPOSITORY / "data" / "lammps" / "in.lj")]}
        path = folder / "config" / "studies" / f"{name}.yaml"
        path.write_text(yaml.safe_dump(study))
        entries[name] = {"profile": str(path.relative_to(folder)), "holdout": "p=max",
                         "baselines": ["analytic", "amdahl", "powerlaw"],
                         "predict": [{"p": 2 ** (p_count + 1), "size": 1},
                                     {"p": 2 ** (p_count + 3), "size": 1}]}
    config = folder / "config" / "config.yaml"
    config.write_text(yaml.safe_dump({"studies": entries}))
    return config


def dry_run(folder: Path) -> tuple[float, str]:
    snakemake = Path(sys.executable).parent / "snakemake"
    command = [str(snakemake) if snakemake.is_file() else "snakemake", "-n", "--quiet",
               "rules"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"snakemake -n failed:\n{done.stdout}{done.stderr}")
    return seconds, done.stdout


def jobs_planned(output: str) -> int:
    for line in output.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "total":
            return int(words[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=20)
    parser.add_argument("--p", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="apmt-plan-") as tmp:
        folder = Path(tmp)
        for name in WORKFLOW_FILES:
            source = REPOSITORY / name
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, folder / name)
        batch_config(folder, args.studies, args.p)
        timings, output = [], ""
        for _ in range(args.repeat):
            seconds, output = dry_run(folder)
            timings.append(seconds)
    print(f"{args.studies} studies x {args.p} P: {jobs_planned(output)} jobs planned "
          f"(up to the refinement checkpoints); snakemake -n median "
          f"{statistics.median(timings):.2f} s (runs: "
          f"{', '.join(f'{t:.2f}' for t in timings)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
