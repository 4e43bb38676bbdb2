"""The scaling diagnosis (paper 001) on real RELeARN profiles (32 to 512 ranks), on a real MPI
program with a planted load imbalance profiled here with `apmt profile` (perf cpu-clock and
the PMPI library), and on small tables with a known answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_collect import HAVE_MPI, real_backend, study_file
from test_model import MACHINE, counter_table

from apmt.diagnose import imbalance
from apmt.diagnose.scaling import (
    CPI_DEVIATION_LIMIT,
    RISE_CAUSES,
    components,
    scale_values,
    sections,
)
from apmt.diagnose.section import SEVERITIES, Section
from apmt.diagnose.study import read_study
from apmt.errors import ApmtError
from apmt.ingest import import_profiles
from apmt.kernels import NONSCALABLE_SLOPE
from apmt.machine import load_machine
from apmt.model import PART_LABELS, PARTS, build_model, load_model, save_model
from apmt.predict import assemble, predict
from apmt.series import scale_points
from apmt.tables import APP_KERNEL, check_table, read_table, write_table

PROGRAM = Path(__file__).resolve().parent / "mpi_programs" / "imbalance.c"
PLANTED = "update_cells"
CELLS = 80_000_000          # about 0.3 s of update_cells at P=1 here
CONTENTION = {"solve": 1e-5, "exchange": 1e-2}   # LLC misses per memory access


def section(result: list[Section], title: str) -> Section:
    [found] = [s for s in result if s.title.startswith(title)]
    for finding in found.findings:
        assert finding.severity in SEVERITIES and finding.text
    return found


def study_folder(folder: Path, model: dict, measurements: pd.DataFrame) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    save_model(model, folder / "model.json")
    write_table(measurements, folder / "measurements.csv")
    return folder


def check_components(model: dict, values: dict[str, np.ndarray]) -> None:
    """The split by kernel and operation adds up to assemble's parts at every P."""
    split = components(model, values)
    assembled = assemble(model, values)
    for part in PARTS:
        rows = split[split["part"] == PART_LABELS[part]] if part != "comm_time" else \
            split[~split["part"].isin([PART_LABELS[p] for p in PARTS if p != "comm_time"])]
        summed = rows.groupby("p")["time"].sum().reindex(values["p"], fill_value=0.0)
        np.testing.assert_allclose(summed.to_numpy(), assembled[part][0], rtol=1e-9,
                                   atol=1e-12, err_msg=part)


# --------------------------------------------------------------------- real data: RELeARN

