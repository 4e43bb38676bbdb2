"""The CUBE4 importer against real Score-P profiles in the repository's data/ folder."""

from __future__ import annotations

import io
import shutil
import struct
import tarfile
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pycubexr import CubexParser

from apmt.errors import ApmtError
from apmt.ingest import cube
from apmt.ingest.cube import parse_run_name, read_cube
from apmt.ingest.metrics import metric_name
from apmt.tables import check_table


@pytest.fixture(scope="module")
def data(measured_data: Path) -> Path:
    return measured_data


def checked(table: pd.DataFrame) -> pd.DataFrame:
    """The table must pass the contract as it is, without losing rows."""
    out = check_table(table, "test")
    assert len(out) == len(table)
    return out


def call_paths(profile: Path) -> dict[int, str]:
    """Cnode id -> call path, built straight from pycubexr (independent of the importer)."""
    names: dict[int, str] = {}
    with CubexParser(profile) as cube:
        for cnode in cube.all_cnodes():
            prefix = f"{names[cnode.parent.id]}/" if cnode.parent else ""
            names[cnode.id] = prefix + cnode.region.name
    return names


@pytest.mark.parametrize("run", ["blast.p64.r1", "time.p4.n2000.x1.r0"])
def test_exclusive_values_match_cube_dump(data: Path, run: str) -> None:
    """excl.csv holds one row per cnode and thread (one thread per rank here)."""
    folder = data / "scorep_counters" / run
    table = checked(read_cube([folder]))
    dump = pd.read_csv(folder / "excl.csv", skipinitialspace=True, dtype=str)
    dump = dump.melt(id_vars=["Cnode ID", "Thread ID"], var_name="name", value_name="text")
    dump["metric"] = dump["name"].map(metric_name)
    dump = dump[dump["metric"].isin(set(table["metric"]))]
    dump["kernel"] = dump["Cnode ID"].astype(int).map(call_paths(folder / "profile.cubex"))
    dump["rank"] = dump["Thread ID"].astype(int)
    assert set(dump["rank"]) == set(table["rank"]) == set(range(table["p"].iloc[0]))
    both = dump.merge(table, on=["kernel", "metric", "rank"], how="outer", indicator=True)
    assert not (both["_merge"] == "right_only").any()
    left_out = both[both["_merge"] == "left_only"]
    assert (left_out["text"].astype(float) == 0).all(), "only zero (unvisited) rows may be left out"
    matched = both[both["_merge"] == "both"]
    assert {"time", "visits"} <= set(matched["metric"])
    counters = matched[matched["metric"] != "time"]
    np.testing.assert_allclose(counters["value"], counters["text"].astype(float), rtol=1e-6)
    # excl.csv prints time to 6 significant digits (CSV rounding alone differs by up to 4.6e-6
    # relative), so the importer's time must agree with every digit printed.
    times = matched[matched["metric"] == "time"]
    rounded = [float(f"{value:.6g}") for value in times["value"]]
    assert rounded == times["text"].astype(float).tolist()


def test_lulesh_sample(data: Path) -> None:
    folder = data / "scorep_cube_sample" / "lulesh.p27.size25.r1"
    table = checked(read_cube([folder / "profile.cubex"]))
    assert set(table["p"]) == {27} and set(table["size"]) == {25.0} and set(table["rep"]) == {1}
    assert sorted(table["rank"].unique()) == list(range(27))
    assert set(table["metric"]) == {"time", "visits"}
    assert "lulesh2.0/int main(int, char**)/MPI_Init" in set(table["kernel"])
    with CubexParser(folder / "profile.cubex") as cube:
        root = cube.get_root_cnodes()[0]
        inclusive = cube.get_metric_values(cube.get_metric_by_name("time")).cnode_values(root)
    per_rank = table[table["metric"] == "time"].groupby("rank")["value"].sum()
    np.testing.assert_allclose(per_rank.to_numpy(), np.asarray(inclusive, float), rtol=1e-9)


def test_mm_cube_set(data: Path) -> None:
    table = checked(read_cube([data / "scorep_counters" / "mm_cubeset"]))
    assert sorted(table["x"].unique()) == [1, 10, 25, 50, 100, 250, 500, 1000, 2000]
    assert set(table["y"]) == set(table["z"]) == {1.0} and set(table["rep"]) == {1}
    assert set(table["p"]) == {1}, "no p in the names: one rank in the profiles"
    assert {"fp_ops", "papi_l2_tcm", "papi_l3_tcm", "time", "visits"} == set(table["metric"])
    fp_ops = table[(table["metric"] == "fp_ops") & (table["kernel"] == "main/mat_mul")]
    assert fp_ops.sort_values("x")["value"].is_monotonic_increasing


