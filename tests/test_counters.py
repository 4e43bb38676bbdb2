"""Counter mode from what a machine can measure (apmt.counters): derived cycles, cachegrind's
hits per level, CPI_core and BF_mem split across runs, and Eq. 2 at new points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apmt import counters
from apmt.errors import ApmtError
from apmt.machine import load_machine
from apmt.model import Model, build_model
from apmt.predict import contributions, memory_time
from apmt.series import point_values

DATA = Path(__file__).resolve().parents[1] / "data"
MACHINE = load_machine("generic-x86-2core-vm")
PAIR = "LAMMPS_NS::PairLJCut::compute"


def planted_runs(cpi_core: float, bf_mem: float, t_mem: np.ndarray, noise: float = 0.0,
                 seed: int = 1) -> pd.DataFrame:
    """One kernel's runs whose CPI is CPI_core + BF_mem * T_mem per instruction."""
    rng = np.random.default_rng(seed)
    cpi = (cpi_core + bf_mem * t_mem) * (1 + noise * rng.standard_normal(len(t_mem)))
    return pd.DataFrame({"cpi": cpi, "t_mem": t_mem})


def test_split_recovers_a_planted_core_cpi_and_blocking_factor():
    t_mem = np.linspace(1.5, 3.0, 8)
    result = counters.split(planted_runs(0.4, 0.3, t_mem, noise=0.01))
    assert result.path == counters.ACROSS
    low, high = result.bf_mem_interval
    assert low <= 0.3 <= high and high - low < counters.MAX_BF_WIDTH
    assert result.cpi_core == pytest.approx(0.4, rel=0.1)
    assert result.cpi_core_interval[0] <= 0.4 <= result.cpi_core_interval[1]


def test_split_says_none_when_the_memory_time_does_not_move():
    result = counters.split(planted_runs(0.4, 0.3, np.full(6, 2.0), noise=0.02))
    assert result.path == counters.NONE and result.bf_mem is None
    assert "varies by 0.0%" in result.why
    assert result.cpi_core == pytest.approx(1.0, rel=0.05)    # the mean CPI: 0.4 + 0.3 * 2


def test_split_says_none_when_noise_hides_the_slope():
    result = counters.split(planted_runs(0.4, 0.3, np.linspace(2.0, 2.2, 6), noise=0.2))
    assert result.path == counters.NONE and result.why.startswith("not determined: BF_mem")


def test_split_needs_three_runs():
    assert counters.split(planted_runs(0.4, 0.3, np.array([1.0, 2.0]))).path == counters.NONE


def test_cachegrind_last_level_hits_and_derived_cycles():
    table = pd.DataFrame({"kernel": "k", "p": 1, "rep": 1,
                          "metric": ["l1d_misses", "llc_misses", "time", "instructions"],
                          "value": [100.0, 30.0, 2.0, 1e9]})
    completed, how = counters.complete(table, MACHINE)
    hits = completed[completed["metric"] == "llc_hits"]["value"]
    assert hits.tolist() == [70.0]
    assert how.cycles == "derived" and how.clock_ghz == MACHINE.frequency_ghz
    assert how.levels == ("llc_hits", "llc_misses")
    runs = counters.per_run(completed, how, MACHINE, [])
    assert runs["cycles"].iloc[0] == pytest.approx(2.0 * MACHINE.hertz)
    assert counters.complete(table, None)[1].cycles == "none"
    assert "llc_hits" not in set(counters.complete(table, None)[0]["metric"])


@pytest.fixture(scope="module")
def lammps() -> pd.DataFrame:
    return pd.read_csv(DATA / "lammps" / "p1-32" / "measurements.csv")


@pytest.fixture(scope="module")
def lammps_model(lammps: pd.DataFrame) -> Model:
    return build_model(lammps[lammps["p"] <= 8], ["size"], source="lammps", machine=MACHINE,
                       app_kernel="<app>")


def test_lammps_is_modelled_in_counter_mode_from_sampled_time(lammps_model: Model):
    assert lammps_model.mode == "counters"
    assert lammps_model.counters["cycles"] == "derived"
    assert any("cycles derived" in note for note in lammps_model.notes)
    entry = lammps_model.cpi[PAIR]
    assert lammps_model.kernel_metric(PAIR) == "instructions"
    assert entry.path in (counters.ACROSS, counters.NONE) and entry.why
    # LJ's pair loop fits in the caches: no memory access at any P, so T_mem sums L1 and LLC
    if entry.path == counters.ACROSS:
        assert 0.0 <= entry.bf_mem <= 1.0 and "llc_misses" not in entry.levels
    restored = Model.from_dict(lammps_model.to_dict())
    assert restored.cpi[PAIR] == entry and restored.counters == lammps_model.counters


