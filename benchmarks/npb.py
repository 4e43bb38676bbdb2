"""apmt on the real NAS Parallel Benchmarks: fit on P <= 8, predict P = 16, measure P = 16.

Usage: python benchmarks/npb.py NPB_DIR [--class S] [--benchmarks cg,mg,lu,ft,bt,sp,ep,is]
       [--p 1,2,4,8] [--square-p 1,4,9] [--predict-p 16] [--repetitions 2]
       [--out FOLDER] [--cores 2] [--everything] [--machine NAME_OR_FILE]

NPB_DIR is an NPB 3.4 MPI tree that you built yourself (``make cg CLASS=S`` and so on in
NPB3.4-MPI, binaries in NPB_DIR/bin such as cg.S.x); nothing of NPB is part of this
repository. NPB 3.4's MPI source is public (NASA's NAS site); with gfortran 12 its
config/make.def needs ``RAND = randdp`` (randi8.f is rejected), ``-fallow-argument-mismatch``
in FFLAGS and an existing bin/ folder.

For each benchmark the script writes a study file derived from the shipped
config/studies/npb-<name>.yaml (the binary of the class, launcher auto, backend auto: here
perf cpu-clock sampling and cachegrind's simulated counters), at the fitted P plus the
predicted one (CG, MG, LU, FT, EP, IS: P = 1, 2, 4, 8 and 16; BT and SP need squares, NPB 3.4
running them elsewhere on the largest square of ranks and leaving the rest idle, and the only
squares up to 8 are 1 and 4, fewer than the 3 P a fit needs, so they are fitted on 1, 4 and 9),
and one workflow config holding every benchmark out at ``p=16`` with refinement off. Then it
runs the workflow (``snakemake --cores 2``, this repository's Snakefile, in FOLDER): it
profiles every P, P = 16 included for the measured truth, and its evaluation fits apmt and
each baseline on the smaller P only and predicts P = 16. It prints one table: per benchmark
the application's time (apmt: assembled from its kernels and MPI operations, Eq. 2; the
baselines fitted to the measured application time) and the instructions per rank of the three
functions of the binary (``nm``: not the C library's or MPI's) that execute most instructions
at P = 16 (cachegrind), with the value
measured at P = 16, apmt's prediction, its error and whether its 90% interval holds the
measured value, and the errors of the naive power law, Extra-P (when its environment is
installed), Amdahl and the analytic model (apmt.baselines, apmt.extrap_peer). FOLDER (default:
apmt-npb-<class> in the system's temporary folder) keeps the study files, the config, the raw
runs and every result; a second run reuses the finished runs. Runs beyond the machine's cores
oversubscribe it, and apmt's run records say so. Class S, all six, 2 repetitions: about 37
minutes on a 2-core machine, most of it cachegrind starting 16 ranks (it runs once per P;
the repetitions time only). Extra-P asks for 5 values per parameter: from 3 or 4 P it often
chooses a constant model.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from apmt.extrap_peer import find_extrap_python
from apmt.series import points
from apmt.tables import APP_KERNEL, TIME_METRIC, read_table

REPOSITORY = Path(__file__).resolve().parents[1]
STUDIES = REPOSITORY / "config" / "studies"
BENCHMARKS = ("cg", "mg", "lu", "ft", "bt", "sp")   # the default
KNOWN = (*BENCHMARKS, "ep", "is")      # with a study in config/studies
SQUARE = frozenset({"bt", "sp"})         # BT and SP run on a square number of ranks
BASELINE_ORDER = ("powerlaw", "extrap", "amdahl", "analytic")
INSTRUCTIONS = "instructions"
TOP_KERNELS = 3


def study_file(folder: Path, name: str, npb_class: str, npb: Path, p: list[int],
               repetitions: int, machine: str | None) -> Path:
    """The shipped study of this benchmark at one class (its size parameter set to that
    class's, the command template kept: ``bin/<name>.{class}.x`` in NPB_DIR), at these P."""
    study = yaml.safe_load((STUDIES / f"npb-{name}.yaml").read_text())
    (param, letters), = study["labels"]["class"].items()
    size = next(value for value, letter in letters.items() if letter == npb_class)
    template = Path(study["command"]).name
    study.update(command=str(npb / "bin" / template), params={param: [size]}, p=p,
                 repetitions=repetitions, launcher="auto", backend="auto", timeout_s=900)
    study.pop("machine", None)          # the paper's cluster; this host's file, or a given one
    if machine:
        study["machine"] = machine
    path = folder / "studies" / f"npb-{name}.yaml"
    write_if_changed(path, f"# written by benchmarks/npb.py from config/studies/npb-{name}.yaml\n"
                     + yaml.safe_dump(study, sort_keys=False))
    return path


def write_if_changed(path: Path, text: str) -> None:
    """Write only a changed file: an unchanged one keeps its time, and Snakemake its jobs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def workflow_config(folder: Path, studies: dict[str, Path], predict_p: int,
                    baselines: list[str]) -> Path:
    """The workflow's config: every study held out at the predicted P, refinement off (the
    model sees the smaller P only), the evaluation on time and instructions."""
    entries = {f"npb-{name}": {"profile": str(path), "holdout": f"p={predict_p}",
                               "baselines": baselines,
                               "evaluate_metrics": [TIME_METRIC, INSTRUCTIONS]}
               for name, path in studies.items()}
    config = {"studies": entries, "refine": {"max_rounds": 0}}
    path = folder / "config" / "config.yaml"
    write_if_changed(path, "# written by benchmarks/npb.py\n"
                     + yaml.safe_dump(config, sort_keys=False))
    return path


def run_workflow(folder: Path, cores: int, everything: bool) -> int:
    """``snakemake --cores N`` with this repository's Snakefile, working in ``folder``: the
    evaluations only, or with ``everything`` the default job's outputs (models, figures,
    diagnoses)."""
    snakemake = Path(sys.executable).parent / "snakemake"
    studies = yaml.safe_load((folder / "config" / "config.yaml").read_text())["studies"]
    targets = [] if everything else [f"results/{study}/evaluation.csv" for study in studies]
    command = [str(snakemake) if snakemake.is_file() else "snakemake",
               "--snakefile", str(REPOSITORY / "Snakefile"), "--directory", str(folder),
               "--workflow-profile", str(REPOSITORY / "profiles" / "default"),
               "--cores", str(cores), *targets]
    print("$", " ".join(command), flush=True)
    return subprocess.run(command).returncode


def baselines_available() -> list[str]:
    """Extra-P only where its environment is installed (scripts/install.sh)."""
    if find_extrap_python() is None:
        print("Extra-P left out: its environment is not installed", file=sys.stderr)
        return ["analytic", "amdahl", "powerlaw"]
    return ["analytic", "amdahl", "powerlaw", "extrap"]


def application_functions(binary: Path) -> set[str] | None:
    """The functions the benchmark's binary defines (``nm``), to tell its kernels from the
    C library's and MPI's functions that cachegrind also names; None without nm."""
    try:
        listed = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True,
                                text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    words = (line.split() for line in listed.splitlines())
    return {word[2] for word in words if len(word) == 3 and word[1] in "Tt"}


def rows_of(folder: Path, name: str, binary: Path, predict_p: int) -> list[dict]:
    """The table's rows of one benchmark, from its evaluation (and its measurements, to rank
    the binary's functions by instructions at the predicted P)."""
    results = folder / "results" / f"npb-{name}"
    evaluation_path = results / "evaluation.csv"
    if not evaluation_path.is_file():
        return [{"benchmark": name.upper(), "quantity": "(failed: see "
                 f"{folder / 'logs' / f'npb-{name}'})"}]
    evaluation = pd.read_csv(evaluation_path)
    evaluation = evaluation[evaluation["p"] == predict_p]
    quantities = [(APP_KERNEL, TIME_METRIC, "application time [s]")]
    measured = points(read_table(results / "measurements.csv", "measurements"), [])
    functions = application_functions(binary)
    counted = measured[(measured["metric"] == INSTRUCTIONS) & (measured["p"] == predict_p)
                       & ~measured["kernel"].str.startswith("<")]
    if functions is not None:
        counted = counted[counted["kernel"].isin(functions)]
    for kernel in counted.nlargest(TOP_KERNELS, "value")["kernel"]:
        quantities.append((kernel, INSTRUCTIONS, f"{kernel} instructions"))
    rows = []
    for kernel, metric, label in quantities:
        series = evaluation[(evaluation["kernel"] == kernel) & (evaluation["metric"] == metric)]
        row = {"benchmark": name.upper(), "quantity": label}
        apmt = series[series["method"] == "apmt"]
        if apmt.empty:
            row["measured"] = float(counted.loc[counted["kernel"] == kernel, "value"].max()) \
                if metric == INSTRUCTIONS else np.nan
            row["note"] = "apmt: not fitted (model.json's left_out says why)"
        else:
            first = apmt.iloc[0]
            held = first["lower"] <= first["measured"] <= first["upper"]
            row |= {"measured": first["measured"], "apmt": first["predicted"],
                    "apmt_err_%": first["ape"],
                    "in_90%": "-" if pd.isna(first["lower"]) else "yes" if held else "no"}
        for method in BASELINE_ORDER:
            chosen = series[series["method"] == method]
            if not chosen.empty:
                row[f"{method}_err_%"] = chosen["ape"].iloc[0]
        rows.append(row)
    return rows