def test_a_cube_set_as_extra_p_writes_them(data: Path, tmp_path: Path) -> None:
    """Extra-P's cube sets also keep several profiles of one point in one directory, under
    any name (``profile1.cubex``), and mix names with a repetition and without, with the
    parameters in any order: each profile is one repetition of its point, none read twice
    or left out. Scalasca's summary.cubex beside a profile.cubex analyses that same run."""
    source = data / "scorep_counters" / "mm_cubeset"
    layout = {"mm.x1y1z1/profile1.cubex": "mm.x1y1z1.r1", "mm.x1y1z1/profile2.cubex":
              "mm.x10y1z1.r1", "mm.z1y1x10.r1/profile.cubex": "mm.x10y1z1.r1",
              "x10y1z1/profile.cubex": "mm.x10y1z1.r1",
              "x10y1z1/summary.cubex": "mm.x2000y1z1.r1"}
    for target, run in layout.items():
        (tmp_path / target).parent.mkdir(exist_ok=True)
        shutil.copy(source / run / "profile.cubex", tmp_path / target)
    table = checked(read_cube([tmp_path]))
    runs = table.groupby(["x", "rep"])["value"].size()
    assert sorted(runs.index) == [(1, 1), (1, 2), (10, 1), (10, 2)]
    alone = checked(read_cube([source / "mm.x10y1z1.r1"]))
    assert runs.to_list() == [len(alone)] * 4, "each profile read once, the summary not at all"
    first, second = (table[(table["x"] == 1) & (table["rep"] == rep)] for rep in (1, 2))
    assert first["value"].sum() != second["value"].sum(), "both of the folder's profiles"


def test_reading_is_fast(data: Path) -> None:
    start = time.perf_counter()
    read_cube([data / "scorep_counters" / "blast.p64.r1"])
    read_cube([data / "scorep_counters" / "mm_cubeset"])
    assert time.perf_counter() - start < 5


def negative_exclusive(profile: Path, metric: str) -> list[tuple[int, int]]:
    """(cnode id, location) where the callees' inclusive values add up to more than the cnode's
    own: a negative exclusive value. From pycubexr's inclusive values, without its clamping."""
    found = []
    with CubexParser(profile) as cube:
        values = cube.get_metric_values(cube.get_metric_by_name(metric))
        for cnode in cube.all_cnodes():
            own = values.cnode_values(cnode, convert_to_inclusive=True).astype(np.int64)
            callees = sum((values.cnode_values(child, convert_to_inclusive=True).astype(np.int64)
                           for child in cnode.get_children()), np.zeros_like(own))
            found += [(cnode.id, int(location)) for location in np.flatnonzero(own < callees)]
    return found


def test_negative_exclusive_counters_become_zero(data: Path, tmp_path: Path) -> None:
    """This Kripke profile (6 of its 128 ranks, see data/README.md) has callees that counted
    more PAPI_L3_DCA than their caller."""
    profile = data / "scorep_counters" / "hw_counter" / "L3_DCA_negative.cubex"
    negative = negative_exclusive(profile, "PAPI_L3_DCA")
    assert negative, "the raw profile must hold negative exclusive values, or this tests nothing"
    run = tmp_path / "kripke.p6.r1"
    run.mkdir()
    shutil.copy(profile, run / "profile.cubex")
    table = checked(read_cube([run]))
    assert (table["value"] >= 0).all()
    counter = table[table["metric"] == "papi_l3_dca"].set_index(["kernel", "rank"])["value"]
    paths = call_paths(profile)
    # one thread per rank: location i is rank i
    assert [counter[paths[cnode], location] for cnode, location in negative] == [0] * len(negative)


def test_metric_names() -> None:
    assert metric_name("PAPI_TOT_CYC") == "cycles"
    assert metric_name("PAPI_BR_MSP") == "branch_misses"
    assert metric_name("PAPI_L3_TCM") == "papi_l3_tcm"


@pytest.mark.parametrize(("name", "expected"), [
    ("lulesh.p27.size25.r1", {"p": 27, "size": 25, "rep": 1}),
    ("mm.x1000y1z1.r1", {"x": 1000, "y": 1, "z": 1, "rep": 1}),
    ("mm.x1.1,y1,1,z1.1.r1", {"x": 1.1, "y": 1.1, "z": 1.1, "rep": 1}),
    ("mm.a1.1b1.1c1.1", {"a": 1.1, "b": 1.1, "c": 1.1}),
    ("x1y1z1", {"x": 1, "y": 1, "z": 1}),
    ("kripke.p8.d2.g32.r1", {"p": 8, "d": 2, "g": 32, "rep": 1}),
])
def test_run_names(name: str, expected: dict[str, float]) -> None:
    assert parse_run_name(Path(name)) == expected


