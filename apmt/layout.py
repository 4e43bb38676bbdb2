"""The results folder: the one module that knows where apmt keeps what.

    results/                         RESULTS (``--results DIR`` for the commands)
      raw/<study>/<run>/             the raw runs, never overwritten (raw_dir)
      <study>/                       a study's folder (study_dir)
        runs/p<P>.json               what became of each run at P (run_summary);
        runs/p<P>_f<MHz>.json          the same at a lower CPU frequency
        rounds/r<N>/                 a refinement round (round_dir): MEASUREMENTS, COMM and
                                       their provenance, FREQUENCY, VALIDATION, EVALUATION,
                                       DECISION, FREQUENCY_SOLUTION
        measurements.csv, comm.csv   the tables (the last round's, or the imported ones), with
        measurements.csv.provenance.json   where they came from (sidecar)
        refinement.json              every round's decision
        model.json, evaluation.csv, validation.json, predictions.csv
        figures/<name>.png, diagnosis.txt, diagnosis.html
      diagnose/                      the one-off studies of ``apmt diagnose -- COMMAND``: a
                                       results folder of its own (ONE_OFF)
      artifact/manifest.tsv          the paper artifact's manifest (ARTIFACT)

The commands take their files as arguments; the workflow's rules (workflow/rules/common.smk)
and the commands that make or read a whole folder (profile, extract, diagnose, the figures)
name them through this module.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path("results")
RAW, RUNS, ROUNDS, FIGURES, ONE_OFF = "raw", "runs", "rounds", "figures", "diagnose"
ARTIFACT = Path("artifact") / "manifest.tsv"
FIGURE_NAMES = ("fits", "scaling", "breakdown", "errors", "ranking")   # figures/<name>.png

MEASUREMENTS = "measurements.csv"
COMM = "comm.csv"
FREQUENCY = "frequency.csv"
MODEL = "model.json"
EVALUATION = "evaluation.csv"
VALIDATION = "validation.json"
PREDICTIONS = "predictions.csv"
REFINEMENT = "refinement.json"
DECISION = "decision.json"
FREQUENCY_SOLUTION = "frequency_solution.csv"
DIAGNOSIS_TEXT, DIAGNOSIS_HTML = "diagnosis.txt", "diagnosis.html"
SIDECAR_SUFFIX = ".provenance.json"
MEASUREMENTS_PROVENANCE = MEASUREMENTS + SIDECAR_SUFFIX


def sidecar(table: str | Path) -> Path:
    """Where a table's provenance lives: next to it, so it travels with the file."""
    table = Path(table)
    return table.with_name(table.name + SIDECAR_SUFFIX)


def study_dir(study: str, results: str | Path = RESULTS) -> Path:
    return Path(results) / study


def raw_dir(study: str, results: str | Path = RESULTS) -> Path:
    return Path(results) / RAW / study


def round_dir(study: str, round_index: int | str, results: str | Path = RESULTS) -> Path:
    """A refinement round's folder; ``round_index`` may be a wildcard (``{round}``)."""
    return study_dir(study, results) / ROUNDS / f"r{round_index}"


def run_summary(study: str, p: int | str, mhz: int | str | None = None,
                results: str | Path = RESULTS) -> Path:
    """The record of a profiling job's runs at P (at ``mhz`` for a lower-frequency rerun)."""
    name = f"p{p}" if mhz is None else f"p{p}_f{mhz}"
    return study_dir(study, results) / RUNS / f"{name}.json"


def figure(study: str, name: str, results: str | Path = RESULTS) -> Path:
    return study_dir(study, results) / FIGURES / f"{name}.png"


def one_off_results(results: str | Path = RESULTS) -> Path:
    """The results folder of ``apmt diagnose -- COMMAND``'s one-off studies."""
    return Path(results) / ONE_OFF


def results_of(path: str | Path, study: str) -> Path:
    """The results folder holding a file of a study's folder (the inverse of study_dir)."""
    for parent in Path(path).parents:
        if parent.name == study:
            return parent.parent
    raise ValueError(f"{path}: not in a folder of study {study!r}")


def last_round(folder: Path) -> Path | None:
    """The highest-numbered round of a study folder that has its measurements, or None."""
    rounds = [path.parent for path in folder.glob(f"{ROUNDS}/r*/{MEASUREMENTS}")
              if path.parent.name[1:].isdigit()]
    return max(rounds, key=lambda path: int(path.name[1:]), default=None)