@pytest.fixture(scope="module")
def relearn(measured_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """RELeARN's profiles (no per-rank values) and their model, as a results folder."""
    path = measured_data / "relearn" / "relearn_data.txt"
    measurements, _ = import_profiles("extrap-text", [path])
    model = build_model(measurements, ["n"], source=str(path), app_kernel="main()",
                        per_rank_params=frozenset({"n"}))
    folder = study_folder(tmp_path_factory.mktemp("relearn"), model, measurements)
    return {"folder": folder, "model": model, "sections": sections(folder)}


def test_relearn_weak_scaling(relearn: dict) -> None:
    """n is per rank: the work per rank stays as P grows, which is weak scaling, and the
    diagnosis calls it so. main() grows from 835 s at P=32 to 2,537 s at P=512 (n=9000)."""
    result = relearn["sections"]
    assert [s.title for s in result] == [
        "Weak scaling (n=9000 per rank)", "Kernel ranking across scales",
        "Non-scalable functions", "Load imbalance", "Memory contention and CPI"]
    weak = section(result, "Weak scaling")
    table = weak.table
    assert table["p"].tolist() == scale_points([32, 64, 128, 256, 512])
    assert table["measured"].notna().tolist() == (table["p"] <= 512).tolist()
    assert (table["beyond_data"] == (table["p"] > 512)).all()
    [growth] = [f for f in weak.findings if f.text.startswith("time per rank grows")]
    assert growth.severity == "problem" and "weak-scaling efficiency" in growth.text
    causes = [f for f in weak.findings if f.text.startswith("the rise")]
    assert 1 <= len(causes) <= RISE_CAUSES and all(f.kernel for f in causes)


def test_relearn_nested_regions_are_not_counted_twice(relearn: dict) -> None:
    """RELeARN's regions are inclusive: the simulation loop holds the connectivity update,
    which holds finding targets and creating synapses. Summed they were 4x the run time;
    the model sums the top-level regions only, and no part or share exceeds the whole."""
    model = relearn["model"]
    nested = {k["kernel"] for k in model.kernels if k["class"] == "nested"}
    assert nested == {"Connectivity update", "Find target neurons (w/ RMA)",
                      "Create synapses (w/ Alltoall)"}
    assert any(note.startswith("nested regions: 3 regions") for note in model.notes)
    weak = section(relearn["sections"], "Weak scaling")
    table = weak.table
    assert (table["computation"] <= table["time"] * 1.03).all(), table
    assert "nested regions, inside the parts and not counted again" in weak.note
    ranking = section(relearn["sections"], "Kernel ranking").table
    assert not nested & set(ranking["kernel"])
    assert (ranking["share_last"] <= 1.0).all() and not ranking["flagged"].any()
    assert ranking["kernel"].iloc[0] == "Simulation loop"


def test_relearn_nonscalable_functions(relearn: dict) -> None:
    model = relearn["model"]
    nonscalable = section(relearn["sections"], "Non-scalable")
    table = nonscalable.table.set_index("kernel")
    expected = {k["kernel"]: k["slope"] for k in model.kernels
                if k["class"] == "non-scalable" or (k["class"] == "key" and k["slope"] >
                                                    NONSCALABLE_SLOPE["weak"])}
    assert set(table.index) == set(expected)
    for kernel, slope in expected.items():
        assert table.loc[kernel, "slope"] == pytest.approx(slope)
    # measured: Initialization takes 0.31 s at P=32 and 1.71 s at P=512 (n=9000)
    assert table.loc["Initialization", "measured_first"] == pytest.approx(0.313, abs=0.01)
    assert table.loc["Initialization", "measured_last"] == pytest.approx(1.71, abs=0.05)
    problems = {f.kernel for f in nonscalable.findings if f.severity == "problem"}
    assert "Simulation loop" in problems and "Initialization" not in problems


def test_relearn_without_ranks_or_counters(relearn: dict) -> None:
    result = relearn["sections"]
    assert "no column 'rank'" in section(result, "Load imbalance").note
    checks = section(result, "Memory contention")
    assert checks.findings == [] and "not measured" in checks.note


def test_predicted_scales_join_the_default_ones(relearn: dict, tmp_path: Path) -> None:
    model = relearn["model"]
    measurements = read_table(relearn["folder"] / "measurements.csv")
    folder = study_folder(tmp_path / "study", model, measurements)
    write_table(predict(model, pd.DataFrame({"p": [1000, 8192], "n": [9000.0, 9000.0]})),
                folder / "predictions.csv")
    measured = [32, 64, 128, 256, 512]
    unasked = section(sections(folder), "Weak scaling")    # a file is read only when named
    assert unasked.table["p"].tolist() == scale_points(measured)
    data = read_study(folder, predictions=folder / "predictions.csv")
    weak = section(sections(folder, data=data), "Weak scaling")
    assert weak.table["p"].tolist() == sorted([*scale_points(measured), 1000, 8192])
    (folder / "predictions.csv").write_text("kernel,metric,p,n,predicted\nx,time,many,1,2\n")
    with pytest.raises(ApmtError, match=r"predictions.csv: row 2, column 'p': 'many'"):
        read_study(folder, predictions=folder / "predictions.csv")


def test_chosen_scales_and_bad_ones(relearn: dict) -> None:
    weak = section(sections(relearn["folder"], [1000, 64]), "Weak scaling")
    assert weak.table["p"].tolist() == [64, 1000]
    for bad, shown in (([0, 64], "0"), ([64, 2.5], "2.5"), (["many"], "'many'")):
        with pytest.raises(ApmtError) as caught:
            sections(relearn["folder"], bad)
        message = str(caught.value)
        assert "\n" not in message and f"p_values: {shown} is not" in message, message


# ------------------------------------------------------------- tables with a known answer

COSTS = {"solve": lambda p: 10 / p, "assemble": lambda p: 6 / p, "halo": lambda p: 4 / p,
         "shrink": lambda p: 1.5 / p, "grow": lambda p: 0.02 * p}


@pytest.fixture(scope="module")
def synthetic() -> pd.DataFrame:
    """Five kernels at P = 1..16, 2 repetitions with 1% noise: "grow" (0.02 P) is fifth at
    P=1 and first at scale; "shrink" (1.5 / P) is fourth at P=1 and falls."""
    rows = [{"kernel": kernel, "metric": "time", "p": p, "size": 100.0, "rep": rep,
             "value": cost(p) * (1 + 0.01 * np.sin(3 * p + rep + index))}
            for index, (kernel, cost) in enumerate(COSTS.items())
            for p in (1, 2, 4, 8, 16) for rep in (1, 2)]
    return check_table(pd.DataFrame(rows), "synthetic")


def test_ranking_flags_the_kernel_that_grows(synthetic: pd.DataFrame, tmp_path: Path) -> None:
    model = build_model(synthetic, ["size"], source="synthetic")
    result = sections(study_folder(tmp_path, model, synthetic))
    ranking = section(result, "Kernel ranking").table.set_index("kernel")
    assert ranking["flagged"].to_dict() == {"grow": True, "solve": False, "shrink": False,
                                            "halo": False, "assemble": False}
    assert ranking.loc["grow", "rank_first"] == 5 and ranking.loc["grow", "rank_last"] == 1
    assert ranking.loc["shrink", "rank_first"] == 4
    strong = section(result, "Strong scaling")
    # 20.5 / P + 0.02 P is least near P = 32 and rises after it, because of grow
    [stop] = [f for f in strong.findings if "stops falling" in f.text]
    assert stop.p == 32 and stop.severity == "warning" and "P=32*" in stop.text
    first_cause = next(f for f in strong.findings if f.text.startswith("the rise"))
    assert first_cause.kernel == "grow"
    measured = strong.table.set_index("p")["measured"]
    assert measured[4] == pytest.approx(sum(cost(4) for cost in COSTS.values()), rel=0.02)
    nonscalable = section(result, "Non-scalable").table
    assert nonscalable["kernel"].tolist() == ["grow"]
    assert nonscalable["slope"].iloc[0] == pytest.approx(1.0, abs=0.02)
    values, _ = scale_values(model, synthetic, [1, 16, 128])
    check_components(model, values)


def test_weak_scaling_keeps_the_work_per_rank(synthetic: pd.DataFrame, tmp_path: Path) -> None:
    """size is a total: the fits are in size/P, so at constant size/P every P costs the same;
    but at the measured run (P = 16, size 100), where series whose latest trend forecasts
    them beyond it take it over from their functions (apmt.fit.SeriesFit._trend_weight),
    the time is the trends', within the runs' 1% noise."""
    model = build_model(synthetic, ["size"], source="synthetic", scaling="weak")
    weak = section(sections(study_folder(tmp_path, model, synthetic)), "Weak scaling")
    assert weak.title == "Weak scaling (size/P=6.25 as at P=16)"
    time = weak.table.set_index("p")["time"]
    elsewhere = time.drop(16)
    assert np.ptp(elsewhere) < 1e-9 * elsewhere.mean()
    assert time[16] == pytest.approx(elsewhere.mean(), rel=0.01)
    assert any(f.text.startswith("time per rank stays") for f in weak.findings)


def test_one_p_reports_imbalance_but_no_scaling(tmp_path: Path) -> None:
    """One run at P=4 where rank 3 takes twice as long in 'work', and no model."""
    rows = [{"kernel": kernel, "metric": "time", "p": 4, "rank": rank, "value": value}
            for rank in range(4)
            for kernel, value in (("work", 2.0 if rank == 3 else 1.0), ("setup", 0.5),
                                  (APP_KERNEL, 2.6))]
    write_table(pd.DataFrame(rows), tmp_path / "measurements.csv")
    result = sections(tmp_path)
    assert [s.title for s in result] == ["Scaling", "Load imbalance"]
    assert "3 or more process counts" in result[0].note and "P = 4" in result[0].note
    load = result[1]
    [warning] = [f for f in load.findings if f.severity == "warning"]
    assert (warning.kernel, warning.rank, warning.p) == ("work", 3, 4)
    assert "1.60x" in warning.text          # 2 s against a mean of 1.25 s
    assert "no communication table" in load.note


def test_three_p_without_a_model_still_reports_imbalance(synthetic: pd.DataFrame,
                                                         tmp_path: Path) -> None:
    write_table(synthetic, tmp_path / "measurements.csv")
    result = sections(tmp_path)
    assert [s.title for s in result] == ["Scaling", "Load imbalance"]
    assert "model.json" in result[0].note and "apmt fit" in result[0].note


def test_counter_mode_memory_part_and_checks(tmp_path: Path) -> None:
    """test_model's counter table (CPI growing 5% per doubling of P) with memory accesses:
    exchange's CPI varies by more than CPI_DEVIATION_LIMIT (1.58 to 1.88) and its E is 1e-2;
    solve's CPI varies less (0.84 to 1.0) and its E is 1e-5."""
    machine = load_machine(MACHINE)
    table = counter_table(machine.hertz, cpi_growth=0.05)
    misses = table[table["metric"] == "llc_misses"]
    loads = misses.assign(metric="mem_loads",
                          value=misses["value"] / misses["kernel"].map(CONTENTION) * 0.9)
    stores = loads.assign(metric="mem_stores", value=loads["value"] / 9)
    table = pd.concat([table, loads, stores], ignore_index=True)
    model = build_model(table, [], source="counters", machine=machine)
    result = sections(study_folder(tmp_path, model, table))
    checks = section(result, "Memory contention")
    warned = sorted((f.kernel, "CPI" in f.text) for f in checks.findings
                    if f.severity == "warning")
    assert warned == [("exchange", False), ("exchange", True)], checks.findings
    modes = [f.text for f in checks.findings if f.severity == "info"]
    assert modes[0].startswith("counter mode (Eq. 2)") and "cycles counted" in modes[0]
    assert all(text.split(":")[0] in model.cpi for text in modes[1:])
    row = checks.table.set_index("kernel").loc["exchange"]
    assert row["contention"] == pytest.approx(1e-2, rel=1e-6)
    assert row["cpi_deviation"] > CPI_DEVIATION_LIMIT
    strong = section(result, "Strong scaling").table
    assert (strong[PART_LABELS["mem_time"]] > 0).all()
    check_components(model, scale_values(model, table, [2, 32, 256])[0])


# ----------------------------------------------------- a real MPI program, planted imbalance

@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, cli) -> dict:
    """tests/mpi_programs/imbalance.c profiled with apmt profile at P = 1, 2, 3 (perf
    cpu-clock sampling, MPI traced), fitted with apmt fit, then diagnosed."""
    if not HAVE_MPI:
        pytest.skip("needs mpicc and mpirun (Open MPI)")
    real_backend("perf-clock")
    folder = tmp_path_factory.mktemp("planted")
    binary = folder / "imbalance"
    subprocess.run(["mpicc", "-O1", "-g", "-o", str(binary), str(PROGRAM)], check=True)
    study = study_file(folder, "imbalance", command=f"{binary} {{n}}", p=[1, 2, 3],
                       params={"n": [CELLS]}, backend="perf-clock", trace_mpi=True)
    run = cli("profile", study, "--results", folder / "results")
    assert run.code == 0, (run.out, run.err)
    results = folder / "results" / "imbalance"
    fit = cli("fit", results / "measurements.csv", "--comm", results / "comm.csv",
              "--param", "n", "-o", results / "model.json")
    assert fit.code == 0, (fit.out, fit.err)
    return {"folder": results, "sections": sections(results),
            "measurements": read_table(results / "measurements.csv", params=["n"]),
            "comm": read_table(results / "comm.csv", "communication", ["n"])}


