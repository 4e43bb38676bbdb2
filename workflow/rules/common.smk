# Shared by every stage: config validation, wildcard constraints, the apmt command on PATH,
# and every helper and input function (the stage files hold only the steps).

import copy
import json
import os
import re
import shlex
import sys
from functools import cache
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from apmt import layout
from apmt.errors import ApmtError
from apmt.decision import Decision
from apmt.study import Study, load_study
from apmt.layout import (
    COMM,
    DECISION,
    DIAGNOSIS_HTML,
    DIAGNOSIS_TEXT,
    EVALUATION,
    FREQUENCY,
    FREQUENCY_SOLUTION,
    MEASUREMENTS,
    MEASUREMENTS_PROVENANCE,
    MODEL,
    PREDICTIONS,
    REFINEMENT,
    VALIDATION,
)
from snakemake_interface_executor_plugins.settings import DeploymentMethod


# A profiling job ends its runs (mpirun and every rank) when this Snakemake process dies, even
# by SIGKILL, which leaves the job's shell running: apmt profile watches this process
# (apmt/collect/interrupt.py). Under Slurm the job's own Snakemake sets its process here.
os.environ.update(APMT_WATCH_PID=str(os.getpid()))

# the keys each study's `refine` gives itself, before validation fills in the defaults
GIVEN_REFINE = {name: dict((study or {}).get("refine") or {})
                for name, study in copy.deepcopy(config.get("studies") or {}).items()}
validate(config, schema="../schemas/config.schema.yaml")

STUDIES = list(config["studies"])
PROFILED = [name for name in STUDIES if config["studies"][name].get("profile")]
IMPORTED = [name for name in STUDIES if name not in PROFILED]


def study_pattern(names: list[str]) -> str:
    """A wildcard constraint matching exactly these study names (nothing when empty)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


@cache
def profiled_study(name: str) -> Study:
    """A profiled study's file, loaded and checked by apmt's one loader (its schema is
    workflow/schemas/study.schema.yaml): a bad file is one line, before any job."""
    path = Path(config["studies"][name]["profile"])
    if not path.is_file():
        raise ValueError(f"config: studies.{name}.profile: no such file {str(path)!r}")
    try:
        return load_study(path)
    except ApmtError as error:
        raise WorkflowError(f"config: studies.{name}.profile: {error}") from None


def check_profiled_names() -> None:
    """`apmt profile` writes into results/<the study file's name>/: it must be the key."""
    for name in PROFILED:
        declared = profiled_study(name).name
        if declared != name:
            path = config["studies"][name]["profile"]
            raise ValueError(f"config: studies.{name}.profile: {path!r} is study "
                             f"{declared!r}; its key here must be the same")


check_profiled_names()


wildcard_constraints:
    study="|".join(re.escape(name) for name in STUDIES),
    p=r"[1-9][0-9]*",
    round=r"[0-9]+",


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


# --- paths: apmt.layout names every file; "{study}", "{round}", "{p}" stay wildcards -------


def study_file(name: str, study: str = "{study}") -> str:
    """A file of a study's results folder."""
    return str(layout.study_dir(study) / name)


def round_file(name: str, study: str = "{study}", round_index: int | str = "{round}") -> str:
    """A file of a refinement round's folder."""
    return str(layout.round_dir(study, round_index) / name)


def figure_file(name: str, study: str = "{study}") -> str:
    return str(layout.figure(study, name))


def run_summary(p: int | str = "{p}", mhz: int | str | None = None,
                study: str = "{study}") -> str:
    """The record of a profiling job's runs at P (at a lower frequency: ``mhz``)."""
    return str(layout.run_summary(study, p, mhz))


def results_folder(wildcards, output) -> str:
    """The results folder of a job's outputs (apmt's --results): raw/ is kept there."""
    return str(layout.results_of(output[0], wildcards.study))


