"""Refinement's lower-frequency rerun (paper 000, 3.4): its runs in folders of their own, what
they record where the frequency cannot be set (this VM has no cpufreq), the solution of
Eq. 5 and when the model takes it, and the workflow's jobs after a lower_frequency decision."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_workflow_run import ring, snakemake_command, workflow_copy  # noqa: F401

from apmt.collect.cpufreq import frequency_control
from apmt.collect.frequency import slurm_mark
from apmt.machine import check_machine
from apmt.refine import judge_frequency
from apmt.study import Run, Study, frequency_suffix, with_frequency

needs_mpi = pytest.mark.skipif(not (shutil.which("mpicc") and shutil.which("mpirun")),
                               reason="needs mpicc and mpirun (scripts/install.sh)")
LATENCY = {"l1": 4, "l2": 12, "llc": 40, "memory": 240}
MACHINE = check_machine({"name": "test", "frequency_ghz": 3.0, "latency_cycles": LATENCY,
                         "latency_ns": {"memory": 80.0}}, "test")


def test_runs_at_a_lower_frequency_get_names_of_their_own() -> None:
    study = Study(name="s", source=Path("s.yaml"), command="app", p=(2, 4),
                  params={"n": (1000.0,)}, repetitions=2)
    lowered = with_frequency(study, 2.0)
    assert [run.name for run in study.runs()] == ["p2_n1000_r1", "p4_n1000_r1", "p2_n1000_r2",
                                                  "p4_n1000_r2"]
    assert [run.name for run in lowered.runs()] == [
        "p2_n1000_r1_f2000MHz", "p4_n1000_r1_f2000MHz", "p2_n1000_r2_f2000MHz",
        "p4_n1000_r2_f2000MHz"]
    assert Run(4, {}, 1).name == "p4_r1" and frequency_suffix(4 / 3) == "_f1333MHz"


def test_under_slurm_the_clock_must_drop_by_five_percent() -> None:
    assert slurm_mark({"cpu_mhz": 2000.0}, 2.0, 2600.0)["frequency_changed"] is True
    kept = slurm_mark({"cpu_mhz": 2550.0}, 2.0, 2600.0)
    assert kept["frequency_changed"] is False and "did not drop by 5%" in kept[
        "frequency_reason"]
    assert slurm_mark({"cpu_mhz": "unknown"}, 2.0, 2600.0)["frequency_changed"] is False


def counters(cpi_core: float, bf_mem: float) -> pd.DataFrame:
    """One kernel at P=2 and two clocks; its cycles follow Eq. 5 exactly."""
    rows = []
    counts = {"instructions": 1e9, "l1_hits": 3e8, "l2_hits": 2e7, "llc_hits": 5e6,
              "llc_misses": 2e6}
    for ghz in (3.0, 2.0):
        t_mem = (counts["l1_hits"] * 4 + counts["l2_hits"] * 12 + counts["llc_hits"] * 40
                 + counts["llc_misses"] * 80.0 * ghz)
        values = {**counts, "cycles": cpi_core * counts["instructions"] + bf_mem * t_mem}
        rows += [{"kernel": "solve", "metric": metric, "p": 2, "rep": 1, "rank": 0,
                  "value": value, "frequency_ghz": ghz} for metric, value in values.items()]
    return pd.DataFrame(rows)


def test_the_model_takes_a_sane_solution_only_if_the_frequency_changed() -> None:
    record = {"changed": True, "reasons": ["pinned"], "base_ghz": 3.0, "lowered_ghz": 2.0,
              "requested_ghz": 2.0, "machine_file": "test"}
    solution, outcome = judge_frequency(counters(0.7, 0.4), record, lambda name: MACHINE)
    assert outcome["accepted"] and solution.loc[0, "sane"]
    assert solution.loc[0, "cpi_core"] == pytest.approx(0.7)
    assert solution.loc[0, "bf_mem"] == pytest.approx(0.4)
    _, unchanged = judge_frequency(counters(0.7, 0.4), {**record, "changed": False,
                                                        "reasons": ["no cpufreq"]},
                                   lambda name: MACHINE)
    assert not unchanged["accepted"]
    assert unchanged["reason"].startswith("the machine did not change its frequency: the "
                                          "model keeps its first parameters")
    _, insane = judge_frequency(counters(0.7, 3.0), record, lambda name: MACHINE)
    assert not insane["accepted"] and "BF_mem" in insane["reason"]


@needs_mpi
def test_profile_at_a_frequency_this_machine_cannot_set(cli, ring: Path,  # noqa: F811
                                                        tmp_path: Path) -> None:
    """The runs are made and kept, marked frequency_changed false with the reason; the base
    runs are untouched; a rerun skips them; extract --frequency tables both sets."""
    if frequency_control()["can_set"]:
        pytest.skip("this machine can set its frequency: the runs would really change it")
    study = tmp_path / "ring.yaml"
    study.write_text(yaml.safe_dump({"name": "ring", "command": f"{ring} 2000 200 100",
                                     "p": [2], "backend": "none", "timeout_s": 60,
                                     "machine": "generic-x86-2core-vm"}))
    results = tmp_path / "results"
    assert cli("profile", study, "--results", results, "--no-extract").code == 0
    base = results / "raw" / "ring" / "p2_r1" / "run.json"
    before = base.read_bytes()
    summary = tmp_path / "p2_f1500.json"
    done = cli("profile", study, "--p", 2, "--frequency", 1.5, "--results", results,
               "--summary", summary)
    assert done.code == 0, done.err
    info = json.loads((results / "raw/ring/p2_r1_f1500MHz/run.json").read_text())
    assert info["frequency_ghz"] == 1.5 and info["frequency_changed"] is False
    assert "cannot pin the CPU frequency at 1.5 GHz" in info["frequency_reason"]
    assert isinstance(info["cpu_mhz"], float) and info["ok"]
    assert json.loads(summary.read_text())[0]["frequency_changed"] is False
    assert base.read_bytes() == before
    again = cli("profile", study, "--p", 2, "--frequency", 1.5, "--results", results)
    assert "p2_r1_f1500MHz: finished before, skipped" in again.out
    table = tmp_path / "frequency.csv"
    assert cli("extract", study, "--p", 2, "--frequency", 1.5, "--results", results,
               "--frequency-table", table).code == 0
    assert set(pd.read_csv(table)["frequency_ghz"]) == {info["cpu_mhz"] / 1000}
    record = json.loads((tmp_path / "frequency.csv.provenance.json").read_text())
    assert record["changed"] is False and record["machine_file"] == "generic-x86-2core-vm"


@needs_mpi
def test_after_a_lower_frequency_decision_the_workflow_reruns_and_solves(
        ring: Path, tmp_path: Path) -> None:  # noqa: F811
    """A real round 0, whose decision is then replaced by a lower_frequency one: the plan
    holds the rerun as an MPI job with sbatch --cpu-freq, its table, and round 1 solving it;
    run for real, round 1 says the frequency did not change (no cpufreq here) and the model
    keeps its first parameters."""
    folder = workflow_copy(tmp_path, ring, {"ring": {
        "args": "2000 200", "p": [1, 2, 3, 4], "repetitions": 1, "backend": "none"}},
        refine={"max_rounds": 2, "max_runs": 1, "max_p": 8})
    decision = folder / "results/ring/rounds/r0/decision.json"
    done = subprocess.run(snakemake_command("--cores", "2", str(decision.relative_to(folder))),
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    crafted = {**json.loads(decision.read_text()), "action": "lower_frequency",
               "runs": [{"p": 4, "role": "lower_frequency", "frequency_ghz": 1.5,
                         "slurm_option": "--cpu-freq=1500000"}], "frequency_ghz": 1.5}
    decision.write_text(json.dumps(crafted))
    plan = subprocess.run(snakemake_command("--dry-run", "--cores", "2"), cwd=folder,
                          capture_output=True, text=True, timeout=300)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    out = plan.stdout
    job = out[out.index("rule profile_frequency:"):].split("\n\n")[0]
    assert "output: results/ring/runs/p4_f1500.json" in job
    assert "tasks=4" in job and "mpi=mpirun" in job and "slurm_extra=--cpu-freq=1500000" in job
    assert "--p 4 --frequency 1.5" in job
    assert "rule extract_frequency:" in out and "results/ring/rounds/r1/frequency.csv" in out
    assert "--frequency-table results/ring/rounds/r1/frequency.csv" in out
    assert "results/ring/rounds/r1/decision.json" in out
    if frequency_control()["can_set"]:
        return
    targets = ["results/ring/refinement.json", "results/ring/model.json"]
    done = subprocess.run(snakemake_command("--cores", "2", *targets), cwd=folder,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    refinement = json.loads((folder / targets[0]).read_text())
    # round 1 validates the same runs: within the tolerance or not (the ring's times vary),
    # it runs nothing more, as the budget of one run is used
    assert refinement["rounds"][0]["action"] == "lower_frequency"
    assert refinement["rounds"][1]["action"] in ("none", "stop")
    assert len(refinement["rounds"]) == 2
    solved = refinement["rounds"][1]["frequency_solution"]
    assert solved["accepted"] is False and solved["frequency_changed"] is False
    assert "the machine did not change its frequency: the model keeps its first parameters" \
        in refinement["rounds"][1]["reason"]
    assert refinement["rounds"][1]["keeps_model"] is True
    inputs = json.loads((folder / targets[1]).read_text())["provenance"]["inputs"]
    assert not any("frequency_solution" in entry["path"] for entry in inputs), inputs


def scaling_counters(p_values: list[int]) -> pd.DataFrame:
    """One kernel whose cycles follow Eq. 5 (CPI_core 0.7, BF_mem 0.4) at 3 GHz while its
    memory traffic partly stays with P (halo-like), so cycles / instructions is no constant
    and only the solved parameters extrapolate; no stall counter."""
    rows = []
    for p in p_values:
        counts = {"instructions": 1e9 / p, "l1_hits": 3e8 / p, "l2_hits": 2e7 / p,
                  "llc_hits": 5e6, "llc_misses": 2e6}
        t_mem = (counts["l1_hits"] * 4 + counts["l2_hits"] * 12 + counts["llc_hits"] * 40
                 + counts["llc_misses"] * 240)
        cycles = 0.7 * counts["instructions"] + 0.4 * t_mem
        values = {**counts, "cycles": cycles, "time": cycles / 3e9}
        rows += [{"kernel": "solve", "metric": metric, "p": p, "rep": 1, "rank": rank,
                  "value": value} for rank in range(p) for metric, value in values.items()]
    return pd.DataFrame(rows)


def test_the_round_after_the_rerun_validates_with_the_accepted_solution(
        cli, tmp_path: Path) -> None:
    """CPI varies with P here (its memory traffic partly stays), so one mean CPI would miss
    the held-out P: the runs across P already split CPI_core and BF_mem (apmt.counters), and
    the rerun's solution, accepted, validates exactly too."""
    machine = tmp_path / "machine.yaml"
    machine.write_text(yaml.safe_dump({**MACHINE.to_dict(), "name": "test"}))
    table, frequency = tmp_path / "measurements.csv", tmp_path / "frequency.csv"
    scaling_counters([1, 2, 4, 8, 16]).to_csv(table, index=False)
    counters(0.7, 0.4).to_csv(frequency, index=False)
    sidecar = tmp_path / "frequency.csv.provenance.json"
    sidecar.write_text(json.dumps({"changed": True, "reasons": ["pinned"], "base_ghz": 3.0,
                                   "lowered_ghz": 2.0, "requested_ghz": 2.0,
                                   "machine_file": str(machine)}))

    def round_error(*frequency_options: object) -> tuple[float, dict]:
        decision = tmp_path / "decision.json"
        done = cli("refine", "round", table, "--holdout", "p=16", "--machine", machine,
                   "--tolerance", 0.05, "--round", 1, "--max-rounds", 2, "--max-runs", 2,
                   "--base-p", 1, 2, 4, 8, 16, "--frequency-solution",
                   tmp_path / "solution.csv", "--validation", tmp_path / "validation.json",
                   "--evaluation", tmp_path / "evaluation.csv", "-o", decision,
                   *frequency_options)
        assert done.code == 0, done.err
        decided = json.loads(decision.read_text())
        return decided["validation"]["error"], decided

    first, _ = round_error()
    refined, decision = round_error("--frequency-table", frequency)
    assert first < 0.01 and refined < 0.01, (first, refined)
    assert decision["keeps_model"] is False and decision["frequency_solution"]["accepted"]
    assert "validated with it" in decision["reason"]
