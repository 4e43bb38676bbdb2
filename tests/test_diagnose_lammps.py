"""`apmt diagnose -- mpirun -np 2 lmp ...` on LAMMPS itself (Debian's lmp, the LJ input of the
default study, shrunk to 13,500 atoms and 100 steps): the newcomer's one command measures and
assesses a real application, names its hot kernel with PerfExpert's bars, and fits the page.
The run must be long enough for the force loop to stand out from start-up: at 4,000 atoms
and 40 steps a fast core spends 0.02 s in the loop of a 0.35 s run, and the pair force's 3.6%
of the wall time falls below the 5% that makes a kernel key.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_diagnose_lcpi import MACHINE, WIDTH, why_not_here

from apmt.diagnose import lcpi, sampling, validity
from apmt.diagnose.study import read_study

REPOSITORY = Path(__file__).resolve().parents[1]
PAIR = "LAMMPS_NS::PairLJCut::compute"


@pytest.fixture(scope="module")
def lammps(tmp_path_factory: pytest.TempPathFactory, cli) -> dict:
    reason = why_not_here() or (None if shutil.which("lmp") else "needs lmp (Debian's lammps)")
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("lammps")
    shutil.copy2(REPOSITORY / "data" / "lammps" / "in.lj", folder / "in.lj")
    text = folder / "diagnosis.txt"
    result = cli("diagnose", "--machine", MACHINE, "--results", folder / "results",
                 "--name", "lj", "-o", text, "--html", folder / "diagnosis.html", "--",
                 "mpirun", "-np", "2", "lmp", "-in", str(folder / "in.lj"), "-var", "x", "0.75",
                 "-var", "y", "0.75", "-var", "z", "0.75", "-var", "steps", "100")
    assert result.code == 0, result.err
    return {"folder": folder / "results" / "diagnose" / "lj", "text": text.read_text(),
            "html": (folder / "diagnosis.html").read_text()}


def test_lammps_hot_kernel_is_assessed_with_every_measurable_category(lammps: dict) -> None:
    table = lcpi.assess(read_study(lammps["folder"]))
    rows = table[table["kernel"] == PAIR].set_index("category")
    assert not rows.empty, sorted(set(table["kernel"]))
    # the pair force loop: counted instructions, cycles derived from the sampled time
    assert 0.2 < rows.at[lcpi.OVERALL, "lcpi"] < 3.0, rows
    assert rows.at["data_accesses", "lcpi"] > rows.at["branches", "lcpi"]
    for category in ("floating_point", "data_tlb", "instruction_tlb"):
        assert rows.at[category, "assessment"] == "not measured"
    text = lammps["text"]
    assert f"LCPI of {PAIR}" in text and f"LCPI of {PAIR}" in lammps["html"]
    assert "Remedies for" in text
    assert all(len(line) <= WIDTH for line in text.splitlines())
    # one P: the scaling part says what it needs instead of guessing
    assert "3 or more process counts" in text


def test_lammps_sampling_is_compared_with_the_exact_reference(lammps: dict) -> None:
    """Eq. 1 of paper 000 in the validity part: sampled time shares against cachegrind's
    instruction shares, when the one command measured with both (no PMU here)."""
    data = read_study(lammps["folder"])
    if sampling.reference(data.provenance) is None:
        assert "no exact reference was measured" in lammps["text"]
        return
    [run] = sampling.accuracy(data).to_dict("records")
    assert run["functions"] >= 2 and 0 < run["nrmse"] < 1, run
    assert 0 < run["noise"] < 1, run
    [finding] = [f for f in validity.check(data) if "Eq. 1" in f.text]
    assert f"{run['nrmse']:.1%} at P=2" in finding.text
    assert "sampling vs reference (Eq. 1 of paper 000)" in lammps["text"]
