# Shared by every stage: config validation, wildcard constraints, the apmt command on PATH,
# and every helper and input function (the stage files hold only the steps).

import re
import shlex
import sys
from pathlib import Path

import yaml

from snakemake.utils import validate
from snakemake_interface_executor_plugins.settings import DeploymentMethod


validate(config, schema="../schemas/config.schema.yaml")

STUDIES = list(config["studies"])
PROFILED = [name for name in STUDIES if config["studies"][name].get("profile")]
IMPORTED = [name for name in STUDIES if name not in PROFILED]


def study_pattern(names: list[str]) -> str:
    """A wildcard constraint matching exactly these study names (nothing when empty)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


def check_profiled_names() -> None:
    """`apmt profile` writes into results/<the study file's name>/: it must be the key."""
    for name in PROFILED:
        path = Path(config["studies"][name]["profile"])
        if not path.is_file():
            raise ValueError(f"config: studies.{name}.profile: no such file {str(path)!r}")
        declared = (yaml.safe_load(path.read_text()) or {}).get("name", path.stem)
        if declared != name:
            raise ValueError(f"config: studies.{name}.profile: {str(path)!r} is study "
                             f"{declared!r}; its key here must be the same")


check_profiled_names()


wildcard_constraints:
    study="|".join(re.escape(name) for name in STUDIES),


def apmt_path_prefix() -> str:
    """Shell code that lets the commands call `apmt` by name. apmt is installed next to the
    Python that runs Snakemake (.venv/bin/apmt), a folder that is not on PATH unless the
    virtualenv is activated, so it goes first. Not when jobs deploy with conda (their
    environment brings apmt) or when that folder has no apmt (then the one on PATH is used)."""
    python_bin = Path(sys.executable).parent
    with_conda = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    if with_conda or not (python_bin / "apmt").is_file():
        return ""
    return f'PATH={shlex.quote(str(python_bin))}:"$PATH"; '


# Bash strict mode (Snakemake's default prefix, which this replaces), then apmt on PATH.
shell.prefix(f"set -euo pipefail; {apmt_path_prefix()}")


def study_settings(wildcards) -> dict:
    return config["studies"][wildcards.study]


def final_outputs() -> list[str]:
    """The targets of the default job. Per study the model, plus the evaluation and the
    figures when a holdout is set and the predictions when points are listed."""
    targets = []
    for study, settings in config["studies"].items():
        targets.append(f"results/{study}/model.json")
        if settings["holdout"]:
            targets.append(f"results/{study}/evaluation.csv")
            targets += [f"results/{study}/figures/{name}.png"
                        for name in ("fits", "scaling", "breakdown", "errors", "ranking")]
        if settings["predict"]:
            targets.append(f"results/{study}/predictions.csv")
    return targets


# --- import -----------------------------------------------------------------------------------


def import_paths(wildcards) -> list[str]:
    return study_settings(wildcards)["import"]["paths"]


def import_format(wildcards) -> str:
    return study_settings(wildcards)["import"]["format"]


# --- profile ------------------------------------------------------------------------------------


def profile_study_file(wildcards) -> str:
    return study_settings(wildcards)["profile"]


def profile_setup_files(wildcards) -> list[str]:
    """The files the study copies into every run (its `setup`, relative to the study file)."""
    study = Path(profile_study_file(wildcards))
    setup = (yaml.safe_load(study.read_text()) or {}).get("setup") or []
    return [str(study.parent / name) for name in setup]


# --- fit and evaluate ---------------------------------------------------------------------------


def comm_table(wildcards) -> list[str]:
    """The communication table: the MPI traces of a profiled study (imports have none)."""
    return [f"results/{wildcards.study}/comm.csv"] if wildcards.study in PROFILED else []


def comm_option(wildcards, input) -> str:
    return shlex.join(["--comm", input.comm[0]]) if input.comm else ""


def param_options(wildcards) -> str:
    """--param and --per-rank-param; none means: every parameter column in the table."""
    settings = study_settings(wildcards)
    options = []
    if settings["params"]:
        options += ["--param", *settings["params"]]
    if settings["per_rank_params"]:
        options += ["--per-rank-param", *settings["per_rank_params"]]
    return shlex.join(options)


def app_kernel_option(wildcards) -> str:
    kernel = study_settings(wildcards)["app_kernel"]
    return shlex.join(["--app-kernel", kernel]) if kernel else ""


def holdout(wildcards) -> str:
    return study_settings(wildcards)["holdout"]


def metrics_option(wildcards) -> str:
    metrics = study_settings(wildcards)["evaluate_metrics"]
    return shlex.join(["--metrics", ",".join(metrics)]) if metrics else ""


def baselines(wildcards) -> str:
    return ",".join(study_settings(wildcards)["baselines"])


# --- predict ------------------------------------------------------------------------------------


def prediction_points(wildcards) -> str:
    """One `--at p=...,NAME=...` per point listed under the study's `predict`."""
    options = []
    for point in study_settings(wildcards)["predict"]:
        options += ["--at", ",".join(f"{name}={value}" for name, value in point.items())]
    return shlex.join(options)
