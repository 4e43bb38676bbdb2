"""Pick the counter backends of a study by name: perf-events, perf-clock, cachegrind or auto.

``make_backend`` returns a list. Recommended use: each backend in it is **one run pass of its
own** (the runner repeats the run once per backend, each in its own run folder, and
concatenates their measurements; the provenance of each says which backend and pass made it).
Stacking the prefixes in one run would measure the tools rather than the application:
cachegrind slows a rank 20-50x, which cpu-clock time would then see, and each perf-events pass
must own the counters. So:
    perf-events  one backend per pass of the event schedule (``split``, the default, as
                 PerfExpert does), or one backend whose events perf multiplexes (``multiplex``);
    perf-clock   one backend: on-CPU time per function (software clock, no PMU needed);
    cachegrind   one backend: simulated counts per function (needs the machine's caches);
    auto         perf-events if a hardware PMU answers here, else [perf-clock, cachegrind].
Every name, metric and event is checked here or in ``check()``, before any run starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from apmt.collect.backends import cpu as cpumod
from apmt.collect.backends.base import Backend
from apmt.collect.backends.cachegrind import Cachegrind
from apmt.collect.backends.perf import PerfClock, PerfEvents
from apmt.errors import ApmtError
from apmt.machine import Machine

BACKENDS = ("perf-events", "perf-clock", "cachegrind", "auto")


def make_backend(name: str, machine: Machine | None, metrics: list[str] | None, *,
                 mode: str = "split", event_file: str | Path | None = None,
                 period: int | None = None, frequency: int | None = None,
                 cpuinfo: str | None = None, pmu: bool | None = None) -> list[Backend]:
    """The backends that measure ``metrics`` (None: all they can) with backend ``name``.

    ``mode``: split or multiplex (perf-events); ``event_file``: a site's own metric -> event
    file; ``period``: perf's sampling period for every event (default: perf's per event);
    ``frequency``: cpu-clock samples per second; ``cpuinfo`` and ``pmu`` stand in for this
    machine's /proc/cpuinfo and PMU probe (tests, or planning runs for another machine).
    """
    if name not in BACKENDS:
        raise ApmtError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    metrics = cpumod.check_metrics(metrics) if metrics is not None else None
    if name == "auto":
        has_pmu = cpumod.pmu_answers()[0] if pmu is None else pmu
        name = "perf-events" if has_pmu else "perf-clock+cachegrind"
    if name == "perf-events":
        return perf_event_backends(metrics, mode=mode, event_file=event_file, period=period,
                                   cpuinfo=cpuinfo)
    backends: list[Backend] = []
    if name in ("perf-clock", "perf-clock+cachegrind"):
        backends.append(PerfClock(frequency) if frequency else PerfClock())
    if name in ("cachegrind", "perf-clock+cachegrind"):
        backends.append(cachegrind_backend(machine, metrics))
    return backends


def cachegrind_backend(machine: Machine | None, metrics: list[str] | None) -> Cachegrind:
    if machine is None:
        raise ApmtError("cachegrind needs a machine file (its cache_bytes pin the simulated "
                        "caches); the study names none")
    counters = None if metrics is None else [m for m in metrics if m != "time"]
    return Cachegrind(machine, counters, str(machine.fields.get("name", "machine")))


def perf_event_backends(metrics: Sequence[str] | None, *, mode: str = "split",
                        event_file: str | Path | None = None, period: int | None = None,
                        cpuinfo: str | None = None) -> list[Backend]:
    """One PerfEvents per pass of the schedule of the metrics' events on this CPU."""
    cpu = cpumod.detect_cpu(cpuinfo)
    event_map = cpumod.load_event_map(cpu, event_file)
    wanted = [m for m in (metrics or cpumod.MEASURABLE_METRICS) if m != "time"]
    chosen = {m: event_map.metrics[m] for m in wanted if m in event_map.metrics}
    not_measured = [m for m in wanted if m not in event_map.metrics]
    if not chosen:
        raise ApmtError(f"perf-events: none of the metrics {', '.join(wanted)} can be counted "
                        f"on {cpu.describe()} (event file {event_map.name})")
    # On AMD the NMI watchdog holds a general-purpose counter (on Intel a fixed one).
    watchdog = cpuinfo is None and cpu.vendor == "AuthenticAMD" and cpumod.nmi_watchdog_on()
    counters = event_map.counters - (1 if watchdog else 0)
    plan = cpumod.schedule(chosen, counters, mode, slots_of=event_map.slots_of)
    return [PerfEvents(event_map, plan, index, period, cpu, not_measured)
            for index in range(len(plan.passes))]