def test_planted_imbalance_names_function_and_heavy_rank(planted: dict) -> None:
    load = section(planted["sections"], "Load imbalance")
    for p in (2, 3):
        warnings = [f for f in load.findings if f.p == p and f.severity == "warning"
                    and f.kernel is not None]
        # the costliest imbalanced kernel comes first: the planted one, on the last rank
        assert (warnings[0].kernel, warnings[0].rank) == (PLANTED, p - 1), load.findings
    table = load.table
    [ratio] = table.loc[(table["kernel"] == PLANTED) & (table["p"] == 3), "imbalance"]
    assert 1.4 < ratio < 2.2          # planted: 3 / mean(1, 1, 3) = 1.8
    advice = [f for f in load.findings if f.severity == "problem"]
    assert any(f.p == 3 and f.rank == 2 and f.kernel == PLANTED for f in advice), advice
    if len(os.sched_getaffinity(0)) < 3:
        assert "P=3 oversubscribed" in load.note


def test_planted_imbalance_names_the_waiting_ranks(planted: dict) -> None:
    waits = imbalance.mpi_wait(planted["measurements"], planted["comm"], ["n"])
    at3 = waits[waits["p"] == 3].set_index("rank")["wait_share"]
    assert min(at3[0], at3[1]) > at3[2] + imbalance.WAIT_LIMIT, at3
    load = section(planted["sections"], "Load imbalance")
    [waiting] = [f for f in load.findings if f.p == 3 and "waiting in MPI" in f.text]
    assert "rank 0" in waiting.text and "rank 1" in waiting.text
    assert "rank 2, the slowest" in waiting.text


