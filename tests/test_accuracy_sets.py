"""The accuracy benchmark's data sets (benchmarks/accuracy.py) are in the repository: every
set reads, leaves at least 3 P to fit below what it holds out, and the NPB sets carry the
provenance of their runs (data/README.md); one of them, evaluated as the benchmark does,
shows apmt ahead of the naive power law and inside its intervals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import load_benchmark

from apmt.evaluate import evaluate, parse_holdout, series_points

# a folder of the machine the data was profiled on, which no bundled provenance may name
MACHINE_PATH = re.compile(r"/(root|home|tmp|work)/")


@pytest.fixture(scope="module")
def accuracy():
    return load_benchmark("accuracy")


def test_every_set_reads_and_leaves_three_p_to_fit(accuracy, measured_data: Path) -> None:
    """Held out: the largest P (the mm cube set: size), or the largest class of the P x
    size sets (``_size``), whose other classes keep every P."""
    assert len(accuracy.SETS) == 133
    for name, spec in accuracy.SETS.items():
        table, kind = accuracy.read_set(measured_data, spec)
        everything = series_points(table, kind, list(spec.params))
        held = parse_holdout(spec.holdout, everything)
        column, values = next(iter(held.items()))
        fitted = everything[~everything[column].isin(values)]
        primary = "p" if everything["p"].nunique() > 1 else column
        assert fitted[primary].nunique() >= 3, name
        assert everything[column].isin(values).any(), name
    for name in (name for name in accuracy.TOGETHER if name.startswith("npb_")):
        table, _ = accuracy.read_set(measured_data, accuracy.SETS[name])
        classes = name.split("-")[1].removesuffix("_size")
        assert table[accuracy.SETS[name].params[0]].nunique() == len(classes), name


def test_the_npb_sets_carry_their_runs_provenance(accuracy, measured_data: Path) -> None:
    """Each NPB folder: its study, the runs' P and repetitions as measured, the host's
    oversubscribed runs named, and no path of the machine it was built on."""
    for bench in accuracy.NPB:
        folder = measured_data / "npb" / bench
        text = (folder / "provenance.json").read_text()
        provenance = json.loads(text)
        assert not MACHINE_PATH.search(text), bench
        table, _ = accuracy.read_set(measured_data, accuracy.SETS[f"npb_{bench}"])
        assert sorted(table["p"].unique()) == provenance["p_values"], bench
        assert provenance["repetitions"] == 2 and provenance["study_file"].endswith(".yaml")
        assert provenance["command"].startswith("NPB_DIR/bin/")
        assert all(run.startswith("p") for run in provenance["oversubscribed_runs"])
        assert "NPB_DIR/bin/" in (folder / "study.yaml").read_text()


@pytest.mark.parametrize(("name", "ratio", "points", "inside_at_least"), [
    ("npb_cg-A", 0.5, 150, 0.9), ("minife", 0.6, 500, 0.8), ("graph500", 0.6, 400, 0.85),
    ("miniamr", 0.6, 400, 0.75), ("prk_pic", 0.6, 350, 0.85), ("pennant", 0.65, 550, 0.85),
    ("prk_dgemm", 0.85, 200, 0.9), ("prk_p2p", 0.3, 220, 0.85),
    ("prk_random", 0.55, 240, 0.85), ("prk_stencil", 0.7, 170, 0.85),
    ("prk_nstream", 0.3, 170, 0.9), ("prk_sparse", 0.6, 180, 0.8),
    ("prk_reduce", 0.3, 175, 0.9), ("prk_global", 0.3, 170, 0.9),
    ("tealeaf", 0.5, 600, 0.88), ("minimd", 0.8, 400, 0.9), ("comd", 0.9, 340, 0.9),
    ("quicksilver", 0.5, 750, 0.9), ("minivite", 0.9, 200, 0.9),
    ("snap", 0.3, 150, 0.85), ("amg", 0.6, 550, 0.88),
    ("cosp2", 0.3, 190, 0.85), ("nekbone", 0.3, 370, 0.9), ("hpcg", 0.3, 240, 0.9),
    ("minighost", 0.3, 280, 0.9), ("minixyce", 0.3, 470, 0.88),
    ("miniweather", 0.3, 210, 0.8), ("milc", 0.3, 400, 0.8), ("hpgmg", 0.95, 430, 0.85)])
def test_a_set_added_later_is_predicted_ahead_of_the_power_law(
        accuracy, measured_data: Path, name: str, ratio: float, points: int,
        inside_at_least: float) -> None:
    """Sets profiled after apmt's rules were set, evaluated as the benchmark does (one run):
    NPB CG class A, fitted at P = 1..8, errs by 4.2% at P = 16 (median) against the power
    law's 20.0%, 98% inside its 90% intervals; miniFE, a C++ finite-element mini-app,
    fitted at P = 1..8, by 7.8% at P = 16 and 32 against 16.6%, 84% inside; Graph500's
    breadth-first search, fitted at P = 1, 2, 4, 8, by 6.1% at 16 and 32 against 19.3%, 94%
    inside (nothing changed for it but the tracer's name, apmt.collect.backends.perf);
    miniAMR's adaptive mesh, fitted at P = 1, 2, 4, 8, by 6.2% at 16 and 32 against 14.8%,
    80% inside (nothing changed for it); the ParRes particle-in-cell kernel, fitted at P =
    1..8, by 0.21% at 16 and 32 against 2.7%, 92% inside (nothing changed for it); PENNANT's
    unstructured-mesh hydrodynamics, fitted at P = 1..8, by 0.83% at 16 and 32 against 1.44%,
    90% inside; the ParRes DGEMM, fitted at P = 1..8, by 32.8% at 16 and 32 against 43.9%,
    all inside (nothing changed for either); the ParRes Synch_p2p pipeline, fitted at P =
    1..8, by 7.7% at 16 and 32 against 42.5%, 87% inside (after the tracer's own calls were
    given to it, apmt.names.tracer_callees); the ParRes Random's table updates, fitted at P =
    1, 2, 4, 8, by 13.9% at 16 and 32 against 30.4%, 89% inside; the ParRes Stencil's halo
    exchanges, fitted at P = 1..8, by 12.4% at 16 and 32 against 20.3%, 88% inside; the ParRes
    Nstream's triad, fitted at P = 1..8, by 2.4% at 16 and 32 against 11.7%, 98% inside
    (nothing changed for any of the three); the ParRes Sparse's gathered matrix-vector
    products, fitted at P = 1, 2, 4, 8, by 10.7% at 16 and 32 against 19.7%, 84% inside
    (profiled after the rule that no part exceeds the whole, nothing changed for it); the
    ParRes Reduce, weak scaling (its vector per rank), fitted at P = 1..8, by 3.6% at 16 and
    32 against 45.7%, all inside (nothing changed for it); the ParRes Synch_global's gathered
    strings, fitted at P = 1..8, by 6.6% at 16 and 32 against 59.1%, 99% inside (profiled
    after the latest trend, nothing changed for it; 23.2% without the trend, which carries
    the loader's counts on flat from P = 6 and 8); TeaLeaf's implicit heat conduction (CG
    with a polynomial preconditioner), fitted at P = 1..8, by 11.0% at 16 and 32 against
    30.1%, 93% inside (profiled after the formulas left out rounding, nothing else changed
    for it; 14.2% without the latest trend); miniMD's Lennard-Jones molecular dynamics,
    fitted at P = 1..8, by 6.3% at 16 and 32 against 9.2%, 96% inside (profiled after
    TeaLeaf, nothing changed for it; 7.9% without the latest trend); CoMD's, its process
    grid given on its command line ({px} {py} {pz}), by 9.8% against 11.9%, 98% inside
    (profiled after miniMD, nothing changed for it; 9.5% without the latest trend);
    Quicksilver's Monte Carlo transport, its grid given the same way, by 3.9% against 9.3%,
    95% inside (profiled after CoMD, nothing changed for it; 4.4% without the trend);
    miniVite's Louvain community detection, fitted at P = 1, 2, 4, 8, by 14.3% at 16 and 32
    against 18.0%, 97% inside (profiled after Quicksilver, nothing changed for it); SNAP's
    discrete-ordinates sweeps, fitted at P = 1..8, by 3.4% at 16 and 32 against 21.8%, 90%
    inside (profiled after miniVite, nothing changed for it); AMG's algebraic multigrid, weak
    scaling (its points per rank), fitted at P = 1..8, by 1.2% at 16 and 32 against 3.3%, 93%
    inside (profiled after SNAP, nothing changed for it); CoSP2's SP2 purification, fitted at
    P = 1..8, by 0.14% at 16 and 32 against 1.7% (its counts fall exactly as 1/P; its times
    11.5% against 19.8%), 91% inside (profiled after AMG, nothing changed for it); Nekbone's
    spectral elements, weak scaling (its elements per rank), fitted at P = 1..8, by 0.02% at
    16 and 32 against 1.7% (its counts stay; its times 25.3% against Extra-P's 11.6%), 96%
    inside (profiled after CoSP2, nothing changed for it); HPCG's multigrid-preconditioned CG,
    weak scaling (its rows per rank), fitted at P = 1..8, by 0.92% at 16 and 32 against
    4.7%, 95% inside (profiled after Nekbone, nothing changed for it); miniGhost's halo
    exchange, fitted at P = 1..8, by 1.75% at 16 and 32 against 11.5%, 98% inside (profiled
    after HPCG, nothing changed for it); miniXyce's circuit simulation, fitted at P = 1..8,
    by 0.05% at 16 and 32 against 8.3% (its times 9.3% against 32%), 91% inside (profiled
    after miniGhost, nothing changed for it); miniWeather's atmospheric dynamics, fitted at
    P = 1..8, by 0.19% at 16 and 32 against 11.5% (its times 18.4% against 28.4%), 84% inside
    (profiled after miniXyce, nothing changed for it); MILC's lattice QCD (HISQ RHMC),
    fitted at P = 1..8, by 0.11% at 16 and 32 against 2.27% (its times 31.2% against
    34.4%), 86% inside (profiled after miniWeather, nothing changed for it); HPGMG-FV's
    full multigrid, its boxes given per rank ({boxes/p}), fitted at P = 1, 2, 4, 8, by 0.96% at
    16 and 32 against 1.14% (its counts fall as 1/P, which every method follows; its times
    19.5% against 26.0%), 91% inside (profiled after MILC, nothing changed for it)."""
    spec = accuracy.SETS[name]
    table, kind = accuracy.read_set(measured_data, spec)
    errors = evaluate(table, kind, list(spec.params), spec.holdout, ["powerlaw"], name,
                      spec.per_rank)
    median = errors.groupby("method")["ape"].median()
    assert median["apmt"] < ratio * median["powerlaw"]
    ours = errors[errors["method"] == "apmt"]
    inside = (ours["lower"] <= ours["measured"]) & (ours["measured"] <= ours["upper"])
    assert len(ours) >= points and np.mean(inside) >= inside_at_least


def test_the_new_applications_carry_their_provenance(accuracy, measured_data: Path) -> None:
    """HPCCG, miniFE, CloverLeaf, Graph500, the ParRes transpose, miniAMR, the ParRes PIC,
    PENNANT, the ParRes DGEMM, Synch_p2p, Random, Stencil, Nstream, Sparse, Reduce,
    Synch_global, TeaLeaf, miniMD, CoMD, Quicksilver, miniVite, SNAP, AMG, CoSP2, Nekbone,
    HPCG, miniGhost, miniXyce and miniWeather:
    their study, the runs as measured, no path of the machine they were built on; every
    function timed by perf also counted by cachegrind under the same name (miniFE's templates
    once took two names, miniAMR's PLT stub memcpy@plt one: apmt.collect.backends.perf, and
    the PIC kernel's fmod two: apmt.names.joined_aliases; the Synch_p2p's tracer sized its
    messages with PMPI_Get_count, time only: apmt.names.tracer_callees)."""
    for name in accuracy.PROFILED_APPS:
        folder = measured_data / name
        text = (folder / "provenance.json").read_text()
        provenance = json.loads(text)
        table, _ = accuracy.read_set(measured_data, accuracy.SETS[name])
        assert sorted(table["p"].unique()) == provenance["p_values"], name
        assert provenance["repetitions"] == 2
        assert provenance["command"].startswith("APP_DIR/")
        assert not MACHINE_PATH.search(text), name
        assert "APP_DIR/" in (folder / "study.yaml").read_text()
        functions = table[~table["kernel"].str.startswith("<")]
        metrics = functions.groupby("kernel")["metric"].nunique()
        timed = set(functions.loc[functions["metric"] == "time", "kernel"])
        assert (metrics[sorted(timed)] >= 12).all(), name
