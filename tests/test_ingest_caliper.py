"""The Caliper importer against the LULESH spot files in the repository's data/ folder."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from caliperreader import CaliperReader

from apmt.errors import ApmtError
from apmt.ingest.caliper import read_caliper
from apmt.tables import check_table

P_VALUES = [27, 64, 125, 216, 343]


@pytest.fixture(scope="module")
def data(measured_data: Path) -> Path:
    return measured_data


@pytest.fixture(scope="module")
def files(data: Path) -> list[Path]:
    return [data / "lulesh_caliper_opal" / f"{p}_cores.cali" for p in P_VALUES]


def checked(table: pd.DataFrame) -> pd.DataFrame:
    """The table must pass the contract as it is, without losing rows."""
    out = check_table(table, "test")
    assert len(out) == len(table)
    return out


def main_inclusive(path: Path) -> tuple[float, float]:
    """The root node's inclusive time from the file itself: average per rank and total."""
    reader = CaliperReader()
    reader.read(str(path))
    [record] = [r for r in reader.records if r.get("path") == ["main"]]
    return (float(record["avg#inclusive#sum#time.duration"]),
            float(record["sum#inclusive#sum#time.duration"]))


def test_lulesh_weak_scaling_set(files: list[Path]) -> None:
    start = time.perf_counter()
    table = checked(read_caliper(files))
    assert time.perf_counter() - start < 5
    assert sorted(table["p"].unique()) == P_VALUES
    assert set(table["metric"]) == {"time"} and set(table["size"]) == {30.0}
    assert set(table.columns) == {"kernel", "metric", "p", "size", "value"}
    assert (table.groupby("p")["kernel"].nunique() == 45).all()
    mpi = {kernel.rsplit("/", 1)[-1] for kernel in table["kernel"] if "MPI_" in kernel}
    assert len(mpi) == 13
    assert "main/lulesh.cycle/TimeIncrement/MPI_Allreduce" in set(table["kernel"])


@pytest.mark.parametrize("p", P_VALUES)
def test_exclusive_times_add_up_to_the_root(files: list[Path], p: int) -> None:
    path = files[P_VALUES.index(p)]
    table = read_caliper([path])
    average, total = main_inclusive(path)
    under_main = table[(table["kernel"] == "main") | table["kernel"].str.startswith("main/")]
    np.testing.assert_allclose(under_main["value"].sum(), total / p, rtol=1e-9)
    # All kernels: main plus MPI setup calls outside it (MPI_Comm_dup, ...: 12 to 56 ms).
    outside = table.drop(under_main.index)
    assert all(kernel.startswith("MPI_") and "/" not in kernel for kernel in outside["kernel"])
    assert 0 < table["value"].sum() - average < 0.1


def test_p_from_the_name_when_globals_lack_it(files: list[Path], tmp_path: Path) -> None:
    text = files[0].read_text()
    text = text.replace("data=mpi.world.size,", "data=other.size,")
    text = text.replace("data=jobsize,", "data=other.jobsize,")
    copy = tmp_path / "27_cores.cali"
    copy.write_text(text)
    table = checked(read_caliper([copy]))
    assert set(table["p"]) == {27}


def test_size_only_when_every_file_has_it(files: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "64_cores.cali"
    copy.write_text(files[1].read_text().replace("data=problem_size,", "data=other_size,"))
    table = checked(read_caliper([files[0], copy]))
    assert "size" not in table.columns and sorted(table["p"].unique()) == [27, 64]


def test_a_program_without_mpi_runs_as_many_processes_as_the_user_says(cli,
                                                                      tmp_path: Path) -> None:
    """RAJAPerf's sequential runs on quartz (tests/fixtures/caliper_rajaperf) name no
    process count: refused in one line that says how to give it; given, the two files
    are two problem sizes (its ProblemSizeRunParam global), not two repetitions of one."""
    fixtures = sorted((Path(__file__).parent / "fixtures" / "caliper_rajaperf").glob("*.cali"))
    output = tmp_path / "rajaperf.csv"
    refused = cli("import", "caliper", *fixtures, "-o", output)
    assert refused.code == 2 and not output.exists()
    assert refused.err.splitlines() == [
        f"apmt: error: {fixtures[0]}: no valid process count (mpi.world.size or jobsize "
        "global, or p in the file name, a whole number from 1 to 2147483647; found None); "
        "without MPI, say how many ran (apmt import --processes 1)"]
    done = cli("import", "caliper", *fixtures, "--processes", "1", "-o", output)
    assert done.code == 0, done.err
    table = checked(pd.read_csv(output))
    assert set(table["p"]) == {1} and not table.duplicated(["kernel", "size"]).any()
    assert sorted(table["size"].unique()) == [1048576, 2097152]
    stream = table[table["kernel"] == "RAJAPerf/Stream/Stream_TRIAD"].set_index("size")
    assert stream.loc[2097152, "value"] > 1.5 * stream.loc[1048576, "value"], \
        "twice the size, about twice the time"


@pytest.mark.parametrize(("name", "attribute", "seconds"), [
    ("lulesh-annotation-profile.cali", "sum#time.duration", 1.0),
    ("timeseries-ns.cali", "sum#time.duration.ns", 1e-9),
])
def test_caliper_aggregate_channels_give_exclusive_times(name: str, attribute: str,
                                                         seconds: float) -> None:
    """Files of Caliper's aggregate service (hatchet's tests, tests/fixtures/caliper_aggregate)
    hold each path's exclusive time per record (per thread, rank or snapshot), without a
    unit: each path's time is the sum of its records', in seconds."""
    source = Path(__file__).parent / "fixtures" / "caliper_aggregate" / name
    table = checked(read_caliper([source], "1"))
    reader = CaliperReader()
    reader.read(str(source))
    expected: dict[str, float] = {}
    for record in reader.records:
        if "path" in record and attribute in record:
            path = record["path"] if isinstance(record["path"], list) else [record["path"]]
            key = "/".join(map(str, path))
            expected[key] = expected.get(key, 0.0) + float(record[attribute]) * seconds
    measured = table.set_index("kernel")["value"]
    assert set(measured.index) == {k for k, v in expected.items() if v > 0}
    np.testing.assert_allclose(measured.to_numpy(), [expected[k] for k in measured.index],
                               rtol=1e-12)
    assert set(table["p"]) == {1} and (table["metric"] == "time").all()


@pytest.mark.parametrize(("processes", "problem"), [
    ("64", "27_cores.cali: the file says p=27, processes=64"),
    ("ranks", "processes=ranks: a Caliper file has no parameter to name"),
])
def test_a_process_count_given_must_agree_with_the_file(files: list[Path], processes: str,
                                                        problem: str) -> None:
    with pytest.raises(ApmtError, match=problem):
        read_caliper([files[0]], processes)


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\xff\xfe garbage", b"hello world\n"])
def test_garbage_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "27_cores.cali"
    path.write_bytes(content)
    with pytest.raises(ApmtError) as caught:
        read_caliper([path])
    assert str(path) in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ApmtError, match="no such file"):
        read_caliper([tmp_path / "8_cores.cali"])