def study_targets(study: str) -> dict[str, list[str]]:
    """The default job's targets of one study: the model and its diagnosis (and for a
    profiled study its refinement record), plus the evaluation and the figures when a holdout
    is set and the predictions when points are listed. Each with the study's other outputs
    marked for the report that the jobs making it need (--report refuses a job whose report
    files are missing): the model, the evaluation, and for a profiled study refinement.json,
    which comes with its tables."""
    settings = config["studies"][study]
    tables = [study_file(REFINEMENT, study)] if study in PROFILED else []
    model = [*tables, study_file(MODEL, study)]
    diagnosed = [*model, *([study_file(PREDICTIONS, study)] if settings["predict"] else [])]
    targets = {study_file(MODEL, study): tables,
               study_file(DIAGNOSIS_TEXT, study): [*diagnosed, study_file(DIAGNOSIS_HTML, study)],
               study_file(DIAGNOSIS_HTML, study): diagnosed}
    if study in PROFILED:
        targets[study_file(REFINEMENT, study)] = []
    if settings["holdout"]:
        targets[study_file(EVALUATION, study)] = tables
        figures = [figure_file(name, study) for name in layout.FIGURE_NAMES]
        targets |= {figure: [*model, study_file(EVALUATION, study), *figures]
                    for figure in figures}
    if settings["predict"]:
        targets[study_file(PREDICTIONS, study)] = model
    return targets


def final_outputs() -> list[str]:
    """Every study's targets (study_targets)."""
    return [target for study in STUDIES for target in study_targets(study)]


# --- report ---------------------------------------------------------------------------------


def report_file() -> str | None:
    """The report's file when Snakemake only builds the report (`--report [FILE]`, without
    --report-after-run, which runs the workflow first), else None. Snakemake tells the
    Snakefile nothing of it, so its command line says."""
    args = sys.argv[1:]
    if "--report-after-run" in args:
        return None
    for index, arg in enumerate(args):
        if arg.startswith("--report="):
            return arg.removeprefix("--report=")
        if arg == "--report":
            given = args[index + 1] if index + 1 < len(args) else "-"
            return "report.html" if given.startswith("-") else given
    return None


def reportable(study: str) -> list[str]:
    """The study's targets that the report can show: those that exist, as do the report files
    their jobs need (a failed job leaves no outputs, and nothing after it runs)."""
    return [target for target, needs in study_targets(study).items()
            if all(Path(path).exists() for path in [target, *needs])]


def default_targets() -> list[str]:
    """The targets of the default job (all): every study's. When Snakemake only builds the
    report, only what it can show, so that a failed study (keep-going finishes the others)
    leaves the others' results in the report; its front page lists the rest (report_missing)."""
    if report_file() is None:
        return final_outputs()
    return [target for study in STUDIES for target in reportable(study)]


def report_missing() -> list[dict]:
    """Per study with outputs the report leaves out: its name and their paths."""
    missing = []
    for study in STUDIES:
        shown = set(reportable(study))
        absent = [target for target in study_targets(study) if target not in shown]
        if absent:
            missing.append({"study": study, "outputs": absent})
    return missing


if report_file() is not None:
    # for the report's front page (workflow/report/workflow.rst), which sees only the config
    config["report_missing"] = report_missing()
    # Snakemake writes the report without making its folder (results/ before a first run)
    Path(report_file()).parent.mkdir(parents=True, exist_ok=True)


# --- import -----------------------------------------------------------------------------------


def import_paths(wildcards) -> list[str]:
    return study_settings(wildcards)["import"]["paths"]


def import_format(wildcards) -> str:
    return study_settings(wildcards)["import"]["format"]


def import_options(wildcards) -> str:
    """`apmt import`'s --processes, where the study says which parameter counts them."""
    processes = study_settings(wildcards)["import"].get("processes")
    return "" if processes is None else f"--processes {shlex.quote(str(processes))}"


# --- profile ------------------------------------------------------------------------------------


def profile_study_file(wildcards) -> str:
    return study_settings(wildcards)["profile"]


def base_p(study: str) -> list[int]:
    """The P the study file lists (its `p`, and the P its points fix)."""
    return sorted({run.p for run in profiled_study(study).runs()})


def job_launcher(study: str) -> str:
    """The launcher the study's jobs will use: `auto` (the default) is srun in a Slurm job,
    mpirun here (apmt.collect.launch.resolve_launcher decides the same in the job)."""
    from apmt.collect.launch import resolve_launcher

    launcher = profiled_study(study).launcher
    if launcher == "auto":
        return "srun" if submits_to_slurm() else resolve_launcher(launcher, {})
    return launcher


def mpi_resource(wildcards) -> str:
    """The launcher, which marks an MPI job for the Slurm executor: it asks sbatch for P
    tasks and runs the job's command as it is (apmt's launcher starts the ranks inside the
    allocation). Empty for P=1, which the executor takes as one task."""
    return job_launcher(wildcards.study) if int(wildcards.p) > 1 else ""


def submits_to_slurm() -> bool:
    """Whether this Snakemake submits its jobs with sbatch (--executor slurm, as the Slurm
    profile sets); known only once the workflow runs, when resources are evaluated."""
    plugin = workflow.executor_plugin
    return plugin is not None and plugin.name in ("slurm", "snakemake-executor-plugin-slurm")


