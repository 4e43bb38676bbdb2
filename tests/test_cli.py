"""The command line end to end on real data: import, fit, predict and evaluate."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from apmt import __version__
from apmt.cli import build_parser
from apmt.model import load_model
from apmt.tables import APP_KERNEL, read_table

RELEARN_P = [32, 64, 128, 256, 512]
LULESH_P = [27, 64, 125, 216, 343]
PARTS = {"time", "comp_time", "mem_time", "comm_time", "others_time"}


@pytest.fixture(scope="module")
def relearn(measured_data: Path, tmp_path_factory: pytest.TempPathFactory, cli) -> SimpleNamespace:
    """RELeARN through import, fit and predict once; the tests look at each stage's output."""
    work = tmp_path_factory.mktemp("relearn")
    source = measured_data / "relearn" / "relearn_data.txt"
    table, model, predictions = work / "relearn.csv", work / "model.json", work / "pred.csv"
    runs = {
        "import": cli("import", "extrap-text", source, "-o", table),
        "fit": cli("fit", table, "--param", "n", "--per-rank-param", "n",
                   "--app-kernel", "main()", "-o", model),
        "predict": cli("predict", model, "--at", "p=512,n=5000", "--at", "p=1024,n=9000",
                       "-o", predictions),
    }
    return SimpleNamespace(source=source, table=table, model=model, predictions=predictions,
                           runs=runs, work=work)


def test_import_writes_table_and_provenance(relearn: SimpleNamespace) -> None:
    run = relearn.runs["import"]
    assert run.code == 0, run.err
    assert run.out.strip() == "650 rows, 13 series, 5 distinct P (32..512)"
    assert run.err.startswith("apmt: warning: dropped 'Update #synaptic elements + del synapses'")
    table = read_table(relearn.table)
    assert sorted(table["p"].unique()) == RELEARN_P
    record = json.loads(Path(f"{relearn.table}.provenance.json").read_text())
    assert record["format"] == "extrap-text" and record["apmt_version"] == __version__
    assert record["host"] and record["created"]
    digest = hashlib.sha256(relearn.source.read_bytes()).hexdigest()
    assert record["inputs"] == [{"path": str(relearn.source), "sha256": digest}]


def test_outputs_get_the_usual_file_mode(relearn: SimpleNamespace) -> None:
    """Atomic writes go through a private temporary file; the result must not stay private."""
    umask = os.umask(0)
    os.umask(umask)
    for path in (relearn.table, Path(f"{relearn.table}.provenance.json"), relearn.model):
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


def test_fit_saves_model_with_provenance(relearn: SimpleNamespace) -> None:
    run = relearn.runs["fit"]
    assert run.code == 0, run.err
    assert "time mode, weak scaling, 13 kernels" in run.out and "13 series fitted" in run.out
    assert "application main(): time = " in run.out
    assert "  Simulation loop: time = " in run.out
    model = load_model(relearn.model)
    assert model.params == ["n"] and model.per_rank_params == ["n"]
    assert model.scaling == "weak"      # a per-rank parameter, no --scaling: weak scaling
    assert model.app_kernel == "main()"
    provenance = model.provenance
    assert provenance["p_values"] == RELEARN_P
    assert provenance["max_repetitions"] == 2
    assert provenance["machine"] is None
    sidecar = json.loads(Path(f"{relearn.table}.provenance.json").read_text())
    assert provenance["import"] == sidecar
    assert provenance["inputs"][0]["path"] == str(relearn.table)


def test_predicted_application_time_is_near_the_measurement(relearn: SimpleNamespace) -> None:
    run = relearn.runs["predict"]
    assert run.code == 0, run.err
    predictions = pd.read_csv(relearn.predictions)
    assert list(predictions.columns) == ["kernel", "metric", "p", "n", "predicted", "lower",
                                         "upper", "trust", "trust_reason"]
    app = predictions[(predictions["kernel"] == APP_KERNEL) & (predictions["metric"] == "time")]
    assert len(app) == 2
    assert app.set_index("p")["trust"].to_dict() == {512: "interpolated", 1024: "extrapolated"}
    assert app.set_index("p").at[1024, "trust_reason"].startswith(
        "p = 1024 is 2x the largest measured (512)")
    row = app[(app["p"] == 512) & (app["n"] == 5000)].iloc[0]
    table = read_table(relearn.table)
    at = table[(table["kernel"] == "main()") & (table["p"] == 512) & (table["n"] == 5000)]
    measured = at["value"].mean()
    assert len(at) == 2 and 1000 < measured < 1500
    assert abs(row["predicted"] - measured) / measured < 0.30
    assert (app["lower"] <= app["predicted"]).all() and (app["predicted"] <= app["upper"]).all()
    assert set(predictions.loc[predictions["kernel"] == APP_KERNEL, "metric"]) == PARTS
    assert run.out.startswith("p=512 n=5000: application time ")
    assert len(run.out.splitlines()) == 2