def test_garbage_file(tmp_path: Path) -> None:
    run = tmp_path / "app.p4.r1"
    run.mkdir()
    (run / "profile.cubex").write_bytes(b"this is not a tar archive\x00\xff" * 40)
    with pytest.raises(ApmtError, match="not a readable CUBE4 profile") as caught:
        read_cube([run])
    assert str(run / "profile.cubex") in str(caught.value)


@pytest.mark.parametrize("name", ["lulesh.p2.5.r1", "lulesh.size25.p", "lulesh.x.r1"])
def test_unparseable_directory_name(data: Path, tmp_path: Path, name: str) -> None:
    run = tmp_path / name
    run.mkdir()
    shutil.copy(data / "scorep_cube_sample" / "lulesh.p27.size25.r1" / "profile.cubex", run)
    with pytest.raises(ApmtError) as caught:
        read_cube([run])
    assert str(run) in str(caught.value)


def test_score_p_experiment_directories_take_p_from_their_profiles(data: Path,
                                                                  tmp_path: Path) -> None:
    """Score-P names its experiments scorep-<date>_<time>_<id>: no parameters, and p is
    the profile's number of ranks. Two runs at one P are two repetitions, not one run whose
    ranks add up."""
    profiles = {"scorep-20251127_1030_4411": "scorep_cube_sample/lulesh.p27.size25.r1",
                "scorep-20251127_1031_4412": "scorep_counters/blast.p64.r1",
                "scorep-20251127_1032_4413": "scorep_counters/blast.p64.r1"}
    runs = []
    for name, source in profiles.items():
        runs.append(tmp_path / name)
        runs[-1].mkdir()
        shutil.copy(data / source / "profile.cubex", runs[-1])
    table = checked(read_cube(runs))
    assert sorted(c for c in table.columns if c not in ("kernel", "metric", "rank", "value")) \
        == ["p", "rep"]
    assert table.groupby("p")["rep"].unique().map(sorted).to_dict() == {27: [1], 64: [1, 2]}
    blast = table[table["p"] == 64]
    first, second = (blast[blast["rep"] == rep].drop(columns="rep").reset_index(drop=True)
                     for rep in (1, 2))
    pd.testing.assert_frame_equal(first, second)


def test_p_in_name_must_match_ranks(data: Path, tmp_path: Path) -> None:
    run = tmp_path / "lulesh.p8.size25.r1"
    run.mkdir()
    shutil.copy(data / "scorep_cube_sample" / "lulesh.p27.size25.r1" / "profile.cubex", run)
    with pytest.raises(ApmtError, match="p=8 but the profile has 27"):
        read_cube([run])


def test_runs_with_different_parameters_are_refused(data: Path) -> None:
    with pytest.raises(ApmtError, match="same parameters"):
        read_cube([data / "scorep_counters" / "blast.p64.r1",
                   data / "scorep_cube_sample" / "lulesh.p27.size25.r1"])


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ApmtError, match="no such file"):
        read_cube([tmp_path / "nowhere"])


def test_a_zlib_bomb_is_refused_before_it_inflates(data: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A metric stored as one zlib block that inflates far beyond any profile's size (here
    8 MiB of zeros in 8 KiB, against a limit lowered to 1 MiB): one line, before pycubexr
    would inflate it whole."""
    monkeypatch.setattr(cube, "MAX_INFLATED_BYTES", 2 ** 20)
    source = data / "scorep_cube_sample" / "lulesh.p27.size25.r1" / "profile.cubex"
    block = zlib.compress(bytes(8 * 2 ** 20), 9)
    bomb = cube.ZDATA + struct.pack("<q", 1) + struct.pack("<3q", 0, 0, len(block)) + block
    target = tmp_path / "lulesh.p27.size25.r1" / "profile.cubex"
    target.parent.mkdir()
    with tarfile.open(source) as old, tarfile.open(target, "w") as new:
        for member in old.getmembers():
            content = old.extractfile(member).read() if member.isfile() else None
            if member.name == "0.data":
                content = bomb
                member.size = len(bomb)
            new.addfile(member, io.BytesIO(content) if content is not None else None)
    with pytest.raises(ApmtError) as caught:
        read_cube([target])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(target)), message
    assert "0.data" in message and "inflate beyond 1 MiB" in message, message