def test_planted_scaling_on_real_profiles(planted: dict) -> None:
    """The other sections run on the profiled data; the split by operation adds up."""
    result = planted["sections"]
    strong = section(result, "Strong scaling")
    assert strong.table["p"].tolist() == [1, 2, 3, 6, 12, 24]
    assert strong.table["measured"].notna().sum() == 3
    model = load_model(planted["folder"] / "model.json")
    assert model.communication, "the MPI_Allreduce model is missing"
    values, _ = scale_values(model, planted["measurements"], [1, 2, 3, 24])
    check_components(model, values)
    ranking = section(result, "Kernel ranking").table
    assert PLANTED in set(ranking["kernel"])


def test_a_regime_the_fits_start_after_is_said(measured_data: Path, tmp_path: Path) -> None:
    """LAMMPS profiled on 2 cores (P <= 8): the model fits its functions from a later P (the
    single rank that does not communicate, the ranks that share the cores from P = 3), and
    the strong-scaling section's note says why. The measured P before it are left out of
    the scaling sections, which would show the fits run backwards out of their range, and
    the note says so."""
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    measurements = table[table["p"] <= 8]
    model = build_model(measurements, ["size"], source="lammps")
    start = model.calibration["regime"]["start"]
    assert start in (2.0, 3.0)
    result = sections(study_folder(tmp_path / "lammps", model, measurements))
    strong = section(result, "Strong scaling")
    before = ", ".join(f"{p:g}" for p in sorted(measurements["p"].unique()) if p < start)
    assert f"the runs at p < {start:g} follow another regime" in strong.note
    assert f"the measured P = {before} are left out here" in strong.note
    assert strong.table["p"].min() == start
    assert f"at P={start:g}:" in section(result, "Kernel ranking").findings[0].text