def test_evaluate_compares_apmt_with_the_baselines(relearn: SimpleNamespace, cli) -> None:
    output = relearn.work / "eval.csv"
    validation = relearn.work / "validation.json"
    run = cli("evaluate", relearn.table, "--holdout", "p=max", "--param", "n",
              "--per-rank-param", "n", "--app-kernel", "main()", "--validation", validation,
              "-o", output)
    assert run.code == 0, run.err
    evaluation = pd.read_csv(output)
    series = evaluation[evaluation["kernel"] != APP_KERNEL]
    assert set(series["method"]) == {"apmt", "analytic", "amdahl", "powerlaw"}
    assert set(evaluation["p"]) == {512}
    assert evaluation["ape"].notna().all()
    assert series.groupby("method").size().nunique() == 1
    app = evaluation[(evaluation["kernel"] == APP_KERNEL) & (evaluation["metric"] == "time")]
    assert len(app) == 5 and (app["ape"] < 30).all()
    assert run.out.splitlines()[0].split()[:3] == ["method", "points", "median_ape"]
    assert [line.split()[0] for line in run.out.splitlines()[1:5]] == [
        "apmt", "analytic", "amdahl", "powerlaw"]
    decision = json.loads(validation.read_text())
    assert decision["exceeds_tolerance"] == (decision["error"] > 0.1)
    assert decision["error"] == pytest.approx(app["ape"].max() / 100)
    assert run.out.splitlines()[-1].startswith("validation: application error ")
    # imported profiles: apmt cannot add runs, and the validation says so instead of refining
    assert decision["refine"] is False and decision["part"] is None
    if decision["exceeds_tolerance"]:
        assert "needs new runs at other P; apmt cannot make runs of imported profiles" in \
            decision["refinement"]
        assert "apmt cannot make runs of imported profiles" in run.out.splitlines()[-1]


def test_one_table_goes_to_standard_output(relearn: SimpleNamespace, cli) -> None:
    """Without -o (or with -o -), predict, evaluate and import print their table as CSV on
    stdout, and their summary on stderr, so that the table can be piped."""
    predicted = cli("predict", relearn.model, "--at", "p=1024,n=5000")
    assert predicted.code == 0, predicted.err
    table = pd.read_csv(io.StringIO(predicted.out))
    assert set(table["p"]) == {1024} and set(table["metric"]) >= PARTS
    assert predicted.err.startswith("p=1024 n=5000: application time ")
    assert not (Path.cwd() / "-").exists()
    dashed = cli("predict", relearn.model, "--at", "p=1024,n=5000", "-o", "-")
    assert dashed.out == predicted.out
    evaluated = cli("evaluate", relearn.table, "--param", "n", "--per-rank-param", "n",
                    "--metrics", "time")
    assert evaluated.code == 0, evaluated.err
    assert set(pd.read_csv(io.StringIO(evaluated.out))["method"]) >= {"apmt", "powerlaw"}
    imported = cli("import", "extrap-text", relearn.source, "-o", "-")
    assert imported.code == 0, imported.err
    assert len(pd.read_csv(io.StringIO(imported.out))) == 650
    assert "650 rows, 13 series" in imported.err
    assert not (Path.cwd() / "-").exists() and not (Path.cwd() / "-.provenance.json").exists()


