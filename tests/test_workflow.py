"""The Snakemake workflow: it passes the linter, plans every stage of the default study, and
checks its config (defaults filled in, unsafe study names refused). On a copy with a study
that fails: apmt's error reaches the terminal, and the report still builds, naming what is
missing."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
import yaml

REPOSITORY = Path(__file__).resolve().parents[1]
STAGES = ("fit_model", "evaluate_model", "predict")
# what a run of the workflow needs of the repository besides its config
WORKFLOW_FILES = ("Snakefile", "workflow", "data", "profiles")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("snakemake") is None,
    reason="snakemake is not installed (pip install -e '.[workflow]', or scripts/install.sh)")


def snakemake(*args: str, cwd: Path = REPOSITORY) -> subprocess.CompletedProcess:
    """Run the Snakemake of this Python's environment in the repository (or in `cwd`)."""
    beside = Path(sys.executable).parent / "snakemake"
    command = [str(beside)] if beside.is_file() else [sys.executable, "-m", "snakemake"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def workflow_copy(folder: Path, studies: dict[str, dict]) -> Path:
    """The workflow in `folder`, with a config of these studies only."""
    for name in WORKFLOW_FILES:
        source = REPOSITORY / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, folder / name)
    (folder / "config").mkdir()
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": studies}))
    return folder


def dry_run(*args: str) -> subprocess.CompletedProcess:
    """Plan every job, whatever results/ already holds."""
    return snakemake("--dry-run", "--forceall", "--cores", "1", *args)


def planned(output: str, rule: str) -> list[str]:
    """The outputs of each planned job of one rule, as the dry run prints them."""
    jobs = re.findall(rf"(?:rule|checkpoint) {rule}:\n(.*?)\n\n", output + "\n\n", flags=re.S)
    outputs = [m for job in jobs for m in re.findall(r"output: (.*)", job)]
    return [path for line in outputs for path in line.split(", ")]


def test_lint_is_clean() -> None:
    done = snakemake("--lint")
    assert done.returncode == 0, done.stdout + done.stderr


def test_dry_run_plans_every_stage_of_the_default_studies() -> None:
    """LAMMPS is profiled (its MPI traces feed the model), RELeARN's profiles imported."""
    done = dry_run()
    assert done.returncode == 0, done.stderr
    for rule in STAGES:
        outputs = planned(done.stdout, rule)
        for study in ("relearn", "lammps-lj"):
            assert any(path.startswith(f"results/{study}/") for path in outputs), outputs
    # one job per P, each an MPI job of P tasks; then round 0's tables and its validation
    assert sorted(planned(done.stdout, "profile_p")) == [
        f"results/lammps-lj/runs/p{p}.json" for p in (1, 2, 3, 4)]
    assert re.search(r"rule profile_p:\n(?:.*\n)*?.*resources: .*tasks=4, mpi=mpirun",
                     done.stdout), done.stdout
    assert planned(done.stdout, "extract_round")[0] == \
        "results/lammps-lj/rounds/r0/measurements.csv"
    assert "results/lammps-lj/rounds/r0/decision.json" in planned(done.stdout, "refine_round")
    assert planned(done.stdout, "import_profiles")[0] == "results/relearn/measurements.csv"
    assert ("apmt profile config/studies/lammps-lj.yaml --p 4 --no-extract --summary "
            "results/lammps-lj/runs/p4.json --results results") in done.stdout
    assert "--comm results/lammps-lj/rounds/r0/comm.csv" in done.stdout
    # the study file's machine reaches the model (Eq. 2's CPI and memory terms, contention)
    assert "--machine generic-x86-2core-vm" in done.stdout
    assert "--at p=1024,n=5000 --at p=2048,n=9000" in done.stdout
    assert "--app-kernel 'main()'" in done.stdout


def test_a_profiled_study_must_carry_its_key_as_name(tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"studies": {"other-name": {
        "profile": "config/studies/lammps-lj.yaml"}}}))
    done = dry_run("--configfile", str(extra))
    assert done.returncode != 0
    assert "is study 'lammps-lj'; its key here must be the same" in done.stdout + done.stderr