def test_runs_on_shared_cores_are_said_to_predict_crowded_runs(measured_data: Path,
                                                               tmp_path: Path) -> None:
    """miniFE profiled on 2 cores at P = 1..32: its time stops falling at P = 3, the first run
    with more ranks than cores, and the model carries the crowding on (15 s at P = 256). The
    strong-scaling section says which runs shared cores, that the model's times from them on
    are of such runs, and that the stop is the machine's, also when the P asked for start at
    the first crowded run; without the provenance's list of such runs it says nothing of the
    kind."""
    measurements = read_table(measured_data / "minife/measurements.csv", "measurements")
    comm = read_table(measured_data / "minife/comm.csv", "communication")
    folder = study_folder(tmp_path / "minife", build_model(measurements, ["nx"], comm=comm,
                                                           source="minife"), measurements)
    write_table(comm, folder / "comm.csv")
    provenance = json.loads((measured_data / "minife/provenance.json").read_text())
    provenance.update(machine_file=MACHINE, machine=MACHINE)   # the probed one is not shipped
    (folder / "measurements.csv.provenance.json").write_text(json.dumps(provenance))
    strong = section(sections(folder), "Strong scaling")
    [crowded] = [f for f in strong.findings if "more ranks than cores" in f.text]
    assert crowded.severity == "warning" and crowded.p == 3
    assert crowded.text.startswith("the runs at P=3, 4, 6, 8, 16, 32 had more ranks")
    assert "stops falling where the ranks share cores (from P=3)" in crowded.text
    from_crowded = section(sections(folder, [3, 4, 8, 16]), "Strong scaling")
    [crowded] = [f for f in from_crowded.findings if "more ranks than cores" in f.text]
    assert "stops falling where the ranks share cores (from P=3)" in crowded.text
    (folder / "measurements.csv.provenance.json").unlink()
    strong = section(sections(folder), "Strong scaling")
    assert not any("more ranks than cores" in f.text for f in strong.findings)


