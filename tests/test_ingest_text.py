"""Text importers: Extra-P's text format (RELeARN and small files) and the collectives CSV."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt import layout
from apmt.errors import ApmtError
from apmt.ingest import FORMATS, import_profiles
from apmt.ingest.collectives import read_collectives
from apmt.ingest.extrap_text import read_extrap_text
from apmt.tables import check_table

RELEARN_P = [32, 64, 128, 256, 512]
RELEARN_N = [5000.0, 6000.0, 7000.0, 8000.0, 9000.0]
NEVER_RUN = "Update #synaptic elements + del synapses"
EXTRAP_FILES = Path(__file__).parent / "fixtures" / "extrap_text"  # Extra-P's test data
NO_P_HINT = "name the process count p (or processes, ranks) on the PARAMETER line"


@pytest.fixture(scope="module")
def relearn_file(measured_data: Path) -> Path:
    return measured_data / "relearn" / "relearn_data.txt"


def test_relearn_as_read(relearn_file: Path) -> None:
    table = read_extrap_text([relearn_file])
    assert table["kernel"].nunique() == 14 and len(table) == 14 * 25 * 2
    assert list(table.columns) == ["kernel", "metric", "p", "n", "rep", "value"]
    assert (table.loc[table["kernel"] == NEVER_RUN, "value"] == 0).all()


def test_relearn_imported(relearn_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="apmt"):
        table, kind = import_profiles("extrap-text", [relearn_file])
    assert kind == "measurements"
    assert [r.getMessage() for r in caplog.records] == [
        f"dropped {NEVER_RUN!r}/'time': zero in every run (never executed)"]
    assert table["kernel"].nunique() == 13 and len(table) == 13 * 25 * 2
    assert NEVER_RUN not in set(table["kernel"])
    assert sorted(table["p"].unique()) == RELEARN_P
    assert sorted(table["n"].unique()) == RELEARN_N
    assert sorted(table["rep"].unique()) == [1, 2]
    assert set(table["metric"]) == {"time"}
    assert table["p"].dtype == np.int64 and table["n"].dtype == np.float64
    assert "main()" in set(table["kernel"])  # the file indents names to show nesting
    assert not any(k != k.strip() for k in table["kernel"])
    main = table[(table["kernel"] == "main()") & (table["p"] == 32) & (table["n"] == 5000)]
    assert main.set_index("rep")["value"].to_dict() == {1: 406.498, 2: 405.58}
    assert (table.groupby(["kernel", "p", "n"]).size() == 2).all()


def test_single_parameter_points(tmp_path: Path) -> None:
    source = tmp_path / "small.txt"
    source.write_text("# a comment\nPARAMETER p\n\nPOINTS 4 8 16\n"
                      "METRIC time\nREGION solve\nDATA 1.0 1.5\nDATA 2.0 2.5\nDATA 4e0\n"
                      "REGION  halo exchange \nDATA 0.1\nDATA 0.2\nDATA 0.3\n"
                      "METRIC visits\nREGION solve\nDATA 10\nDATA 20\nDATA 40\n")
    table = check_table(read_extrap_text([source]), str(source))
    assert list(table.columns) == ["kernel", "metric", "p", "rep", "value"]
    solve = table[(table["kernel"] == "solve") & (table["metric"] == "time")]
    assert list(zip(solve["p"], solve["rep"], solve["value"], strict=True)) == [
        (4, 1, 1.0), (4, 2, 1.5), (8, 1, 2.0), (8, 2, 2.5), (16, 1, 4.0)]
    halo = table[table["kernel"] == "halo exchange"]
    assert list(halo["p"]) == [4, 8, 16] and list(halo["value"]) == [0.1, 0.2, 0.3]
    visits = table[table["metric"] == "visits"]
    assert list(visits["value"]) == [10.0, 20.0, 40.0] and set(visits["kernel"]) == {"solve"}


def test_points_in_parentheses_and_process_synonym(tmp_path: Path) -> None:
    source = tmp_path / "paren.txt"
    source.write_text("PARAMETER processes\nPARAMETER size\n"
                      "POINTS ( 2 10 ) ( 4 10 )\nPOINTS ( 8 20 )\n"
                      "REGION r\nDATA 1\nDATA 2\nDATA 3\n")
    table = read_extrap_text([source])
    assert list(table["p"]) == [2, 4, 8] and list(table["size"]) == [10, 10, 20]
    assert set(table["metric"]) == {"time"}


def test_blanks_collapse_as_in_extrap(tmp_path: Path) -> None:
    """Tabs and runs of blanks separate fields, as in Extra-P's reader; names keep one space."""
    source = tmp_path / "tabs.txt"
    source.write_text("PARAMETER\tp \t n\nPOINTS\t(\t4\t1 )  (8\t1)\n"
                      "REGION \t halo \t exchange\t\nDATA\t1\t 2\nDATA 3\n")
    table = read_extrap_text([source])
    assert list(table["kernel"].unique()) == ["halo exchange"]
    assert list(zip(table["p"], table["n"], table["value"], strict=True)) == [
        (4, 1, 1.0), (4, 1, 2.0), (8, 1, 3.0)]