def text(table: pd.DataFrame) -> str:
    def number(value: float) -> str:
        if abs(value) >= 1e5:
            return f"{value:.3g}"
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return table.to_string(index=False, na_rep="-", float_format=number)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("npb_dir", type=Path, help="a built NPB 3.4 MPI tree (with bin/)")
    parser.add_argument("--class", dest="klass", default="S", help="NPB class (S, W, A, ...)")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--p", default="1,2,4,8", help="the fitted P of all but BT and SP")
    parser.add_argument("--square-p", default="1,4,9", help="the fitted P of BT and SP")
    parser.add_argument("--predict-p", type=int, default=16)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--out", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--everything", action="store_true",
                        help="also the models, figures and diagnoses (about 6 more minutes)")
    parser.add_argument("--machine", help="machine file or shipped name (default: this host, "
                        "measured once by apmt machine probe)")
    args = parser.parse_args()

    npb = args.npb_dir.resolve()
    names = [name.strip().lower() for name in args.benchmarks.split(",") if name.strip()]
    unknown = [name for name in names if name not in KNOWN]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r} (known: {', '.join(KNOWN)})")
    folder = (args.out or Path(tempfile.gettempdir()) / f"apmt-npb-{args.klass}").resolve()
    if folder.is_relative_to(npb) or folder.is_relative_to(REPOSITORY):
        parser.error(f"--out {folder}: choose a folder outside NPB_DIR and the repository")
    fitted = {False: [int(p) for p in args.p.split(",")],
              True: [int(p) for p in args.square_p.split(",")]}
    studies, binaries = {}, {}
    for name in names:
        binary = npb / "bin" / f"{name}.{args.klass}.x"
        if not binary.is_file():
            parser.error(f"{binary}: no such binary (make {name} CLASS={args.klass} in "
                         "NPB3.4-MPI)")
        binaries[name] = binary
        p = sorted({*fitted[name in SQUARE], args.predict_p})
        studies[name] = study_file(folder, name, args.klass, npb, p, args.repetitions,
                                   args.machine)
    workflow_config(folder, studies, args.predict_p, baselines_available())

    started = time.perf_counter()
    status = run_workflow(folder, args.cores, args.everything)
    minutes = (time.perf_counter() - started) / 60

    table = pd.DataFrame([row for name in names
                          for row in rows_of(folder, name, binaries[name], args.predict_p)])
    print(f"\nNPB 3.4 MPI class {args.klass}: fitted on P = {args.p} (BT, SP: "
          f"{args.square_p}), predicted and measured at P = {args.predict_p}, "
          f"{args.repetitions} repetitions; errors are absolute percentage errors; "
          f"instructions per rank (cachegrind); workflow {minutes:.1f} min, in {folder}")
    print(text(table))
    return status


if __name__ == "__main__":
    sys.exit(main())