def profile_resource(rule: str, name: str, defaults: bool = True) -> str | None:
    """A resource a profile gives this rule: its set-resources, else (with ``defaults``) the
    default-resources, as written; None where not given or computed by a function."""
    settings = workflow.resource_settings
    sources = [(settings.overwrite_resources or {}).get(rule) or {}]
    if defaults:
        sources.append(settings.default_resources or {})
    for given in sources:
        if name in given:
            value = getattr(given[name], "raw", given[name])
            return None if callable(value) else str(value)
    return None


def site_overcommits(rule: str) -> bool:
    """A profile's set-resources gives this rule sbatch --overcommit itself (its slurm_extra,
    as tests/slurm-site does)."""
    return "--overcommit" in (profile_resource(rule, "slurm_extra", defaults=False) or "")


def rule_partition(rule: str) -> str | None:
    """The partition a profile sends this rule's jobs to, or None: the cluster's default."""
    return (profile_resource(rule, "slurm_partition") or "").strip("'\" ") or None


def overcommits(wildcards, rule: str) -> bool:
    """Whether a profiling job needs sbatch --overcommit: under Slurm, P above the CPUs of
    its partition; refused with one line (before submission) unless the config's
    slurm_overcommit or the rule's slurm_extra allows it."""
    if not submits_to_slurm():
        return False
    from apmt.collect.slurm import needs_overcommit

    allowed = config["slurm_overcommit"] or site_overcommits(rule)
    try:
        return needs_overcommit(int(wildcards.p), f"{rule}: study {wildcards.study}", allowed,
                                named=rule_partition(rule))
    except ApmtError as error:
        raise WorkflowError(str(error)) from None


def profile_tasks(wildcards) -> int:
    """The profiling job's Slurm tasks: P (checked against the cluster first)."""
    overcommits(wildcards, "profile_p")
    return int(wildcards.p)


def frequency_tasks(wildcards) -> int:
    overcommits(wildcards, "profile_frequency")
    return int(wildcards.p)


def profile_slurm_extra(wildcards) -> str:
    """sbatch options of a profiling job: the node to itself, and --overcommit when P
    exceeds the CPUs and the config allows it (a profile's set-resources replaces this)."""
    return "--exclusive --overcommit" if overcommits(wildcards, "profile_p") else "--exclusive"


def frequency_slurm_extra(wildcards) -> str:
    """The rerun's --cpu-freq (the decision's), and --overcommit as for profile_p."""
    over = overcommits(wildcards, "profile_frequency")
    return cpu_freq_extra(wildcards) + (" --overcommit" if over else "")


def stored_option(wildcards) -> str:
    return "--stored-only" if config["stored_runs_only"] else ""


def profile_setup_files(wildcards) -> list[str]:
    """The files the study copies into every run (its `setup`, relative to the study file)."""
    return [os.path.relpath(path) for path in profiled_study(wildcards.study).setup]


def artifact_studies() -> list[str]:
    return [str(layout.study_dir(study)) for study in STUDIES]


# --- refinement -----------------------------------------------------------------------------


def refine_settings(study: str) -> dict:
    """The top-level refine keys, overridden by those the study gives itself."""
    return {**config["refine"], **GIVEN_REFINE.get(study, {})}


def refines(study: str) -> bool:
    """Refinement needs runs it can add (a profiled study), a holdout and a budget."""
    settings = refine_settings(study)
    return (study in PROFILED and bool(config["studies"][study]["holdout"])
            and settings["max_rounds"] > 0 and settings["max_runs"] > 0)


def decision(study: str, round_index: int) -> Decision:
    """A round's decision; asking for it makes Snakemake run that round's checkpoint first."""
    path = checkpoints.refine_round.get(study=study, round=str(round_index)).output.decision
    return Decision.from_dict(json.loads(Path(path).read_text()))


def round_p(study: str, round_index: int) -> list[int]:
    """The P measured in a round: the study's own, plus every P the rounds before added."""
    added = [p for r in range(round_index) for p in decision(study, r).added_p]
    return sorted({*base_p(study), *added})


def final_round(study: str) -> int:
    """The last round: the first whose decision runs nothing more (or refinement is off); a
    lower-frequency rerun is solved by the round after its decision."""
    round_index = 0
    while refines(study) and decision(study, round_index).action in ("more_p",
                                                                     "lower_frequency"):
        round_index += 1
    return round_index


