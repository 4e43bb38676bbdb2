"""The machine probe: a quick real run on this machine, the plateau rule, the file round trip."""

from __future__ import annotations

import os
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from apmt.machine import check_machine, load_machine
from apmt.probe import (
    build_chase,
    level_window,
    memory_window,
    model_caches,
    plateau,
    probe_machine,
    probe_sizes,
    write_machine,
)

MIB = 1 << 20
LEVELS = ("l1", "l2", "llc", "memory")


@pytest.fixture(scope="module")
def measured() -> dict:
    """One quick probe of this machine (about 6 s), shared by the tests below."""
    if not Path("/sys/devices/system/cpu/cpu0/cache").is_dir():
        pytest.skip("no cache information in sysfs here")
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    return probe_machine(quick=True)


def test_latencies_grow_from_l1_to_memory(measured: dict) -> None:
    ns = measured.fields["latency_ns"]
    for faster, slower in pairwise(LEVELS):
        assert ns[slower] >= 0.9 * ns[faster], (faster, slower, ns)  # equal within noise
    assert ns["memory"] > 2 * ns["l1"]


def test_l1_latency_and_clock_are_plausible(measured: dict) -> None:
    assert 0.5 <= measured.fields["latency_ns"]["l1"] <= 3.0
    assert 0.5 <= measured.fields["frequency_ghz"] <= 6.0
    # cycles are ns times the clock, and an L1 hit takes a handful of cycles on any core
    assert measured.fields["latency_cycles"]["l1"] == pytest.approx(
        measured.fields["latency_ns"]["l1"] * measured.fields["frequency_ghz"], abs=0.1)
    assert 2 <= measured.fields["latency_cycles"]["l1"] <= 8


def _getconf(name: str) -> int | None:
    if shutil.which("getconf") is None:
        return None
    result = subprocess.run(["getconf", name], capture_output=True, text=True, check=False)
    value = result.stdout.strip()
    return int(value) if result.returncode == 0 and value.isdigit() and int(value) > 0 else None


def test_cache_sizes_match_getconf(measured: dict) -> None:
    # The LLC is not compared: glibc reads it from another CPUID leaf than the kernel, and
    # hypervisors fill the two differently (on the development VM getconf says 320 MiB, sysfs
    # and lscpu 32 MiB).
    expected = {"l1d": _getconf("LEVEL1_DCACHE_SIZE"), "l2": _getconf("LEVEL2_CACHE_SIZE")}
    for level, size in expected.items():
        if size is not None:
            assert measured.fields["cache_bytes"][level] == size, level
    line = _getconf("LEVEL1_DCACHE_LINESIZE")
    if line is not None:
        assert measured.fields["line_bytes"] == line
    assert measured.fields["cache_bytes"]["llc"] >= measured.fields["cache_bytes"]["l2"]


def test_probe_gives_a_valid_machine_with_its_curve(measured: dict) -> None:
    assert check_machine(measured.fields, "probe") == measured
    assert measured.fields["source"].startswith("measured by apmt machine probe on ")
    curve = measured.fields["probe"]
    assert curve["sizes"] == sorted(curve["sizes"])
    assert len(curve["sizes"]) == len(curve["ns_per_load"])
    assert curve["sizes"][0] == 4096 and curve["sizes"][-1] <= curve["max_bytes"]


def test_write_machine_round_trips(measured: dict, tmp_path: Path) -> None:
    path = tmp_path / "here.yaml"
    write_machine(measured, path)
    assert path.read_text().startswith("# Machine file for apmt")
    assert load_machine(path) == measured


def _synthetic_curve(sizes: list[int], capacities: list[int], latencies: list[float]
                     ) -> list[float]:
    """Latency of random loads over `size` bytes with inclusive caches: the share of loads
    served by each level is the share of the working set it holds beyond the level above."""
    curve = []
    for size in sizes:
        held, total = 0, 0.0
        for capacity, latency in zip([*capacities, size], latencies, strict=True):
            share = max(min(size, capacity) - held, 0)
            total += share * latency
            held += share
        curve.append(total / size)
    return curve


def test_plateau_rule_recovers_levels_from_a_synthetic_curve() -> None:
    """Haswell-like levels (32 KiB, 256 KiB, 40 MiB; 4, 12, 40, 230 cycles at 1 GHz), plus an
    LLC shared with noisy neighbours: from 16 MiB on it serves loads at memory speed."""
    sizes = probe_sizes(512 * MIB)
    capacities = [32 << 10, 256 << 10, 40 * MIB]
    truth = [4.0, 12.0, 40.0, 230.0]
    curve = _synthetic_curve(sizes, capacities, truth)
    curve = [230.0 if 16 * MIB <= size <= 40 * MIB else value
             for size, value in zip(sizes, curve, strict=True)]
    below, picked = 0, []
    for capacity in capacities:
        picked.append(plateau(sizes, curve, *level_window(sizes, below, capacity)))
        below = capacity
    window, limited = memory_window(sizes, below)
    picked.append(plateau(sizes, curve, *window))
    assert not limited
    # the documented biases: a level's window starts where up to a quarter of the loads still
    # hit the level above (L2 sits only 8x above L1 here), and memory's where a tenth of them
    # still hit the LLC; the LLC's value ignores the noisy end of its window
    assert picked[0] == truth[0]
    assert truth[1] * 0.85 <= picked[1] <= truth[1]
    assert picked[2] == pytest.approx(truth[2], rel=0.1)
    assert truth[3] * 0.9 <= picked[3] <= truth[3]


def test_plateau_drops_slow_points_and_keeps_the_level() -> None:
    sizes = [1, 2, 3, 4, 5, 6, 7, 8]
    # the level below still serves some loads at the low end, one point is disturbed, and a
    # shared cache sends the upper half of the window to the next level
    ns = [3.4, 4.0, 9.0, 4.1, 12.0, 12.5, 12.0, 12.2]
    assert plateau(sizes, ns, 1, 8) == pytest.approx(4.0)
    assert plateau(sizes, ns, 20, 30) is None


def test_memory_window_is_marked_when_max_bytes_is_short_of_4x_the_llc() -> None:
    assert memory_window(probe_sizes(256 * MIB), 32 * MIB) == ((128 * MIB, 256 * MIB), False)
    assert memory_window(probe_sizes(1024 * MIB), 32 * MIB) == ((512 * MIB, 1024 * MIB), False)
    window, limited = memory_window(probe_sizes(256 * MIB), 104 * MIB)
    assert limited and window == (128 * MIB, 256 * MIB)


def test_a_machine_without_l3_uses_its_l2_as_llc() -> None:
    caches = [{"level": 1, "type": "Data", "size_bytes": 32768, "ways": 8, "line_bytes": 64},
              {"level": 2, "type": "Unified", "size_bytes": 1 << 20, "ways": 16,
               "line_bytes": 64}]
    levels, notes = model_caches(caches)
    assert levels["llc"] is levels["l2"]
    assert any("no L3" in note for note in notes)


def test_the_benchmark_is_built_once_per_source(tmp_path: Path) -> None:
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    first = build_chase(tmp_path)
    assert build_chase(tmp_path) == first and os.access(first, os.X_OK)
