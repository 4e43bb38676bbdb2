"""Problem-size prediction on real LAMMPS runs (benchmarks/problem_size.py): fitted at
smaller sizes of the LJ melt, the model predicts size 1.0 (32,000 atoms) at P = 1, 2, 4, 8,
measured on this kind of machine for the purpose (data/lammps/lj-size1.0-p1-8).

The main kernel, LAMMPS_NS::PairLJCut::compute, does work in proportion to the atoms per
rank, size**3 / P. With that work expression its cachegrind instructions come out exact
(measured: 0.002% error) and its sampled time within 1% (median over P; fitted at size 0.8);
with the default size / P the fits at size 0.8 alone err by 36% (time). Fitted at sizes 0.6
and 0.8, each size has its own fit, and beyond them each P follows the power law in the size
through the two: the instructions come out exact with the default too (they err by 58% at
P = 1 from one function of P and the size).
The time fitted on sizes 0.6 and 0.8 together is not tested: size 0.6 ran on another host,
where LAMMPS did 1.9x the instructions per second, so no work law joins the two sizes' times
(the benchmark prints those errors too, about 40% either way)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import load_benchmark

KERNEL = "LAMMPS_NS::PairLJCut::compute"
WITH_WORK = "apmt work=size**3 / p"
DEFAULT = "apmt size/p"


@pytest.fixture(scope="module")
def errors(measured_data: Path) -> pd.DataFrame:
    return load_benchmark("problem_size").errors(measured_data)


def _kernel(errors: pd.DataFrame, scenario: str, metric: str, method: str) -> pd.Series:
    rows = errors[(errors["scenario"] == scenario) & (errors["metric"] == metric)
                  & (errors["kernel"] == KERNEL) & (errors["method"] == method)]
    assert sorted(rows["p"]) == [1, 2, 4, 8]
    return rows["error"]


def test_two_sizes_predict_the_main_kernels_instructions(errors) -> None:
    """Fitted on sizes 0.6 and 0.8: instructions are counted, not timed, so the host
    does not matter; the work expression is not needed where two sizes were measured."""
    assert _kernel(errors, "sizes 0.6, 0.8", "instructions", WITH_WORK).max() < 0.001
    assert _kernel(errors, "sizes 0.6, 0.8", "instructions", DEFAULT).max() < 0.001


def test_the_work_expression_predicts_the_main_kernels_time(errors) -> None:
    """Fitted on size 0.8 alone, measured on the same kind of host as size 1.0."""
    with_work = _kernel(errors, "size 0.8", "time", WITH_WORK)
    assert with_work.median() < 0.03 and with_work.max() < 0.10
    assert _kernel(errors, "size 0.8", "time", DEFAULT).median() > 0.2
    powerlaw = _kernel(errors, "size 0.8", "time", "powerlaw")
    assert with_work.median() < powerlaw.median()