def test_extrap_two_parameters_on_one_line() -> None:
    """Extra-P's ``PARAMETER p s``: two parameters, and tabs after DATA."""
    source = EXTRAP_FILES / "two_parameter_5.txt"
    table, _ = import_profiles("extrap-text", [source])
    assert list(table.columns) == ["kernel", "metric", "p", "s", "rep", "value"]
    assert len(table) == 25 and set(table["kernel"]) == {"main"}
    assert sorted(table["p"].unique()) == [2, 4, 8, 16, 32]
    assert sorted(table["s"].unique()) == [10, 20, 30, 40, 50]
    formula = 2 + 0.884 * table["s"] * np.log2(table["p"])  # the file's "# formula" comment
    assert np.allclose(table["value"], formula, rtol=1e-12, atol=0)


@pytest.mark.parametrize("named", ["in the file", "by the caller"])
def test_extrap_tab_separated_fields(tmp_path: Path, named: str) -> None:
    """Extra-P's file with every field tab-separated reads to its end (then lacks p); with
    its x called p, in the file or by the caller, each of its 60 points carries the value of
    its own formula first."""
    source = EXTRAP_FILES / "two_parameter_segmented_1.txt"
    with pytest.raises(ApmtError,
                       match=re.escape(f"{source}: no parameter 'p' is among x, y: ")):
        read_extrap_text([source])
    if named == "in the file":
        renamed = tmp_path / "p_y.txt"
        renamed.write_bytes(source.read_bytes().replace(b"PARAMETER x\n", b"PARAMETER p\n", 1))
        table = read_extrap_text([renamed])
    else:
        table = read_extrap_text([source], processes="X")
    assert len(table) == 300
    assert set(table["kernel"]) == {"reg"} and set(table["metric"]) == {"metr"}
    first = table[table["rep"] == 1]
    assert len(first) == 60 and sorted(first["p"].unique()) == list(range(10, 101, 10))
    x, y = first["p"], first["y"]
    formula = np.where(x < 55, x ** 2 * 0.4 * y, 1400 + x * 10 * y)  # the file's comment
    assert np.allclose(first["value"], formula, rtol=1e-12, atol=0)


@pytest.mark.parametrize(("metrics", "read_as"), [
    (["runtime"], ["time"]),
    (["Time", "PAPI_TOT_INS", "flops", "MyCount"], ["time", "instructions", "flops", "MyCount"]),
    (["time", "runtime"], ["time", "runtime"]),          # which is the time: the user's to say
    (["wall_time", "WALLTIME"], ["wall_time", "WALLTIME"]),
])
def test_extrap_metric_names(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                             metrics: list[str], read_as: list[str]) -> None:
    """A metric takes apmt's name where the alias file lists its own (Extra-P's examples
    call the time runtime), unless another metric of the file would take the same; any
    other keeps its name as written. Each renaming is said, naming the file."""
    source = tmp_path / "metrics.txt"
    source.write_text("PARAMETER p\nPOINTS 1 2 4\nREGION main\n" + "".join(
        f"METRIC {metric}\nDATA 3\nDATA 2\nDATA 1.5\n" for metric in metrics))
    with caplog.at_level(logging.WARNING):
        table = read_extrap_text([source])
    assert table["metric"].drop_duplicates().tolist() == read_as
    renamed = [(old, new) for old, new in zip(metrics, read_as, strict=True) if old != new]
    assert caplog.messages == [f"{source}: metric {old!r} read as apmt's {new!r}"
                               for old, new in renamed]


def test_extrap_file_without_process_count(tmp_path: Path, cli) -> None:
    """Refused in one line that says how to make the file importable; imported when the
    user says which parameter counts the processes, or how many every run used (a study
    of sizes on one node). Either is kept in the table's provenance."""
    source = EXTRAP_FILES / "one_parameter_1.txt"
    output = tmp_path / "table.csv"
    run = cli("import", "extrap-text", source, "-o", output)
    assert run.code == 2 and not output.exists()
    assert run.err.splitlines() == [
        f"apmt: error: {source}: no parameter 'p' is among x: {NO_P_HINT}, or say which "
        "parameter counts them, or how many every run used (apmt import --processes)"]
    x_values = [20, 30, 40, 50, 60]
    for processes, p_values, params in (("x", x_values, []), ("4", [4], ["x"])):
        run = cli("import", "extrap-text", source, "--processes", processes, "-o", output)
        assert run.code == 0, run.err
        table = pd.read_csv(output)
        assert [c for c in table.columns if c not in ("kernel", "metric", "rep", "value")] \
            == ["p", *params]
        assert sorted(table["p"].unique()) == p_values and len(table) == 30
        provenance = json.loads(layout.sidecar(output).read_text())
        assert provenance["processes"] == processes
    assert sorted(table["x"].unique()) == x_values