def frequency_run(study: str, round_index: int) -> dict | None:
    """The rerun at a lower frequency that the round's decision asks for, if any."""
    if round_index < 0 or not refines(study):
        return None
    return decision(study, round_index).frequency_run


def frequency_mhz(ghz: float) -> int:
    """The frequency as run names and file names carry it (apmt.study)."""
    return round(float(ghz) * 1000)


def asked_frequency(wildcards) -> dict:
    """P and MHz of the rerun the round before this one asked for."""
    previous = int(wildcards.round) - 1
    run = frequency_run(wildcards.study, previous)
    if run is None:
        raise ValueError(f"{round_file(DECISION, wildcards.study, previous)}: field "
                         f"'action' is not lower_frequency: round {wildcards.round} has no "
                         "lower-frequency runs")
    return {"p": int(run["p"]), "mhz": frequency_mhz(run["frequency_ghz"])}


def frequency_runs(wildcards) -> dict:
    """The rerun's runs and the base runs of the same P, for the round's frequency table."""
    asked = asked_frequency(wildcards)
    return {"base": run_summary(asked["p"], study=wildcards.study),
            "lowered": run_summary(asked["p"], asked["mhz"], wildcards.study)}


def round_frequency_table(wildcards) -> list[str]:
    """The frequency table of a round that follows a lower_frequency decision (else none)."""
    if frequency_run(wildcards.study, int(wildcards.round) - 1) is None:
        return []
    return [round_file(FREQUENCY, wildcards.study, wildcards.round)]


def round_frequency_record(wildcards) -> list[str]:
    """The frequency table's sidecar (whether the frequency changed), which the round reads."""
    return [str(layout.sidecar(path)) for path in round_frequency_table(wildcards)]


def frequency_table_option(wildcards, input) -> str:
    return shlex.join(["--frequency-table", input.frequency[0]]) if input.frequency else ""


def frequency_ghz_of(mhz: str | int) -> str:
    """MHz (a wildcard) as the GHz that `apmt profile --frequency` takes: 2000 -> 2."""
    return f"{int(mhz) / 1000:g}"


def cpu_freq_extra(wildcards) -> str:
    """sbatch's option for the rerun's job: Slurm sets the job steps' frequency (kHz), the
    decision's cpu_freq_option."""
    from apmt.collect.cpufreq import cpu_freq_option

    return cpu_freq_option(int(wildcards.mhz) / 1000)


def accepted_frequency_solution(wildcards) -> list[str]:
    """The last round's frequency solution that the model takes (none if no round solved
    one, or the frequency did not change, or no kernel's solution was sane)."""
    if wildcards.study not in PROFILED or not refines(wildcards.study):
        return []
    accepted = [r for r in range(final_round(wildcards.study) + 1)
                if decision(wildcards.study, r).solution_accepted]
    return [round_file(FREQUENCY_SOLUTION, wildcards.study, accepted[-1])] if accepted else []


def frequency_solution_option(wildcards, input) -> str:
    return shlex.join(["--frequency-solution", input.frequency_solution[0]]) \
        if input.frequency_solution else ""


def round_runs(wildcards) -> list[str]:
    return [run_summary(p, study=wildcards.study)
            for p in round_p(wildcards.study, int(wildcards.round))]


def round_p_option(wildcards) -> str:
    return " ".join(str(p) for p in round_p(wildcards.study, int(wildcards.round)))


def round_comm(wildcards) -> list[str]:
    return [round_file(COMM, wildcards.study, wildcards.round)] \
        if wildcards.study in PROFILED else []


def final_round_table(name: str):
    """An input function: the last round's table of this name."""
    return lambda wildcards: round_file(name, wildcards.study, final_round(wildcards.study))


def decisions(wildcards) -> list[str]:
    """Every round's decision, the last one included (none when refinement is off)."""
    if not refines(wildcards.study):
        return []
    return [round_file(DECISION, wildcards.study, r)
            for r in range(final_round(wildcards.study) + 1)]


def previous_decisions(wildcards) -> list[str]:
    return [round_file(DECISION, wildcards.study, r) for r in range(int(wildcards.round))]