def test_a_study_with_only_its_profiles_gets_the_defaults(tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"studies": {"minimal": {"import": {
        "paths": ["data/relearn/relearn_data.txt"]}}}}))
    done = dry_run("--configfile", str(extra))
    assert done.returncode == 0, done.stderr
    assert planned(done.stdout, "evaluate_model").count("results/minimal/evaluation.csv") == 1
    assert not any("minimal" in out for out in planned(done.stdout, "predict"))
    assert "--holdout p=max" in done.stdout and "--baselines analytic,amdahl" in done.stdout
    # its predictions asked for by name: one line saying why there are none
    asked = dry_run("results/minimal/predictions.csv", "--configfile", str(extra))
    assert asked.returncode != 0
    assert "results/minimal/predictions.csv: the study lists no points under `predict` in the " \
        "config" in asked.stdout + asked.stderr


def test_a_studys_kernels_of_interest_reach_every_model(tmp_path: Path) -> None:
    """The fit, the evaluation's validation and refinement build the same model."""
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"studies": {"minimal": {
        "import": {"paths": ["data/relearn/relearn_data.txt"]},
        "kernels": ["update_electrical_activity", "a b"]}}}))
    done = dry_run("--configfile", str(extra))
    assert done.returncode == 0, done.stderr
    options = "--kernel update_electrical_activity --kernel 'a b'"
    assert done.stdout.count(options) >= 2, done.stdout


def test_a_studys_work_scaling_and_volume_ratios_reach_the_model(tmp_path: Path) -> None:
    """A profiled study's file and an imported study's config give them: the fit, the
    evaluation and the rounds get the work expression, the scaling and a mode other than
    auto, predict the ratios."""
    study = tmp_path / "sized.yaml"
    study.write_text(yaml.safe_dump({
        "name": "sized", "command": "lmp -var x {size}", "p": [1, 2, 4, 8],
        "params": {"size": [0.6, 0.8]}, "work": "size**3/p", "scaling": "weak",
        "volume_ratios": {"p2p": 1.5625, "all": 2}}))
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"studies": {
        "sized": {"profile": str(study), "predict": [{"p": 8, "size": 1}]},
        "imported": {"import": {"paths": ["data/relearn/relearn_data.txt"]}, "params": ["n"],
                     "work": "n * log2(n)", "scaling": "weak",
                     "volume_ratios": {"MPI_Allreduce": 2}, "mode": "time",
                     "predict": [{"p": 1024, "n": 5000}]},
    }}))
    done = dry_run("--configfile", str(extra))
    assert done.returncode == 0, done.stderr
    fit, evaluate, rounds = (f"apmt {command} results/sized/" for command in
                             ("fit", "evaluate", "refine round"))
    for command in (fit, evaluate, rounds):
        lines = [line for line in done.stdout.splitlines() if command in line]
        assert lines and all("--work 'size ** 3 / p' --scaling weak" in line for line in lines), \
            (command, lines)
    assert "--at p=8,size=1 --volume-ratio all=2,p2p=1.5625 -o results/sized/" in done.stdout
    assert "--param n --work 'n * log2(n)' --scaling weak --mode time" in done.stdout
    assert all("--mode" not in line for line in done.stdout.splitlines() if fit in line)
    assert "--at n=5000,p=1024 --volume-ratio MPI_Allreduce=2 -o results/imported/" in \
        done.stdout


@pytest.mark.parametrize("name", ["../outside", "/abs", ".hidden", "a b"])
def test_a_study_name_that_would_leave_results_is_refused(tmp_path: Path, name: str) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"studies": {name: {"import": {
        "paths": ["data/relearn/relearn_data.txt"]}}}}))
    done = dry_run("--configfile", str(extra))
    assert done.returncode != 0
    assert "does not match" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_study_says_which_parameter_counts_the_processes(tmp_path: Path) -> None:
    """An Extra-P text file may call its process count anything (Extra-P's own test files
    say x): the study's ``processes`` names it for the import; a count of 0 is refused."""
    fixture = REPOSITORY / "tests" / "fixtures" / "extrap_text" / "one_parameter_1.txt"
    folder = workflow_copy(tmp_path, {"sizes": {"import": {
        "paths": ["data/one_parameter_1.txt"], "processes": "x"}}})
    shutil.copy(fixture, folder / "data")
    done = snakemake("--cores", "1", "results/sizes/measurements.csv", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    table = pd.read_csv(folder / "results" / "sizes" / "measurements.csv")
    assert sorted(table["p"].unique()) == [20, 30, 40, 50, 60] and "x" not in table.columns
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": {"sizes": {
        "import": {"paths": ["data/one_parameter_1.txt"], "processes": 0}}}}))
    refused = snakemake("--dry-run", "--cores", "1", cwd=folder)
    assert refused.returncode != 0 and "processes" in refused.stdout + refused.stderr