def test_a_crowded_runs_busy_cores_are_said(measured_data: Path, tmp_path: Path) -> None:
    """miniAMR on 2 cores at P = 1..32: its parts per rank at P = 32 (0.3 s of computation,
    1.2 s in MPI) leave most of its 8.8 s unaccounted, but its 32 ranks' sampled time over
    the 2 cores fills 89% of it. The strong-scaling section says so, with the cores counted
    from the largest P that ran uncrowded; a study whose runs all had a core each is told
    nothing of the kind."""
    measurements = read_table(measured_data / "miniamr/measurements.csv", "measurements")
    folder = study_folder(tmp_path / "miniamr", build_model(measurements, ["nx"],
                                                            source="miniamr"), measurements)
    provenance = json.loads((measured_data / "miniamr/provenance.json").read_text())
    provenance.update(machine_file=MACHINE, machine=MACHINE)
    (folder / "measurements.csv.provenance.json").write_text(json.dumps(provenance))
    strong = section(sections(folder), "Strong scaling")
    [busy] = [f for f in strong.findings if "over 2 cores" in f.text]
    assert busy.p == 32 and busy.text.startswith("at P=32 the ranks' sampled time, 32 x ")
    share = int(re.search(r"fills (\d+)% of", busy.text)[1])
    assert 85 <= share <= 95 and "shared out over the cores" in busy.text
    provenance["oversubscribed_runs"] = []
    (folder / "measurements.csv.provenance.json").write_text(json.dumps(provenance))
    strong = section(sections(folder), "Strong scaling")
    assert not any("cores" in f.text for f in strong.findings)


def test_a_part_that_outgrows_the_whole_is_said(measured_data: Path, tmp_path: Path) -> None:
    """The ParRes Sparse on 2 cores, fitted at P <= 8: every iteration each rank gathers the
    whole vector, and the gather's own forecast at P = 32 (2.4 s) exceeds the application
    time's own (1.8 s; 6.1 s was measured). The model holds the part at the whole's; the
    strong-scaling section says which part, where, and that a run there tells which
    forecast errs. A model whose parts stay below the whole says nothing of the kind."""
    folder = measured_data / "prk_sparse"
    measurements = read_table(folder / "measurements.csv", "measurements")
    comm = read_table(folder / "comm.csv", "communication")
    fitted = measurements[measurements["p"] <= 8]
    model = build_model(fitted, ["lsize"], source="prk_sparse", comm=comm[comm["p"] <= 8])
    strong = section(sections(study_folder(tmp_path / "sparse", model, fitted), [8, 16, 32]),
                     "Strong scaling")
    [outgrown] = [f for f in strong.findings if "exceeds the application's time" in f.text]
    assert outgrown.severity == "warning" and outgrown.p == 32
    assert outgrown.text.startswith("at P=32 the forecast of MPI_Allgather (2.4 s) on its own")
    # the whole's own fit, and the model's time there, which reconciles it with the parts
    assert "the application's time as fitted on its own (1.8" in outgrown.text
    assert "; the model's, reconciled with its parts: " in outgrown.text
    alone = build_model(fitted, ["lsize"], source="prk_sparse")
    strong = section(sections(study_folder(tmp_path / "alone", alone, fitted), [8, 16, 32]),
                     "Strong scaling")
    assert not any("exceeds the application's time" in f.text for f in strong.findings)


def test_the_os_kernel_is_named_as_the_operating_systems_time() -> None:
    """The samplers' <kernel> bucket is the operating system's time, not a kernel of the
    application: said so where it is imbalanced (miniWeather at P = 3 on 2 cores, rank 0's
    0.291 s against a mean of 0.223 s, read 'P=3: <kernel> is imbalanced')."""
    row = pd.Series({"kernel": "<kernel>", "heavy_rank": 0, "max": 0.291, "mean": 0.223,
                     "imbalance": 1.31, "ranks": 3, "share": 0.16})
    found = imbalance._kernel_finding(row, None, "P=3", 3)
    assert found.text.startswith("P=3: <kernel> (time in the operating system) is imbalanced: "
                                 "rank 0 spends 0.291 s") and found.kernel == "<kernel>"
    named = imbalance._kernel_finding(row.replace("<kernel>", "sweep"), None, "P=3", 3)
    assert named.text.startswith("P=3: sweep is imbalanced: rank 0")