def refine_options(wildcards) -> str:
    settings = refine_settings(wildcards.study)
    options = ["--round", wildcards.round, "--max-rounds", str(settings["max_rounds"]),
               "--max-runs", str(settings["max_runs"]),
               "--base-p", *map(str, base_p(wildcards.study))]
    if settings["candidates"]:
        options += ["--candidates", *map(str, settings["candidates"])]
    if settings["max_p"]:
        options += ["--max-p", str(settings["max_p"])]
    if settings["lower_frequency_ghz"]:
        options += ["--lower-frequency", str(settings["lower_frequency_ghz"])]
    previous = previous_decisions(wildcards)
    if previous:
        options += ["--previous", *previous]
    return shlex.join(options)


# --- fit and evaluate ---------------------------------------------------------------------------


def comm_table(wildcards) -> list[str]:
    """The communication table: the MPI traces of a profiled study (imports have none)."""
    return [study_file(COMM, wildcards.study)] if wildcards.study in PROFILED else []


def comm_option(wildcards, input) -> str:
    return shlex.join(["--comm", input.comm[0]]) if input.comm else ""


def study_setting(study: str, key: str):
    """A setting of the model that a profiled study's file may give (per_rank_params, work,
    scaling, volume_ratios): the config's when it gives one, else the study file's."""
    given = config["studies"][study][key]
    if given or study not in PROFILED:
        return given
    return getattr(profiled_study(study), key)


def param_options(wildcards) -> str:
    """--param, --per-rank-param, --work, --scaling and --mode: how the model sees the parameters
    (no --param means every parameter column in the table)."""
    settings = study_settings(wildcards)
    options = []
    if settings["params"]:
        options += ["--param", *settings["params"]]
    per_rank = study_setting(wildcards.study, "per_rank_params")
    if per_rank:
        options += ["--per-rank-param", *per_rank]
    for key in ("work", "scaling"):
        value = study_setting(wildcards.study, key)
        if value:
            options += [f"--{key}", value]
    if settings["mode"] != "auto":
        options += ["--mode", settings["mode"]]
    return shlex.join(options)


def machine_option(wildcards) -> str:
    """The machine file of a profiled study (its latencies and clock give Eq. 2's CPI and
    memory terms where cycles were counted, and the contention check); imports have none."""
    if wildcards.study not in PROFILED:
        return ""
    machine = profiled_study(wildcards.study).machine
    return shlex.join(["--machine", machine]) if machine else ""


def machine_file(wildcards) -> list[str]:
    """The study's machine file, when it names a file rather than a shipped machine: the
    fit, the evaluation and the rounds read it."""
    machine = profiled_study(wildcards.study).machine if wildcards.study in PROFILED else None
    return [machine] if machine and Path(machine).is_file() else []


def kernel_options(wildcards) -> str:
    """--app-kernel, and --kernel for each kernel of interest."""
    settings = study_settings(wildcards)
    options = ["--app-kernel", settings["app_kernel"]] if settings["app_kernel"] else []
    for kernel in settings["kernels"]:
        options += ["--kernel", kernel]
    return shlex.join(options)


def holdout(wildcards) -> str:
    return study_settings(wildcards)["holdout"]


def metrics_option(wildcards) -> str:
    metrics = study_settings(wildcards)["evaluate_metrics"]
    return shlex.join(["--metrics", ",".join(metrics)]) if metrics else ""


def baselines(wildcards) -> str:
    return ",".join(study_settings(wildcards)["baselines"])


# --- predict ------------------------------------------------------------------------------------


def prediction_points(wildcards) -> str:
    """One `--at p=...,NAME=...` per point listed under the study's `predict`, and the
    study's communication volume ratios (`--volume-ratio`) when it gives them; asked for a
    study that lists none, one line saying so (apmt predict's own would only say that --at
    is required)."""
    points = study_settings(wildcards)["predict"]
    if not points:   # a target the default run leaves out (all_targets); asked for by name
        raise ValueError(f"{study_file(PREDICTIONS, wildcards.study)}: the study lists no points "
                         "under `predict` in the config (e.g. - {p: 64, n: 5000}): nothing to "
                         "predict")
    options = []
    for point in points:
        options += ["--at", ",".join(f"{name}={value}" for name, value in point.items())]
    ratios = study_setting(wildcards.study, "volume_ratios")
    if ratios:
        options += ["--volume-ratio", ",".join(f"{name}={value:g}"
                                               for name, value in ratios.items())]
    return shlex.join(options)


def predictions_table(wildcards) -> list[str]:
    """The study's predictions, when it lists points to predict: the diagnosis shows their P."""
    return [study_file(PREDICTIONS, wildcards.study)] if study_settings(wildcards)["predict"] \
        else []


def predictions_option(wildcards, input) -> str:
    return shlex.join(["--predictions", input.predictions[0]]) if input.predictions else ""
