"""The Intel event maps against Intel's published event lists, and perf's outputs for the
paper's events (stall cycles, hits per level, loads and stores, instructions) read into
apmt's metrics: ``perf stat -x,`` rows (a real recording of this machine, and text in perf
6.x's format for Haswell-EP and Skylake-SP) and a ``perf report`` of the Skylake stall
events. See fixtures/pmu-events/README.md and fixtures/perf/README.md for what is recorded
and what is written in perf's format."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from apmt.collect.backends import cpu
from apmt.collect.backends.perf import PerfEvents
from apmt.collect.backends.registry import make_backend
from apmt.errors import ApmtError

FIXTURES = Path(__file__).parent / "fixtures"
PERF = FIXTURES / "perf"
LISTS = json.loads((FIXTURES / "pmu-events" / "intel-perfmon-extract.json").read_text())
HASWELL_EP = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 63\nmodel name\t: Xeon\n"
SKYLAKE_SP = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Xeon\n"
# an event of a map and the raw code its comment gives: "name, # 0xa3/0x14 cmask 20"
CODE_COMMENT = re.compile(r"([a-z0-9_]+\.[a-z0-9_.]+)\]?,?\s*#\s*(0x[0-9a-f]+)/(0x[0-9a-f]+)"
                          r"(?: cmask (\d+))?")


def lists_of(vendor: str, family: int, model: int) -> list[str]:
    """Intel's event lists for a model, by perfmon's mapfile (Skylake-SP and Cascade Lake
    share model 0x55, told apart by stepping: both lists)."""
    prefix = f"{vendor}-{family}-{model:X}"
    return [name for key, names in LISTS["mapfile"].items()
            if key == prefix or key.startswith(prefix + "-") for name in names]


def models(event_file: dict) -> list[int]:
    return [m for entry in event_file["cpus"] for m in entry["models"]]


@pytest.mark.parametrize("name", ["intel-haswell", "intel-skylake"])
def test_every_event_of_an_intel_map_is_in_intels_list_of_each_model(name):
    data = cpu.read_event_file(name)
    checked = 0
    for model in models(data):
        cpu_info = cpu.CpuInfo("GenuineIntel", 6, model)
        event_map = cpu.load_event_map(cpu_info, name)
        lists = lists_of("GenuineIntel", 6, model)
        assert lists, f"model 0x{model:x} has no list in perfmon's mapfile"
        for entry in event_map.metrics.values():
            for event in entry.events:
                for family in lists:
                    assert event.upper() in LISTS["lists"][family]["events"], (family, event)
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("name, families", [
    ("intel-haswell", ["HSW", "HSX", "BDW", "BDW-DE", "BDX"]), ("intel-skylake", ["SKL"])])
def test_the_raw_codes_in_the_maps_comments_are_intels(name, families):
    """The codes beside each event are for tools other than perf: they must be right (the
    Skylake file gives Skylake's, later models' differences noted in words)."""
    text = (Path(cpu.__file__).parents[2] / "data" / "events" / f"{name}.yaml").read_text()
    found = CODE_COMMENT.findall(text)
    assert len(found) >= 15
    for event, code, umask, cmask in found:
        for family in families:
            listed = LISTS["lists"][family]["events"][event.upper()]
            assert int(listed["EventCode"], 16) == int(code, 16), (family, event)
            assert int(listed["UMask"], 16) == int(umask, 16), (family, event)
            assert int(listed["CounterMask"]) == int(cmask or 0), (family, event)


def test_stall_cycles_are_the_memory_stalls_where_intel_lists_them():
    haswell = cpu.load_event_map(cpu.detect_cpu(HASWELL_EP))
    assert haswell.metrics["stall_cycles"].events == ("cycle_activity.stalls_ldm_pending",
                                                       "resource_stalls.sb")
    skylake = cpu.load_event_map(cpu.detect_cpu(SKYLAKE_SP))
    assert skylake.metrics["stall_cycles"].events == ("cycle_activity.stalls_mem_any",
                                                       "exe_activity.bound_on_stores")
    stall = LISTS["lists"]["SKX"]["events"]["CYCLE_ACTIVITY.STALLS_MEM_ANY"]
    assert (stall["EventCode"], stall["UMask"], stall["CounterMask"]) == ("0xA3", "0x14", "20")
    # Sapphire Rapids lists no STALLS_MEM_ANY: left out there, said so
    assert "CYCLE_ACTIVITY.STALLS_MEM_ANY" not in LISTS["lists"]["SPR"]["events"]
    sapphire = cpu.load_event_map(cpu.CpuInfo("GenuineIntel", 6, 0x8F))
    assert "stall_cycles" in sapphire.absent
    for mapped in (haswell, skylake):     # the paper's other events are all there
        assert {"instructions", "l1_hits", "l2_hits", "llc_hits", "mem_loads",
                "mem_stores"} <= set(mapped.metrics)


# ---------------------------------------------------------------- perf stat -x,


def test_real_perf_stat_rows_of_this_machine():
    """A real recording: software events counted (unit msec, perf's own metric columns),
    hardware events <not supported> (no PMU here)."""
    rows = cpu.parse_stat((PERF / "stat-software-no-pmu.txt").read_text(), "recording")
    assert [r.event for r in rows] == ["cpu-clock", "task-clock", "cycles", "instructions",
                                       "r5300c0"]
    assert rows[0].value and rows[0].value > 0 and rows[0].running == 100
    assert [r.status for r in rows[2:]] == [cpu.NOT_SUPPORTED] * 3
    assert all(r.value is None for r in rows[2:])
    counts = cpu.stat_metrics(rows, {
        "cycles": cpu.MetricEvents(("cpu-clock",), 1),
        "stall_cycles": cpu.MetricEvents(("task-clock", "cycles"), 2)})
    assert counts["cycles"].value == rows[0].value
    assert counts["stall_cycles"].value is None          # a partial sum is not the metric
    assert counts["stall_cycles"].note == "cycles: <not supported>"


def test_haswell_pass_with_an_event_the_vm_does_not_pass_on():
    event_map = cpu.load_event_map(cpu.detect_cpu(HASWELL_EP))
    rows = cpu.parse_stat((PERF / "stat-haswellx-pass0.csv").read_text())
    counts = cpu.stat_metrics(rows, event_map.metrics)
    assert counts["cycles"].value == 4162006243 and counts["instructions"].value == 5596008394
    stall = counts["stall_cycles"]
    assert stall.value is None and stall.status == cpu.NOT_SUPPORTED
    assert stall.note == "resource_stalls.sb: <not supported>"
    assert counts["l1_hits"].value is None and "perf printed no row" in counts["l1_hits"].note


def test_skylake_multiplexed_run_gives_every_metric_or_says_why_not():
    event_map = cpu.load_event_map(cpu.detect_cpu(SKYLAKE_SP))
    rows = cpu.parse_stat((PERF / "stat-skylakex-multiplex.csv").read_text())
    counts = cpu.stat_metrics(rows, event_map.metrics)
    value = {row.event: row.value for row in rows}
    stall = counts["stall_cycles"]
    assert stall.value == value["cycle_activity.stalls_mem_any:u"] \
        + value["exe_activity.bound_on_stores:u"]
    assert stall.note == ("cycle_activity.stalls_mem_any:u: counted 21% of the time, scaled by "
                         "perf; exe_activity.bound_on_stores:u: counted 20% of the time, "
                         "scaled by perf")
    assert counts["cycles"].value > stall.value > 0
    assert counts["mem_loads"].value == value["mem_inst_retired.all_loads:u"]
    assert counts["itlb_misses"].value is None and counts["itlb_misses"].status == cpu.NOT_COUNTED
    measured = {m for m, c in counts.items() if c.value is not None}
    assert measured == set(event_map.metrics) - {"itlb_misses"}


@pytest.mark.parametrize("line, error", [
    ("12a4,,cycles,100,100.00,,", "line 1: count '12a4' of event 'cycles' is not a number"),
    ("<not countable>,,cycles,0,100.00,,", "count '<not countable>'"),
])
def test_a_garbled_stat_row_is_one_clear_line(line, error):
    with pytest.raises(ApmtError) as raised:
        cpu.parse_stat(line, "stat.csv")
    assert error in str(raised.value) and "\n" not in str(raised.value)


def test_perf_messages_are_not_rows():
    text = ("Error:\nThe sys_perf_event_open() syscall returned with 22 (Invalid argument)\n"
            "# started on Mon Jan  1 00:00:00 2024\n\n" "123,,cycles,100,100.00,,\n")
    assert [(r.event, r.value) for r in cpu.parse_stat(text)] == [("cycles", 123.0)]


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_an_event_perf_cannot_count_here_is_not_measured_with_a_note(monkeypatch):
    """check() asks perf for real: on this machine (no PMU) the hardware event of the
    stall sum is <not supported>, so the metric is left out, said so, and the run goes on
    with the software events; perf's rows are real."""
    if cpu.pmu_answers()[0]:
        pytest.skip("this machine has a hardware PMU")
    event_map = cpu.EventMap("test", "test", 4, {
        "cycles": cpu.MetricEvents(("cpu-clock",), 1),
        "stall_cycles": cpu.MetricEvents(("task-clock", "instructions"), 2)})
    plan = cpu.schedule(event_map.metrics, 4)
    backend = PerfEvents(event_map, plan)
    monkeypatch.setattr(cpu, "pmu_answers", lambda: (True, "stand-in for a PMU"))
    backend.check()
    assert list(backend.metrics) == ["cycles"] and backend.events() == ["cpu-clock"]
    provenance = backend.provenance()
    assert provenance["not_measured"] == ["stall_cycles"]
    assert provenance["notes"]["stall_cycles"] == ("not supported on this CPU: "
                                                   "instructions: <not supported>")
    nothing = PerfEvents(event_map, cpu.schedule({"stall_cycles": cpu.MetricEvents(
        ("instructions",), 1)}, 4))
    with pytest.raises(ApmtError) as error:
        nothing.check()
    assert "no metric of pass 0 can be counted" in str(error.value)


# ---------------------------------------------------------------- perf report


def test_skylake_stall_report_gives_stall_cycles_per_kernel(tmp_path):
    """pass 0 of the Skylake-SP schedule: cycles, instructions and the two stall events."""
    backend = make_backend("perf-events", None, None, cpuinfo=SKYLAKE_SP)[0]
    assert list(backend.metrics) == ["cycles", "instructions", "stall_cycles"]
    run = tmp_path / "run"
    shutil.copytree(PERF / "skylakex-stall-run", run)
    table = backend.parse(run)
    value = table.set_index(["kernel", "metric"])["value"]
    compute = "LAMMPS_NS::PairLJCut::compute"
    assert value[(compute, "stall_cycles")] == (402 + 31) * 2000003
    assert value[(compute, "cycles")] == 1402 * 2000003
    assert value[("<libc>", "stall_cycles")] == (11 + 3) * 2000003
    assert (compute, "instructions") in value.index
    stalls = table[table["metric"] == "stall_cycles"].set_index("kernel")["value"]
    cycles = table[table["metric"] == "cycles"].set_index("kernel")["value"]
    assert (stalls <= cycles[stalls.index]).all()       # a stall is a cycle
    provenance = table.attrs["provenance"]
    assert provenance["combine"] == {"stall_cycles": "sum"}
    assert "T_stall" in provenance["notes"]["stall_cycles"]
