"""The workflow for real, end to end: a small real MPI application (tests/mpi_programs/ring.c,
built here with mpicc) profiled at four P with perf and the PMPI library, a tolerance tight
enough that the validation asks for refinement, RELeARN's profiles imported from the
repository's data/ folder, and a study whose application fails. Checks the numbers in the
outputs, not only that files exist; then that a job killed midway is redone, alone, by the next
run, without touching the raw runs that had finished.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from apmt.model import load_model

REPOSITORY = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "workflow", "data", "profiles")
STEPS, HALO = 3000, 4000              # ring's steps, and doubles in each halo message
TOLERANCE = 1e-5   # tight: real runs err more (the ring erred by 7.6e-4 once, under 1e-3)
BASE_P = [1, 2, 3, 4]

pytestmark = pytest.mark.skipif(
    not (shutil.which("mpicc") and shutil.which("mpirun") and shutil.which("perf")
         and importlib.util.find_spec("snakemake")),
    reason="needs mpicc, mpirun, perf and snakemake (scripts/install.sh)")


def snakemake_command(*args: str) -> list[str]:
    beside = Path(sys.executable).parent / "snakemake"
    return [str(beside) if beside.is_file() else "snakemake", *args]


def workflow_copy(folder: Path, ring: Path, studies: dict[str, dict], **settings) -> Path:
    """The workflow with its own config: `studies` maps a name to a study file's fields
    (profiled) or to a config entry (imported, with `import`)."""
    for name in WORKFLOW_FILES:
        source = REPOSITORY / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, folder / name)
    (folder / "config" / "studies").mkdir(parents=True)
    entries = {}
    for name, fields in studies.items():
        if "import" in fields:
            entries[name] = fields
            continue
        study = {"name": name, "command": f"{ring} {fields.pop('args')} {HALO}", "p": BASE_P,
                 "repetitions": 2, "backend": "perf-clock", "machine": "generic-x86-2core-vm",
                 "timeout_s": 120, **fields}
        path = folder / "config" / "studies" / f"{name}.yaml"
        path.write_text(yaml.safe_dump(study))
        entries[name] = {"profile": str(path.relative_to(folder)), "holdout": "p=max",
                         "baselines": ["analytic", "amdahl"], "predict": [{"p": 16}]}
    config = {"studies": entries, "tolerance": TOLERANCE, **settings}
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ring")
    subprocess.run(["mpicc", "-O1", "-g", "-o", str(folder / "ring"),
                    str(REPOSITORY / "tests" / "mpi_programs" / "ring.c")], check=True)
    return folder / "ring"


@pytest.fixture(scope="module")
def batch(ring: Path, tmp_path_factory: pytest.TempPathFactory, measured_data: Path):
    """A batch of five studies in one run: ring (profiled, refined), relearn (imported from
    the repository's data/ folder), broken (its application fails at every P), and ring
    again as an application that accepts only powers of two and one that accepts only
    squares (refined within the same budget)."""
    relearn = {"import": {"format": "extrap-text",
                          "paths": [str(measured_data / "relearn" / "relearn_data.txt")]},
               "params": ["n"], "per_rank_params": ["n"], "app_kernel": "main()",
               "baselines": ["analytic", "amdahl"], "predict": [{"p": 1024, "n": 5000}]}
    folder = workflow_copy(
        tmp_path_factory.mktemp("batch"), ring,
        {"ring": {"args": f"20000 {STEPS}"}, "relearn": relearn,
         "broken": {"args": f"-1 {STEPS}", "p": [1, 2, 3, 4]},
         "pow2": {"args": f"20000 {STEPS // 3}", "p": [1, 2, 4], "accepts_p": "powers_of_two"},
         "squares": {"args": f"20000 {STEPS // 3}", "p": [1, 4, 9], "accepts_p": "squares"}},
        refine={"max_rounds": 1, "max_runs": 2, "max_p": 8})
    started = time.monotonic()
    done = subprocess.run(snakemake_command("--cores", "2"), cwd=folder, capture_output=True,
                          text=True, timeout=900)
    print(f"workflow run: {time.monotonic() - started:.0f} s")
    return folder, done


def test_a_failing_study_does_not_stop_the_others(batch) -> None:
    folder, done = batch
    output = done.stdout + done.stderr
    assert done.returncode != 0, output           # keep-going (profiles/default), then fail
    assert "Error in rule profile_p:" in output and "study=broken" in output
    assert "N must be positive" in (folder / "logs/broken/profile/p1.log").read_text() or \
        "failed" in (folder / "logs/broken/profile/p1.log").read_text()
    assert not (folder / "results/broken/model.json").exists()
    for study in ("ring", "relearn", "pow2", "squares"):
        for name in ("model.json", "evaluation.csv", "predictions.csv", "figures/ranking.png"):
            assert (folder / "results" / study / name).is_file(), (study, name, output)


def test_the_profiled_study_traces_exactly_what_the_application_sends(batch) -> None:
    folder, _ = batch
    comm = pd.read_csv(folder / "results/ring/comm.csv")
    per_rank = comm.groupby(["op", "p", "rep", "rank"])[["calls", "bytes"]].sum()
    allreduce, sendrecv = per_rank.loc["MPI_Allreduce"], per_rank.loc["MPI_Sendrecv"]
    assert (allreduce["calls"] == STEPS).all() and (allreduce["bytes"] == STEPS * 8).all()
    assert (sendrecv["calls"] == STEPS).all()
    assert (sendrecv["bytes"] == STEPS * HALO * 8).all()
    measured = pd.read_csv(folder / "results/ring/measurements.csv")
    relax = measured[(measured["kernel"] == "relax") & (measured["metric"] == "time")]
    per_p = relax.groupby("p")["value"].mean()
    # relax's work per rank is N/P: its time falls with P up to the 2 cores of this machine
    assert per_p[2] < 0.8 * per_p[1], per_p
    model = load_model(folder / "results/ring/model.json")
    assert model.classes["relax"] == "key"
    assert {op.op for op in model.communication} >= {"MPI_Allreduce", "MPI_Sendrecv"}


def test_a_tight_tolerance_triggers_refinement_within_its_budget(batch) -> None:
    folder, _ = batch
    refinement = json.loads((folder / "results/ring/refinement.json").read_text())
    first = refinement["rounds"][0]
    validation = json.loads((folder / "results/ring/rounds/r0/validation.json").read_text())
    assert first["validation"] == validation
    assert validation["error"] > TOLERANCE and validation["refine"]
    # communication: more P; computation: no frequency control here, so more P as well
    assert first["action"] == "more_p", first
    # the error in the decision is the one the round's evaluation table shows
    evaluation = pd.read_csv(folder / "results/ring/rounds/r0/evaluation.csv")
    app = evaluation[(evaluation["metric"] == "time") & (evaluation["method"] == "apmt")]
    assert np.isclose(app["ape"].max() / 100, validation["error"], rtol=1e-6)
    new_p = sorted(run["p"] for run in first["runs"])
    assert len(new_p) == 2 and all(p <= 8 and p not in BASE_P for p in new_p), new_p
    assert [run["role"] for run in first["runs"]] == ["refit", "validate"]
    assert max(new_p) == first["runs"][1]["p"]      # the largest validates: p=max holds it out
    measured_p = sorted(pd.read_csv(folder / "results/ring/measurements.csv")["p"].unique())
    assert measured_p == sorted(BASE_P + new_p)
    for p in new_p:
        assert (folder / f"results/ring/runs/p{p}.json").is_file()
    assert refinement["final_round"] == 1 and len(refinement["rounds"]) == 2
    last = refinement["rounds"][1]
    assert last["measured_p"] == measured_p
    # one round was the budget: the second may validate, but not ask for more runs
    assert last["action"] in ("none", "stop"), last
    assert last["action"] == "none" or last["exhausted"] == "rounds"


def test_refinement_runs_only_what_each_application_accepts(batch) -> None:
    """Under max_p 8, the powers-of-two study can add only P = 8, the one run beyond its
    measured P, so it validates (the next round holds it out); the squares study has no
    square left up to 8, and stops saying why."""
    folder, _ = batch
    pow2 = json.loads((folder / "results/pow2/refinement.json").read_text())["rounds"][0]
    assert pow2["action"] == "more_p", pow2
    assert [(run["p"], run["role"]) for run in pow2["runs"]] == [(8, "validate")]
    assert "holds it out" in pow2["runs"][0]["reason"]
    assert sorted(pd.read_csv(folder / "results/pow2/measurements.csv")["p"].unique()) == \
        [1, 2, 4, 8]
    squares = json.loads((folder / "results/squares/refinement.json").read_text())["rounds"][0]
    assert squares["action"] == "stop" and squares["exhausted"] == "candidates", squares
    assert "the application accepts squares" in squares["reason"]
    assert (folder / "results/squares/predictions.csv").is_file()


def test_predictions_carry_intervals_and_the_imported_study_is_accurate(batch) -> None:
    folder, _ = batch
    for study in ("ring", "relearn"):
        predictions = pd.read_csv(folder / "results" / study / "predictions.csv")
        app = predictions[(predictions["kernel"] == "<app>") & (predictions["metric"] == "time")]
        assert len(app) == 1
        value = app["predicted"]
        assert (app["lower"] <= value).all() and (value <= app["upper"]).all()
        assert np.isfinite(value).all() and (value > 0).all()
    evaluation = pd.read_csv(folder / "results/relearn/evaluation.csv")
    series = evaluation[evaluation["kernel"] != "<app>"]
    median = series.groupby("method")["ape"].median()
    # RELeARN at P=512 from 32..256: apmt's median error (12% in benchmarks/accuracy.py)
    assert median["apmt"] < 20, median
    assert median["apmt"] < median["amdahl"], median


def test_the_diagnosis_is_in_the_results_as_text_and_html(batch) -> None:
    folder, _ = batch
    text = (folder / "results/ring/diagnosis.txt").read_text()
    page = (folder / "results/ring/diagnosis.html").read_text()
    assert all(len(line) <= 100 for line in text.splitlines())
    for title in ("Validity of the measurements", "Strong scaling", "Kernel ranking across "
                  "scales", "Load imbalance"):
        assert f"== {title} " in text and title in page, title
    assert "relax" in text and "relax" in page
    # the runs beyond the 2 cores are named as oversubscribed, where the imbalance is judged
    assert "oversubscribed the cores" in text
    # RELeARN's neurons are per rank (per_rank_params, no scaling given): weak scaling
    imported = (folder / "results/relearn/diagnosis.txt").read_text()
    assert "== Weak scaling " in imported and "== Strong scaling " not in imported


def test_the_artifact_rebuilds_identically_from_the_stored_runs_alone(batch, ring: Path
                                                                     ) -> None:
    """Every table, model, decision and figure again from results/raw/ only, with the
    application gone: the manifest of checksums is the same."""
    folder, _ = batch
    config_file = folder / "config" / "config.yaml"
    config = yaml.safe_load(config_file.read_text())
    for name in ("broken", "pow2", "squares"):     # ring stands for the profiled ones
        del config["studies"][name]
    config_file.write_text(yaml.safe_dump(config))
    first = subprocess.run(snakemake_command("--cores", "2", "artifact"), cwd=folder,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    manifest = folder / "results/artifact/manifest.tsv"
    published = manifest.read_text()
    listed = [line.split("\t")[0] for line in published.splitlines()[1:]]
    for name in ("results/ring/model.json", "results/ring/figures/scaling.png",
                 "results/ring/rounds/r1/decision.json", "results/relearn/diagnosis.html"):
        assert name in listed, listed
    hidden = ring.with_name("ring.hidden")
    ring.rename(hidden)
    try:
        rebuild = subprocess.run(
            snakemake_command("--cores", "2", "--forceall", "--config", "stored_runs_only=True",
                              "--", "artifact"),
            cwd=folder, capture_output=True, text=True, timeout=900)
    finally:
        hidden.rename(ring)
    output = rebuild.stdout + rebuild.stderr
    assert rebuild.returncode == 0, output
    assert "rule profile_p:" in output and "--stored-only" in output
    assert manifest.read_text() == published


def finished_profile_jobs(log_lines: list[str]) -> set[str]:
    """The P whose profiling job Snakemake itself reported finished: a job whose run record is
    written but whose end Snakemake had not yet registered counts as interrupted, rightly."""
    p_of_job: dict[str, str] = {}
    job = ""
    finished = set()
    for line in log_lines:
        text = line.strip()
        if text.startswith("jobid:"):
            job = text.split(":", 1)[1].strip()
        elif text.startswith("wildcards: study=slow, p=") and job:
            p_of_job[job] = "p" + text.rsplit("p=", 1)[1].strip()
        elif text.startswith("Finished jobid:"):
            finished.add(text.split(":", 1)[1].split()[0])
    return {p_of_job[j] for j in finished if j in p_of_job}


def test_a_job_killed_midway_is_redone_alone(ring: Path, tmp_path: Path) -> None:
    """Interrupt Snakemake and its jobs (Ctrl-C: SIGINT to the process group) while a
    profiling job runs; the next run redoes that job only, and the raw runs that had finished
    stay as they were."""
    folder = workflow_copy(tmp_path, ring, {"slow": {"args": f"20000 {4 * STEPS}",
                                                     "p": [1, 2], "repetitions": 3}},
                           refine={"max_rounds": 0})
    target = "results/slow/rounds/r0/measurements.csv"
    # unbuffered: Snakemake's lines must arrive as it writes them, not when a pipe's buffer fills
    process = subprocess.Popen(snakemake_command("--cores", "2", target), cwd=folder,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log_lines: list[str] = []
    reader = threading.Thread(target=lambda: log_lines.extend(process.stdout), daemon=True)
    reader.start()
    raw = folder / "results/raw/slow"
    deadline = time.monotonic() + 300
    # wait until Snakemake has finished one P and the next job has finished a run of its own
    # and is running another
    finished: set[str] = set()
    while time.monotonic() < deadline and process.poll() is None:
        finished = finished_profile_jobs(list(log_lines))
        run_dirs = list(raw.glob("p*_r*")) if raw.is_dir() else []
        done = {d.name.split("_")[0] for d in run_dirs if (d / "done").exists()}
        running = {d.name.split("_")[0] for d in run_dirs if not (d / "done").exists()}
        if finished and (done & running) - finished:
            break
        time.sleep(0.05)
    assert process.poll() is None, "".join(log_lines)
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=120)
    reader.join(timeout=10)
    interrupted = "".join(log_lines)
    assert process.returncode != 0, interrupted
    kept = {d: (d / "run.json").stat().st_mtime_ns for d in raw.glob("p*_r*")
            if (d / "done").exists()}
    assert kept and finished

    rerun = subprocess.run(snakemake_command("--cores", "2", target), cwd=folder,
                           capture_output=True, text=True, timeout=600)
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output
    redone = set()
    for line in output.splitlines():
        if "wildcards: study=slow, p=" in line:
            redone.add("p" + line.rsplit("p=", 1)[1].strip())
    assert redone and not redone & finished, (redone, finished)
    for run_dir, mtime in kept.items():
        assert (run_dir / "run.json").stat().st_mtime_ns == mtime, run_dir
    table = pd.read_csv(folder / target)
    assert sorted(table["p"].unique()) == [1, 2]
    # in the redone job, the runs that had finished were skipped, the killed one moved aside
    logs = "".join((folder / f"logs/slow/profile/{p}.log").read_text() for p in redone)
    assert "finished before, skipped" in logs, logs
    assert list(raw.glob("p*_r*.failed-*")) or "moved to" in logs, logs
