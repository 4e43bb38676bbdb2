"""`snakemake --profile slurm` against real Slurm daemons (scripts/slurm-local.sh), not a mock:
the default study runs through sbatch with the same results as a local run, a job cancelled
with scancel is reported and is all a rerun redoes, and a job over its time limit says so.

These take minutes (the executor plugin polls Slurm every few seconds, more slowly the longer
a job runs), so they run only with APMT_TEST_SLURM=1 (CI sets it; the cluster is started here
if it is not running, which needs root) or when scripts/slurm-local.sh already runs one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPOSITORY = Path(__file__).resolve().parents[1]
SCRIPT = REPOSITORY / "scripts" / "slurm-local.sh"
STATE = REPOSITORY / os.environ.get("APMT_SLURM_STATE", ".slurm-local")  # as the script has it
# what `snakemake --profile slurm` needs of the repository, copied so that results/ stays alone
WORKFLOW_FILES = ("Snakefile", "workflow", "config", "data", "profiles", "slurm",
                  "tests/slurm-site")
STAGES = {"import_profiles", "fit_model", "evaluate_model", "predict"}
# the RELeARN study: its stages take seconds (the default target also profiles LAMMPS, minutes)
TARGETS = ("results/relearn/evaluation.csv", "results/relearn/predictions.csv")
# every Snakemake run is guarded: the plugin ignores SIGTERM, hence the SIGKILL 30 s later.
# --foreground keeps Snakemake in this process group, which .ci/run's own timeout ends.
RUN_LIMIT_S = 600
# the default config through Slurm: LAMMPS at P = 1..4, 6, 8 with cachegrind passes, one job
# at a time (--exclusive) on a 2-core node; about 10 minutes on a quiet machine
DEFAULT_CONFIG_LIMIT_S = 1800
PROFILED_P = (1, 2, 3, 4)
# the Slurm profile plus a site profile, as a user combines them (tests/slurm-site: the local
# node has fewer CPUs than the largest P, so the profiling jobs overcommit)
SITE_PROFILE = ("--profile", "slurm", "--profile", "tests/slurm-site")


def local_slurm_runs() -> bool:
    try:
        return subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(
        os.environ.get("APMT_TEST_SLURM") != "1" and not local_slurm_runs(),
        reason="needs Slurm: APMT_TEST_SLURM=1, or bash scripts/slurm-local.sh start first"),
]


def slurm_env() -> dict[str, str]:
    """This process's environment pointed at the local cluster (what `start` prints)."""
    env = dict(os.environ)
    env["SLURM_CONF"] = str(STATE / "slurm.conf")
    env["PATH"] = f"{STATE / 'bin'}{os.pathsep}{env['PATH']}"
    return env


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """The local Slurm, started here unless it runs already (then it is left running)."""
    started = not local_slurm_runs()
    if started:
        done = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    yield slurm_env()
    if started:
        subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, timeout=120)


def copy_workflow(target: Path) -> Path:
    target.mkdir(parents=True)
    for name in WORKFLOW_FILES:
        source = REPOSITORY / name
        if source.is_dir():
            shutil.copytree(source, target / name)
        else:
            shutil.copy2(source, target / name)
    return target


def snakemake_command(*args: str, limit_s: int = RUN_LIMIT_S) -> list[str]:
    beside = Path(sys.executable).parent / "snakemake"
    command = [str(beside)] if beside.is_file() else [sys.executable, "-m", "snakemake"]
    return ["timeout", "--foreground", "-k", "30", str(limit_s), *command, *args]