def test_exit_codes_through_a_real_process(relearn: SimpleNamespace) -> None:
    output = relearn.work / "subprocess.csv"
    command = [sys.executable, "-m", "apmt.cli", "predict", str(relearn.model)]
    ok = subprocess.run([*command, "--at", "p=256,n=7000", "-o", str(output)],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("p=256 n=7000: application time ")
    assert output.is_file()
    bad = subprocess.run([*command, "--at", "p=256", "-o", str(relearn.work / "no.csv")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        "apmt: error: --at 'p=256': missing parameter 'n' (the model needs p, n)"]
    assert not (relearn.work / "no.csv").exists()


def test_lulesh_caliper_predicts_every_fitted_series(measured_data: Path, tmp_path: Path,
                                                     cli) -> None:
    files = [measured_data / "lulesh_caliper_opal" / f"{p}_cores.cali" for p in LULESH_P]
    table, model, predictions = tmp_path / "t.csv", tmp_path / "m.json", tmp_path / "p.csv"
    run = cli("import", "caliper", *files, "-o", table)
    assert run.code == 0, run.err
    assert run.out.strip() == "225 rows, 45 series, 5 distinct P (27..343)"
    run = cli("fit", table, "-o", model)  # no --param: the numeric column size is one
    assert run.code == 0, run.err
    fitted = load_model(model)
    assert fitted.params == ["size"]
    assert len(fitted.provenance["import"]["inputs"]) == len(files)
    run = cli("predict", model, "--at", "p=512,size=30", "-o", predictions)
    assert run.code == 0, run.err
    out = pd.read_csv(predictions)
    series = out[out["kernel"] != APP_KERNEL]
    expected = {(entry.kernel, entry.metric) for entry in fitted.series}
    assert set(zip(series["kernel"], series["metric"], strict=True)) == expected
    assert len(series) == len(expected) == 45
    assert (out["p"] == 512).all() and (out["size"] == 30).all()
    assert (series["predicted"] > 0).all()
    assert set(out.loc[out["kernel"] == APP_KERNEL, "metric"]) == PARTS


def test_collectives_evaluate_as_a_communication_table(measured_data: Path, tmp_path: Path,
                                                       cli) -> None:
    table, output = tmp_path / "comm.csv", tmp_path / "eval.csv"
    run = cli("import", "collectives", measured_data / "mpi_collectives" / "mpi_data.csv",
              "-o", table)
    assert run.code == 0, run.err
    assert run.out.strip() == "70 rows, 14 series, 5 distinct P (32..512)"
    run = cli("evaluate", table, "-o", output)
    assert run.code == 0, run.err
    evaluation = pd.read_csv(output)
    assert set(evaluation["metric"]) == {"time"}      # per rank, as the model sums it
    assert "MPI_Allreduce/OpenMPI" in set(evaluation["kernel"])
    assert evaluation["kernel"].nunique() == 14
    assert evaluation.groupby("method").size().to_dict() == {
        "amdahl": 14, "analytic": 14, "apmt": 14, "powerlaw": 14}
    run = cli("fit", table, "-o", tmp_path / "model.json")
    assert run.code == 2 and "give it with --comm" in run.err


def test_a_communication_table_is_evaluated_within_the_application_time(
        measured_data: Path, tmp_path: Path, cli) -> None:
    """ParRes Nstream profiled here, its MPI operations held out at P = 16 and 32: given the
    measurements of the same runs (--whole), each operation's interval ends at most where
    the application's time does, as in the model (MPI_Reduce's own upper end at P = 32:
    2.3e5 s, in a run of 2.5 s); --whole on a measurements table is one line of error."""
    folder = measured_data / "prk_nstream"
    arguments = ("evaluate", folder / "comm.csv", "--holdout", "p=16,32", "--baselines",
                 "amdahl")
    uppers = {}
    for name, extra in (("alone", ()), ("whole", ("--whole", folder / "measurements.csv"))):
        run = cli(*arguments, *extra, "-o", tmp_path / f"{name}.csv")
        assert run.code == 0, run.err
        rows = pd.read_csv(tmp_path / f"{name}.csv").query("method == 'apmt'")
        uppers[name] = rows.set_index(["kernel", "p"])["upper"]
        assert len(rows) == 8 and (rows["measured"] <= rows["upper"]).all()
    assert uppers["alone"]["MPI_Reduce", 32] > 1e4 > 10 > uppers["whole"]["MPI_Reduce", 32]
    assert (uppers["whole"] <= uppers["alone"]).all()
    run = cli("evaluate", folder / "measurements.csv", "--whole", folder / "measurements.csv",
              "-o", tmp_path / "bad.csv")
    assert run.code == 2 and "--whole is for a communication table" in run.err
    assert len(run.err.strip().splitlines()) == 1


def test_evaluate_a_profiled_study_gives_one_application_row_per_method(
        measured_data: Path, tmp_path: Path, cli) -> None:
    """LAMMPS profiled here, with its measured wall time (<app>): the assembled model answers
    for apmt; its direct fit of <app> is fitted_time, beside the baselines' fits."""
    runs = [1, 2, 3, 4, 6, 8]
    for name, kind in (("measurements", "measurements"), ("comm", "communication")):
        table = read_table(measured_data / f"lammps/p1-32/{name}.csv", kind)
        table[table["p"].isin(runs)].to_csv(tmp_path / f"{name}.csv", index=False)
    output = tmp_path / "eval.csv"
    run = cli("evaluate", tmp_path / "measurements.csv", "--comm", tmp_path / "comm.csv",
              "--param", "size", "--metrics", "time", "--baselines", "powerlaw,amdahl",
              "-o", output)
    assert run.code == 0, run.err
    app = pd.read_csv(output).query("kernel == @APP_KERNEL")
    times = app[app["metric"] == "time"]
    assert times.groupby("method").size().to_dict() == {"amdahl": 1, "apmt": 1, "powerlaw": 1}
    assert set(app.loc[app["method"] == "apmt", "metric"]) == {
        "time", "fitted_time", "computation_time", "comm_time", "others_time"}


def test_version_and_usage_errors(cli, capsys: pytest.CaptureFixture) -> None:
    from apmt.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"apmt {__version__}"
    assert main([]) == 2
    assert main(["import", "no-such-format", "x", "-o", "y.csv"]) == 2
    assert main(["fit", "x.csv", "--threshold", "1.5", "-o", "m.json"]) == 2
    assert "usage: apmt" in capsys.readouterr().err


def test_param_options_extend() -> None:
    args = build_parser().parse_args(["fit", "t.csv", "--param", "n", "m", "--param", "k",
                                      "--per-rank-param", "n", "-o", "m.json"])
    assert args.params == ["n", "m", "k"] and args.per_rank_params == ["n"]
    assert build_parser().parse_args(["fit", "t.csv", "-o", "m.json"]).params is None
    assert build_parser().parse_args(["fit", "t.csv", "-o", "m.json"]).scaling is None


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is not None, reason="pyarrow present")
def test_parquet_without_pyarrow_is_a_clear_error(measured_data: Path, tmp_path: Path,
                                                  cli) -> None:
    output = tmp_path / "t.parquet"
    run = cli("import", "extrap-text", measured_data / "relearn" / "relearn_data.txt",
              "-o", output)
    assert run.code == 2 and "pyarrow" in run.err
    assert not output.exists()


def test_fit_with_a_communication_table_and_a_machine(measured_data: Path, tmp_path: Path,
                                                       cli) -> None:
    """Measured application time beside real collectives: one <app> time row per point."""
    comm = tmp_path / "comm.csv"
    assert cli("import", "collectives", measured_data / "mpi_collectives" / "mpi_data.csv",
               "-o", comm).code == 0
    rows = [{"kernel": kernel, "metric": "time", "p": p, "value": value}
            for p in RELEARN_P
            for kernel, value in ((APP_KERNEL, 6400 / p + 3), ("solve", 6400 / p))]
    table = tmp_path / "measurements.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    model, predictions = tmp_path / "model.json", tmp_path / "pred.csv"
    run = cli("-v", "fit", table, "--comm", comm, "--machine", "haswell-e5-2698v3", "-o", model)
    assert run.code == 0, run.err
    assert "apmt: info: read " in run.err
    assert "MPI_Bcast/IntelMPI (collective): time per call = " in run.out
    assert "MPI_Bcast/OpenMPI (collective): time per call = " in run.out
    fitted = load_model(model)
    assert fitted.provenance["machine"] == "haswell-e5-2698v3"
    assert fitted.provenance["comm_import"]["format"] == "collectives"
    assert [entry["path"] for entry in fitted.provenance["inputs"]] == [str(table), str(comm)]
    assert len(fitted.communication) == 14
    run = cli("predict", model, "--at", "p=1024", "--at", "p=2048", "-o", predictions)
    assert run.code == 0, run.err
    out = pd.read_csv(predictions)
    app = out[out["kernel"] == APP_KERNEL]
    assert not app.duplicated(["metric", "p"]).any()
    assert set(app["metric"]) == {*PARTS, "fitted_time"}
    lines = run.out.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["p=1024", "p=2048"]
    assert len(lines) == 2 or (len(lines) == 3 and lines[2].startswith("warning: unsupported"))


def test_volume_ratio_per_pattern() -> None:
    parser = build_parser()
    args = parser.parse_args(["predict", "m.json", "--at", "p=8", "--volume-ratio",
                              "p2p=2,MPI_Allreduce=3", "-o", "x.csv"])
    assert args.volume_ratio == {"p2p": 2.0, "MPI_Allreduce": 3.0}
    args = parser.parse_args(["predict", "m.json", "--at", "p=8", "--volume-ratio", "4",
                              "-o", "x.csv"])
    assert args.volume_ratio == {"all": 4.0}


def test_machine_probe_writes_a_machine_file(tmp_path: Path, cli) -> None:
    from apmt.machine import load_machine

    output = tmp_path / "here.yaml"
    run = cli("machine", "probe", "--quick", "--name", "here", "-o", output)
    assert run.code == 0, run.err
    machine = load_machine(output)
    assert machine.fields["name"] == "here"
    assert machine.fields["latency_cycles"]["l1"] < machine.fields["latency_cycles"]["memory"]
    assert run.out.startswith(f"{output}: ")


def test_diagnose_finds_the_last_rounds_tables(relearn: SimpleNamespace, tmp_path: Path,
                                               cli) -> None:
    """A study whose refinement stopped has no tables of its own yet: apmt diagnose takes its
    last round's (r10 after r2: by number) and says so; with none, it says where it looked."""
    study = tmp_path / "study"
    for round_name in ("r2", "r10"):
        folder = study / "rounds" / round_name
        folder.mkdir(parents=True)
        (folder / "measurements.csv").write_bytes(relearn.table.read_bytes())
        (folder / "measurements.csv.provenance.json").write_bytes(
            Path(f"{relearn.table}.provenance.json").read_bytes())
    run = cli("diagnose", study)
    assert run.code == 0, run.err
    assert f"diagnosing the tables of its last round, {study / 'rounds' / 'r10'}" in run.err
    assert "== Scaling" in run.out
    (tmp_path / "empty").mkdir()
    missing = cli("diagnose", tmp_path / "empty")
    assert missing.code == 2 and missing.err.count("\n") == 1
    assert f"{tmp_path / 'empty' / 'rounds'}/r*/" in missing.err


def test_predict_warns_of_a_model_fitted_on_crowded_runs(measured_data: Path, tmp_path: Path,
                                                         cli) -> None:
    """miniFE profiled on 2 cores: its provenance lists the runs with more ranks than cores
    (P = 3..32), and `apmt predict` says that what it predicts from them are runs as crowded;
    without that list it does not."""
    for crowded in (True, False):
        folder = tmp_path / str(crowded)
        folder.mkdir()
        shutil.copy2(measured_data / "minife/measurements.csv", folder / "measurements.csv")
        if crowded:
            shutil.copy2(measured_data / "minife/provenance.json",
                         folder / "measurements.csv.provenance.json")
        fit = cli("fit", folder / "measurements.csv", "--param", "nx", "-o",
                  folder / "model.json")
        assert fit.code == 0, fit.err
        run = cli("predict", folder / "model.json", "--at", "p=64,nx=64", "-o",
                  folder / "predictions.csv")
        assert run.code == 0, run.err
        warnings = [line for line in run.out.splitlines() if "more ranks than cores" in line]
        assert warnings == ([
            "warning: the model was fitted on runs with more ranks than cores (P=3, 4, 6, 8, "
            "16, 32): its times from there on are of runs as crowded, not of runs with a core "
            "per rank"] if crowded else [])
