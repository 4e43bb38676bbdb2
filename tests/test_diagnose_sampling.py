"""Eq. 1 of the APMT paper in the diagnosis: the NRMSE of the sampled time shares against
cachegrind's exact instruction shares, on the LAMMPS studies the repository carries (perf-clock
and cachegrind at P=1..32, data/README.md) and on planted tables whose NRMSE is known by hand.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from apmt.diagnose import sampling, validity
from apmt.diagnose.study import read_study
from apmt.tables import write_table

REPOSITORY = Path(__file__).resolve().parents[1]
PAIR = "LAMMPS_NS::PairLJCut::compute"
NEIGHBOURS = "LAMMPS_NS::NPairHalfBinAtomonlyNewton::build"
PERF_CLOCK = {"name": "perf-clock", "simulated": False,
              "provenance": {"frequency_hz": 1000, "metrics": {"time": "cpu-clock"}}}
CACHEGRIND = {"name": "cachegrind", "simulated": True,
              "provenance": {"metrics": {"instructions": "Ir"}}}


def lammps_study(tmp_path: Path, name: str) -> Path:
    """A study folder of one of the carried LAMMPS studies, its provenance where the
    diagnosis reads it."""
    source = REPOSITORY / "data" / "lammps" / name
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy2(source / "measurements.csv", folder / "measurements.csv")
    shutil.copy2(source / "provenance.json", folder / "measurements.csv.provenance.json")
    return folder


def planted(folder: Path, time: dict[str, float], instructions: dict[str, float],
            backends: list[dict]) -> Path:
    """A study at P=2, one run, ranks 0 and 1 alike, with the given backends."""
    records = [{"kernel": kernel, "metric": metric, "p": 2, "rep": 1, "rank": rank,
                "value": value}
               for metric, values in (("time", time), ("instructions", instructions))
               for kernel, value in values.items() for rank in (0, 1)]
    folder.mkdir(parents=True)
    write_table(pd.DataFrame(records), folder / "measurements.csv")
    (folder / "measurements.csv.provenance.json").write_text(
        json.dumps({"backends": backends, "params": []}))
    return folder


def accuracy_findings(folder: Path) -> list:
    [section] = validity.sections(folder)
    return [f for f in section.findings if "Eq. 1" in f.text]


def test_planted_shares_give_eq1_by_hand(tmp_path: Path) -> None:
    # own functions: time shares 0.6, 0.3, 0.1 against instruction shares 0.5, 0.4, 0.1;
    # the run-time system, MPI calls and the application's row stay out of both sides
    time = {"a": 6.0, "b": 3.0, "c": 1.0, "<app>": 20.0, "<kernel>": 5.0, "MPI_Send": 4.0,
            "<libmpi>": 2.0}
    instructions = {"a": 5e9, "b": 4e9, "c": 1e9, "MPI_Send": 9e9, "<libmpi>": 3e9,
                    "<loader>": 7e9}
    folder = planted(tmp_path / "s", time, instructions, [PERF_CLOCK, CACHEGRIND])
    [row] = sampling.accuracy(read_study(folder)).to_dict("records")
    by_hand = math.sqrt(0.6 * 0.1 ** 2 + 0.3 * 0.1 ** 2 + 0.1 * 0.0) / (0.6 - 0.1)
    assert row["nrmse"] == pytest.approx(by_hand, rel=1e-9)
    assert row["functions"] == 3
    assert row["samples"] == pytest.approx(10.0 * 2 * 1000)      # per rank x ranks x Hz
    # 0.19 is above the 10% threshold: a warning naming the run's NRMSE and the threshold
    [finding] = accuracy_findings(folder)
    assert finding.severity == "warning", finding.text
    assert "19.0% at P=2" in finding.text and "threshold 10%" in finding.text
    assert "exceeded in 1 of 1 runs" in finding.text


def test_only_sampled_time_says_there_is_no_reference(tmp_path: Path) -> None:
    folder = planted(tmp_path / "s", {"a": 6.0, "b": 3.0, "<kernel>": 1.0}, {}, [PERF_CLOCK])
    [finding] = accuracy_findings(folder)
    assert finding.severity == "info"
    assert "not checked" in finding.text and "no exact reference" in finding.text
    assert "%" not in finding.text and "threshold" not in finding.text   # no number made up
    assert sampling.accuracy(read_study(folder)).empty


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("lammps")
    return {name: lammps_study(folder, name) for name in ("p1-32", "lj-size0.8-p1-32")}


def test_lammps_runs_are_compared_at_every_p(studies: dict[str, Path]) -> None:
    table = sampling.accuracy(read_study(studies["p1-32"]))
    assert sorted(set(table["p"])) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    assert len(table) == 20                                   # two repetitions per P
    assert table["nrmse"].between(0, 1).all() and table["nrmse"].notna().all(), table
    assert (table["functions"] >= 2).all()
    # the noise alone explains part of the error, never more than the whole (a median)
    assert (table["noise"] > 0).all() and table["noise"].median() < table["nrmse"].median()
    # 0.8^3 / 0.6^3 = 2.4 times the atoms: more samples, so a smaller error
    larger = sampling.accuracy(read_study(studies["lj-size0.8-p1-32"]))
    assert larger["samples"].median() > 2 * table["samples"].median()
    assert larger["nrmse"].median() < table["nrmse"].median()


def test_lammps_validity_reports_the_nrmse_and_warns_when_shares_are_moved(
        studies: dict[str, Path], tmp_path: Path) -> None:
    folder = studies["lj-size0.8-p1-32"]
    [finding] = accuracy_findings(folder)
    assert finding.severity == "info", finding.text          # all runs below 10%
    assert "cachegrind's instruction shares" in finding.text
    assert "at P=1" in finding.text and "at P=32" in finding.text
    # half of the pair force's sampled time booked on the neighbour build: a sampler that
    # misplaces time, far beyond what sampling noise gives
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    table = pd.read_csv(moved / "measurements.csv")
    time = table["metric"] == "time"
    pair = table.loc[time & (table["kernel"] == PAIR)].set_index(["p", "rep"])["value"]
    table.loc[time & (table["kernel"] == PAIR), "value"] /= 2
    neighbours = time & (table["kernel"] == NEIGHBOURS)
    keys = pd.MultiIndex.from_frame(table.loc[neighbours, ["p", "rep"]])
    table.loc[neighbours, "value"] += pair.reindex(keys).to_numpy() / 2
    write_table(table, moved / "measurements.csv")
    [warning] = accuracy_findings(moved)
    assert warning.severity == "warning", warning.text
    assert "exceeded in 20 of 20 runs" in warning.text
    assert sampling.accuracy(read_study(moved))["nrmse"].min() > 0.1