@pytest.mark.parametrize(("fmt", "processes", "problem"), [
    ("extrap-text", "4", "the file names its process count ('p' among p, n): processes=4"),
    ("extrap-text", "0", "processes=0: a count of processes is 1 or more"),
    ("extrap-text", "size", "processes='size' is not among p, n"),
    ("cube", "4", "processes=4: only for extrap-text, caliper; cube profiles say how many"),
])
def test_processes_named_wrongly(measured_data: Path, fmt: str, processes: str,
                                 problem: str) -> None:
    """RELeARN's file names p already; a cube set's profiles know their ranks."""
    source = measured_data / ("relearn/relearn_data.txt" if fmt == "extrap-text"
                              else "scorep_counters/mm_cubeset")
    with pytest.raises(ApmtError, match=re.escape(problem)):
        import_profiles(fmt, [source], processes)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_file_given_twice(tmp_path: Path, fmt: str) -> None:
    """Any format: a file given twice, under any name, is refused before it is read."""
    source = tmp_path / "profile"
    source.write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(source)
    with pytest.raises(ApmtError, match=f"^{re.escape(str(source))}: given twice; "):
        import_profiles(fmt, [source, source])
    for other in (tmp_path / "sub" / ".." / "profile", tmp_path / "link"):
        with pytest.raises(ApmtError, match=re.escape(f"{other}: given twice (also as {source})")):
            import_profiles(fmt, [source, other])


def test_extrap_file_given_twice_writes_nothing(tmp_path: Path, cli) -> None:
    source = EXTRAP_FILES / "two_parameter_5.txt"
    output = tmp_path / "table.csv"
    assert cli("import", "extrap-text", source, "-o", output).code == 0
    output.unlink()
    run = cli("import", "extrap-text", source, source, "-o", output)
    assert run.code == 2 and not output.exists()
    assert run.err.splitlines() == [
        f"apmt: error: {source}: given twice; name each input once"]


@pytest.mark.parametrize(("text", "problem"), [
    ("PARAMETER p\nPOINTS (4 1) (8 1)\n", "point '4 1' has 2 values for 1 parameter(s)"),
    ("PARAMETER p\nPOINTS 4 8\nREGION r\nDATA 1\nPARAMETER q\n", "PARAMETER 'q' after POINTS"),
    ("PARAMETER n\nPOINTS 4 8\nREGION r\nDATA 1\n", f"no parameter 'p' is among n: {NO_P_HINT}"),
    ("PARAMETER p p\nPOINTS (4 1)\n", "line 1: parameter 'p' named twice"),
    ("PARAMETER processes\nPARAMETER n p\n", "line 2: parameter 'p' named twice"),
    ("PARAMETER\nPOINTS 4 8\n", "line 1: PARAMETER names no parameter"),
    ("PARAMETER p n\nPOINTS (4 1) 8 (16 1)\n", "line 2: '8' outside the parentheses"),
    ("PARAMETER p\nPOINTS 4 8\nRUN r\n", "line 3: unknown keyword 'RUN'"),
    ("PARAMETER p\nPOINTS 4 8\n", "no DATA lines"),
])
def test_malformed_extrap_text(tmp_path: Path, text: str, problem: str) -> None:
    source = tmp_path / "bad.txt"
    source.write_text(text)
    with pytest.raises(ApmtError, match=f"^{re.escape(str(source))}: ") as error:
        read_extrap_text([source])
    assert problem in str(error.value)


def test_collectives(measured_data: Path) -> None:
    source = measured_data / "mpi_collectives" / "mpi_data.csv"
    table, kind = import_profiles("collectives", [source])
    assert kind == "communication"
    assert list(table.columns) == ["op", "library", "calls", "bytes", "time", "p"]
    series = table[["op", "library"]].drop_duplicates()
    assert len(series) == 14
    assert set(series["library"]) == {"IntelMPI", "OpenMPI"}
    assert set(series["op"]) == {f"MPI_{name}" for name in (
        "Allgather", "Allreduce", "Alltoall", "Barrier", "Bcast", "Gather", "Reduce")}
    assert sorted(table["p"].unique()) == [32, 64, 128, 256, 512]
    assert table["bytes"].isna().all()
    raw = pd.read_csv(source)
    merged = table.merge(raw, left_on=["library", "op", "p"],
                         right_on=["mpi", "variable", "Ranks"], validate="one_to_one")
    assert len(merged) == len(table) == len(raw)
    assert np.allclose(merged["time"], merged["N"] * merged["mean"] * 1e-6, rtol=1e-12)
    assert (merged["calls"] == merged["N"]).all()


def test_collectives_missing_column(tmp_path: Path) -> None:
    source = tmp_path / "c.csv"
    source.write_text("mpi,variable,Ranks,mean\nIntelMPI,MPI_Bcast,4,1.0\n")
    with pytest.raises(ApmtError, match="missing column 'N'"):
        read_collectives([source])