def test_lammps_kernel_time_at_held_out_p(lammps_model: Model, lammps: pd.DataFrame):
    """The pair loop's time (computation and memory) at P = 16 and 32 from P <= 8, against
    the measured mean; its interval holds the CPI's scatter over runs too."""
    targets = pd.DataFrame({"p": [16, 32], "size": [0.6, 0.6]})
    values = point_values(targets, ["size"])
    terms = [bounds for source, _, _, bounds in contributions(lammps_model, values)
             if source == PAIR]
    predicted = sum(bounds[0] for bounds in terms)
    measured = lammps[(lammps["kernel"] == PAIR) & (lammps["metric"] == "time")] \
        .groupby("p")["value"].mean().loc[[16, 32]].to_numpy()
    assert np.all(np.abs(predicted / measured - 1) < 0.10)
    comp = terms[0]
    instructions = lammps_model.fit_of(PAIR, "instructions").predict(values)
    assert np.all(comp[2] - comp[0] > (instructions[2] - instructions[0])
                  * lammps_model.cpi[PAIR].cpi / MACHINE.hertz)
    if lammps_model.cpi[PAIR].bf_mem is not None:
        assert np.all(memory_time(lammps_model, PAIR, values) > 0)


def test_time_mode_on_request_and_counter_mode_refused_without_a_machine(lammps):
    table = lammps[lammps["p"] <= 4]
    timed = build_model(table, ["size"], source="lammps", machine=MACHINE, mode="time")
    assert timed.mode == "time" and any("time mode asked for" in n for n in timed.notes)
    with pytest.raises(ApmtError, match="counter mode needs"):
        build_model(table, ["size"], source="lammps", mode="counters")
    with pytest.raises(ApmtError, match="mode 'fast'"):
        build_model(table, ["size"], source="lammps", mode="fast")


def test_predictions_carry_t_mem_even_where_bf_mem_is_not_determined(lammps_model: Model):
    from apmt.predict import predict

    table = predict(lammps_model, pd.DataFrame({"p": [16], "size": [0.6]}))
    memory = table[table["metric"] == "mem_total_time"].set_index("kernel")["predicted"]
    blocking = set(table.loc[table["metric"] == "bf_mem", "kernel"])
    counted = {k for k in lammps_model.cpi if lammps_model.kernel_metric(k) == "instructions"}
    assert PAIR in memory.index and memory[PAIR] > 0
    assert blocking == {k for k in counted if lammps_model.cpi[k].bf_mem is not None}


KEPT = (PAIR, "LAMMPS_NS::NPairHalfBinAtomonlyNewton::build",
        "LAMMPS_NS::FixNVE::initial_integrate", "<app>")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drop=st.lists(st.integers(0, 10_000), max_size=40),
       zero=st.lists(st.integers(0, 10_000), max_size=40),
       scale=st.floats(0.5, 2.0))
def test_messy_counter_tables_give_a_model_or_one_line(lammps, drop, zero, scale):
    """Rows missing, counts zeroed, one P's time scaled (a noisy run): counter mode builds a
    model whose every kernel took a known path with BF_mem in [0, 1], or refuses in one line
    (ApmtError); never a traceback."""
    table = lammps[(lammps["p"] <= 8) & lammps["kernel"].isin(KEPT)].reset_index(drop=True)
    table.loc[[i % len(table) for i in zero], "value"] = 0.0
    table = table.drop(index={i % len(table) for i in drop})
    noisy = (table["p"] == 4) & (table["metric"] == "time")
    table.loc[noisy, "value"] *= scale
    try:
        model = build_model(table, ["size"], source="messy", machine=MACHINE)
    except ApmtError as error:
        assert "\n" not in str(error)
        return
    for entry in model.cpi.values():
        assert entry.path in (counters.ACROSS, counters.NONE, counters.COUNTED)
        assert entry.bf_mem is None or 0.0 <= entry.bf_mem <= 1.0
    values = point_values(pd.DataFrame({"p": [16.0], "size": [0.6]}), ["size"])
    for _, _, _, bounds in contributions(model, values):
        assert all(np.isfinite(b).all() or np.isnan(b).all() for b in bounds)


def test_a_split_whose_memory_level_has_no_fit_takes_the_whole_cpi(lammps):
    """The pair loop's last-level misses, zero at every P, made positive at one: that series
    cannot be fitted, so its T_mem cannot be predicted and its CPI is taken whole, with the
    spread of its runs' CPI (not of the rejected split's residuals)."""
    table = lammps[lammps["p"] <= 8].copy()
    row = table.index[(table["kernel"] == PAIR) & (table["metric"] == "llc_misses")
                      & (table["p"] == 2)]
    table.loc[row, "value"] = 5.0
    entry = build_model(table, ["size"], source="lammps", machine=MACHINE,
                        app_kernel="<app>").cpi[PAIR]
    assert entry.path == counters.NONE and entry.bf_mem is None and entry.levels is None
    assert "not taken: llc_misses has no fit" in entry.why
    cpi = np.array(list(entry.per_run.values()))
    assert entry.cpi == pytest.approx(cpi.mean())
    assert entry.cpi_sd == pytest.approx(counters.predictive_sd(cpi - cpi.mean(), len(cpi) - 1))