def snakemake(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(snakemake_command(*args), cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=RUN_LIMIT_S + 60)


def slurm_job_ids(output: str) -> dict[str, str]:
    """Snakemake job id -> Slurm job id, from the plugin's "submitted with SLURM jobid" lines."""
    return dict(re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", output))


def rules_run(output: str) -> set[str]:
    """The rules of the jobs a run started (as Snakemake announces them), the target excepted."""
    return set(re.findall(r"^(?:local)?rule (\w+):$", output, flags=re.M)) - {"all"}


def run_id(log: Path) -> str:
    """The plugin's run id, which every job of one Snakemake run has as its Slurm job name."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"SLURM run ID: (\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise AssertionError(f"no SLURM run ID in the output:\n{log.read_text()}")


def start(workdir: Path, env: dict[str, str], *args: str) -> tuple[subprocess.Popen, Path]:
    """Snakemake in the background, its output to workdir/snakemake.out."""
    log = workdir / "snakemake.out"
    with log.open("w") as out:
        process = subprocess.Popen(snakemake_command(*args), cwd=workdir, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    return process, log


def kill(process: subprocess.Popen, log: Path, env: dict[str, str]) -> None:
    """Stop a background Snakemake that is still running (SIGKILL: it ignores SIGTERM), and
    `timeout` around it, and cancel the jobs it submitted."""
    if process.poll() is not None:
        return
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    for child in (children.read_text().split() if children.exists() else []):
        os.kill(int(child), signal.SIGKILL)
    process.kill()
    process.wait()
    found = re.search(r"SLURM run ID: (\S+)", log.read_text())
    if found:
        ids = subprocess.run(["squeue", "--noheader", "--name", found.group(1), "--format=%i"],
                             env=env, capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run(["scancel", *ids], env=env, capture_output=True)


def structure(results: Path) -> dict[str, object]:
    """Per file: its name, and for a table its header and number of rows."""
    shape: dict[str, object] = {}
    for path in sorted(results.rglob("*")):
        if path.is_file():
            key = str(path.relative_to(results))
            if path.suffix == ".csv":
                lines = path.read_text().splitlines()
                shape[key] = (lines[0], len(lines))
            else:
                shape[key] = "file"
    return shape


@pytest.fixture(scope="module", autouse=True)
def over_time_limit(cluster: dict[str, str],
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A job over its time limit. Slurm's limits count in minutes and it checks them every
    30 s, so this job ends 60-90 s after it starts and the workflow notices up to a minute
    later: started first, it runs while the other tests do."""
    workdir = tmp_path_factory.mktemp("time-limit")
    shutil.copytree(REPOSITORY / "slurm", workdir / "slurm")
    (workdir / "Snakefile").write_text(
        'rule slow_profiling_run:\n'
        '    output: "done.txt"\n'
        '    log: "slow.log"\n'
        '    resources: runtime=1\n'
        '    shell: "sleep 600 && touch {output} > {log} 2>&1"\n')
    process, log = start(workdir, cluster, "--profile", "slurm")
    yield {"process": process, "log": log, "workdir": workdir}
    kill(process, log, cluster)


@pytest.fixture(scope="module")
def slurm_run(cluster: dict[str, str], tmp_path_factory: pytest.TempPathFactory):
    """The RELeARN study through `snakemake --profile slurm`, as a user types it."""
    workdir = copy_workflow(tmp_path_factory.mktemp("through-slurm") / "apmt")
    started = time.monotonic()
    done = snakemake(workdir, cluster, "--profile", "slurm", *TARGETS)
    return workdir, done, time.monotonic() - started


def test_a_study_runs_through_slurm(slurm_run, cluster: dict[str, str]) -> None:
    workdir, done, seconds = slurm_run
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Using profiles slurm and workflow specific profile" in output
    jobs = slurm_job_ids(output)
    assert len(jobs) == len(STAGES), output
    # Slurm itself knows every one of them as a finished job (squeue shows them MinJobAge s)
    for slurm_id in jobs.values():
        state = subprocess.run(["squeue", "--noheader", "--states=all", "--jobs", slurm_id,
                                "--format=%T"], env=cluster, capture_output=True, text=True)
        assert state.stdout.strip() == "COMPLETED", (slurm_id, state.stdout, state.stderr)
    # the same job ids in Snakemake's own log of the run
    run_log = max((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    assert slurm_job_ids(run_log.read_text()) == jobs
    print(f"through Slurm in {seconds:.0f} s")


def test_slurm_gives_the_results_of_a_local_run(slurm_run, tmp_path: Path) -> None:
    workdir, done, _ = slurm_run
    assert done.returncode == 0
    local = copy_workflow(tmp_path / "local")
    ran = snakemake(local, dict(os.environ), "--cores", "2", *TARGETS)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    for folder in ("results/relearn", "logs/relearn"):
        assert structure(workdir / folder) == structure(local / folder), folder
        assert structure(local / folder)


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/mpi_programs/ring.c, the small MPI application of the workflow's own tests."""
    if not shutil.which("mpicc"):
        pytest.skip("needs mpicc")
    folder = tmp_path_factory.mktemp("ring")
    subprocess.run(["mpicc", "-O1", "-g", "-o", str(folder / "ring"),
                    str(REPOSITORY / "tests" / "mpi_programs" / "ring.c")], check=True)
    return folder / "ring"


def profiled_workflow(folder: Path, ring: Path, steps: int) -> Path:
    """The workflow with one profiled study of ring at P = 1..4 and no refinement."""
    workdir = copy_workflow(folder)
    # srun starts the ranks: the executor plugin runs an MPI job's command without the
    # allocation's SLURM_* variables (all but the job id), which mpirun needs and srun does not
    study = {"name": "ring", "command": f"{ring} 20000 {steps} 1000", "p": list(PROFILED_P),
             "repetitions": 1, "backend": "perf-clock", "timeout_s": 300, "launcher": "srun",
             "srun_mpi": "pmix"}
    (workdir / "config/studies/ring.yaml").write_text(yaml.safe_dump(study))
    (workdir / "config/config.yaml").write_text(yaml.safe_dump({
        "studies": {"ring": {"profile": "config/studies/ring.yaml", "holdout": None}},
        "refine": {"max_rounds": 0}}))
    return workdir


def test_profiling_jobs_get_p_tasks_from_slurm(cluster: dict[str, str], ring: Path,
                                               tmp_path: Path) -> None:
    """Each P is its own Slurm job of P tasks (sbatch --ntasks), and its runs say so."""
    workdir = profiled_workflow(tmp_path / "apmt", ring, 500)
    done = snakemake(workdir, cluster, *SITE_PROFILE, "results/ring/model.json")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    jobs = slurm_job_ids(output)
    assert rules_run(output) == {"profile_p", "extract_round", "study_tables", "fit_model"}
    assert len(jobs) == len(PROFILED_P) + 3, output
    for p in PROFILED_P:
        runs = json.loads((workdir / f"results/ring/runs/p{p}.json").read_text())
        assert [run["status"] for run in runs] == ["ok"], runs
        assert runs[0]["slurm_job_id"] in jobs.values()
        tasks = subprocess.run(["squeue", "--noheader", "--states=all", "--jobs",
                                runs[0]["slurm_job_id"], "--Format=NumTasks"], env=cluster,
                               capture_output=True, text=True).stdout.strip()
        assert tasks == str(p), (p, tasks)
    measured = (workdir / "results/ring/measurements.csv").read_text()
    assert "relax" in measured


def test_a_cancelled_profiling_job_is_reported_and_only_it_reruns(
        cluster: dict[str, str], ring: Path, tmp_path: Path) -> None:
    workdir = profiled_workflow(tmp_path / "apmt", ring, 1000)
    target = "results/ring/model.json"
    process, log = start(workdir, cluster, *SITE_PROFILE, target)
    try:
        name = run_id(log)
        cancelled = None
        deadline = time.monotonic() + 300
        while cancelled is None and time.monotonic() < deadline and process.poll() is None:
            jobs = subprocess.run(
                ["squeue", "--noheader", "--name", name, "--states=RUNNING", "--format=%i|%k"],
                env=cluster, capture_output=True, text=True).stdout.split()
            for job in jobs:
                slurm_id, comment = job.split("|", 1)
                if comment.startswith("rule_profile_p") and comment.endswith("_3"):
                    subprocess.run(["scancel", slurm_id], env=cluster, check=True)
                    cancelled = slurm_id
            time.sleep(0.1)
        assert cancelled, f"profile_p at P=3 was never seen running:\n{log.read_text()}"
        process.wait(timeout=RUN_LIMIT_S + 60)
    finally:
        kill(process, log, cluster)
    output = log.read_text()
    assert process.returncode != 0, output
    assert f"SLURM-job '{cancelled}' failed, SLURM status is: 'CANCELLED'" in output, output
    assert "Error in rule profile_p:" in output
    finished = {path.stem for path in (workdir / "results/ring/runs").glob("p*.json")}
    assert "p3" not in finished and finished, finished     # keep-going: the others finished

    rerun = snakemake(workdir, cluster, *SITE_PROFILE, target)
    rerun_output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, rerun_output
    assert rules_run(rerun_output) == {"profile_p", "extract_round", "study_tables",
                                       "fit_model"}, rerun_output
    redone = re.findall(r"wildcards: study=ring, p=(\d+)", rerun_output)
    assert redone == ["3"], rerun_output


def test_a_job_over_its_time_limit_says_so(over_time_limit: dict) -> None:
    process = over_time_limit["process"]
    process.wait(timeout=RUN_LIMIT_S + 60)
    output = over_time_limit["log"].read_text()
    assert process.returncode != 0, output
    assert "Error in rule slow_profiling_run:" in output
    found = re.search(r"SLURM-job '(\d+)' failed, SLURM status is: 'TIMEOUT'", output)
    assert found, output
    # the job's Slurm log, kept because it failed, has slurmstepd's word for it
    slurm_log = next((over_time_limit["workdir"] / ".snakemake" / "slurm_logs").rglob(
        f"{found.group(1)}.log"))
    assert f"JOB {found.group(1)} ON localhost CANCELLED AT" in slurm_log.read_text()
    assert "DUE TO TIME LIMIT" in slurm_log.read_text()


def test_the_default_config_runs_through_slurm(cluster: dict[str, str],
                                               tmp_path: Path) -> None:
    """`snakemake --profile slurm` and nothing else, on the default config: LAMMPS' launcher
    is auto, so its ranks start with srun inside each job; its P = 3, 4 (and refinement's
    6, 8) exceed the node's CPUs and overcommit as config.yaml allows; every study's
    outputs are made (scripts/check-main-job.py)."""
    workdir = copy_workflow(tmp_path / "apmt")
    started = time.monotonic()
    done = subprocess.run(snakemake_command("--profile", "slurm",
                                            limit_s=DEFAULT_CONFIG_LIMIT_S),
                          cwd=workdir, env=cluster, capture_output=True, text=True,
                          timeout=DEFAULT_CONFIG_LIMIT_S + 60)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    print(f"default config through Slurm in {time.monotonic() - started:.0f} s")
    check = subprocess.run([sys.executable, str(REPOSITORY / "scripts/check-main-job.py")],
                           cwd=workdir, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    runs = sorted((workdir / "results/raw/lammps-lj").glob("p*_r1/run.json"))
    assert {json.loads(path.read_text())["p"] for path in runs} >= set(PROFILED_P)
    cpus = os.cpu_count() or 1
    for path in runs:
        info = json.loads(path.read_text())
        assert info["command"]["launcher"][0] == "srun", info["command"]
        assert info["slurm_job_id"] in slurm_job_ids(output).values()
        assert info["oversubscribed"] == (info["p"] > cpus), info


def test_a_p_beyond_every_partition_is_refused_before_submission(
        cluster: dict[str, str], ring: Path, tmp_path: Path) -> None:
    """Without slurm_overcommit, a profiling job asking more tasks than the cluster has
    CPUs would wait forever: refused before anything is submitted, in one line naming P and
    the limit."""
    workdir = profiled_workflow(tmp_path / "apmt", ring, 100)
    cpus = int(subprocess.run(["sinfo", "--noheader", "--format=%C"], env=cluster,
                              capture_output=True, text=True).stdout.split("/")[3])
    if cpus >= max(PROFILED_P):
        pytest.skip(f"the local node has {cpus} CPUs: every P fits")
    done = snakemake(workdir, cluster, "--profile", "slurm", "results/ring/model.json")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    lines = [line for line in output.splitlines() if "asks Slurm for" in line]
    assert lines, output
    found = re.search(r"profile_p: study ring: P=(\d+) asks Slurm for (\d+) tasks", lines[0])
    assert found and found.group(1) == found.group(2) and int(found.group(1)) > cpus, lines[0]
    assert f"has {cpus} CPUs" in lines[0] and "slurm_overcommit" in lines[0], lines[0]
    assert not slurm_job_ids(output), output