def test_every_config_key_has_a_type_a_description_and_a_default() -> None:
    schema = yaml.safe_load((REPOSITORY / "workflow/schemas/config.schema.yaml").read_text())

    def check(node: dict, where: str) -> None:
        required = set(node.get("required", ()))
        for alternative in node.get("oneOf", ()):     # one of several keys is required
            required |= set(alternative.get("required", ()))
        for key, sub in node.get("properties", {}).items():
            if "$ref" in sub:
                continue
            assert "type" in sub and "description" in sub, f"{where}.{key}"
            assert "default" in sub or key in required, f"{where}.{key} has no default"
            check(sub, f"{where}.{key}")

    check(schema, "config")
    for name, definition in schema["$defs"].items():
        check(definition, name)


def test_every_study_field_has_a_type_a_description_and_a_valid_default() -> None:
    """The study file's schema is the one apmt loads (apmt/data links to it)."""
    path = REPOSITORY / "workflow/schemas/study.schema.yaml"
    schema = yaml.safe_load(path.read_text())
    assert (REPOSITORY / "apmt/data/study.schema.yaml").resolve() == path.resolve()
    for key, sub in schema["properties"].items():
        sub = schema["$defs"][sub["$ref"].rsplit("/", 1)[-1]] | sub if "$ref" in sub else sub
        assert "type" in sub and "description" in sub, key
        if "default" in sub:
            jsonschema.validate(sub["default"], {**sub, "$defs": schema["$defs"]})


def test_a_bad_study_file_stops_the_workflow_in_one_line(tmp_path: Path) -> None:
    """common.smk loads study files with apmt's loader: apmt's line, not a traceback."""
    study = tmp_path / "bad.yaml"
    study.write_text("command: app\np: [1, 2]\nrepetitions: 0\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"studies": {"bad": {"profile": str(study),
                                                          "holdout": "p=max"}}}))
    done = dry_run("--configfile", str(extra))
    assert done.returncode != 0
    assert f"{study}: field 'repetitions': 0 is not a whole number from 1 to 1000" in \
        done.stdout + done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_the_conda_environment_lists_the_package_dependencies() -> None:
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    environment = (REPOSITORY / "workflow/envs/apmt.yaml").read_text()
    listed = {re.split(r"[<>=!~ ]", line.strip(" -"))[0].removesuffix("-base")
              for line in environment.splitlines() if line.strip().startswith("- ")}
    for requirement in project["dependencies"]:
        name = re.split(r"[<>=!~\[ ;]", requirement)[0]
        assert name in listed, f"{name} is missing from workflow/envs/apmt.yaml"


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory: pytest.TempPathFactory):
    """Two imported studies (seconds, no profiling): RELeARN's, and one whose application
    kernel is not in its profiles, so that `apmt fit` fails; keep-going (profiles/default)
    finishes the first."""
    relearn = {"format": "extrap-text", "paths": ["data/relearn/relearn_data.txt"]}
    folder = workflow_copy(tmp_path_factory.mktemp("failing"), {
        "relearn": {"import": relearn, "params": ["n"], "per_rank_params": ["n"],
                    "app_kernel": "main()", "baselines": ["analytic", "amdahl"],
                    "predict": [{"p": 1024, "n": 5000}]},
        "broken": {"import": relearn, "app_kernel": "no_such_kernel()", "holdout": None}})
    return folder, snakemake("--cores", "2", cwd=folder)


def test_a_failing_job_prints_apmts_error(failed_run) -> None:
    """show-failed-logs (profiles/default): the job's log follows Snakemake's error."""
    folder, done = failed_run
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Error in rule fit_model:" in output and "Logfile logs/broken/fit.log:" in output
    assert re.search(r"^apmt: error: .*'no_such_kernel\(\)' not found", output, re.M), output
    assert (folder / "results/relearn/predictions.csv").is_file(), output


def test_the_report_builds_and_names_what_a_failed_study_misses(failed_run) -> None:
    folder, _ = failed_run
    done = snakemake("--report", "results/report.html", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (folder / "results/report.html").read_text()
    # the good study's results are in, the failed one's missing outputs named with its logs
    assert "Adding predictions.csv" in done.stdout + done.stderr
    missing = re.search(r"Missing from this report</h1>(.*?)</ul>", page, re.S)
    assert missing, "the report's front page lists no missing outputs"
    for name in ("model.json", "diagnosis.html"):
        assert f"results/broken/{name}" in missing[1]
        assert f"results/relearn/{name}" not in missing[1]
    assert "logs/broken/" in missing[1]
