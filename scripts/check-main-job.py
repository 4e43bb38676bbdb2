"""Check that the main job (`.venv/bin/snakemake --cores 2`) made what the README promises for
every study of config/config.yaml: model.json, diagnosis.txt and diagnosis.html; the
evaluation and the figures when a holdout is set; predictions.csv when the study lists
predict points; refinement.json when it is profiled. Run it in the repository the job ran in
(.ci/run does, on a fresh clone):

    .venv/bin/python scripts/check-main-job.py

Prints each study's outputs and what is missing or empty; exits 1 if anything is. The list is
written out here, not taken from the workflow, so that the workflow's own targets are checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

FIGURES = ("fits", "scaling", "breakdown", "errors", "ranking")


def expected(study: str, settings: dict) -> list[Path]:
    out = Path("results") / study
    paths = [out / "model.json", out / "diagnosis.txt", out / "diagnosis.html"]
    if settings.get("profile"):
        paths.append(out / "refinement.json")
    if settings["holdout"]:
        paths += [out / "evaluation.csv", *(out / "figures" / f"{name}.png" for name in FIGURES)]
    if settings["predict"]:
        paths.append(out / "predictions.csv")
    return paths


def main() -> int:
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    # the defaults the workflow fills in (e.g. holdout: p=max), from the same schema
    validate(config, "workflow/schemas/config.schema.yaml", set_default=True)
    bad = []
    for study, settings in config["studies"].items():
        paths = expected(study, settings)
        absent = [path for path in paths if not path.is_file() or path.stat().st_size == 0]
        print(f"{study}: {len(paths) - len(absent)} of {len(paths)} outputs")
        bad += absent
    for path in bad:
        print(f"missing or empty: {path}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
