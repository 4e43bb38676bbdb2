"""The run folders of a study become the measurements and communication tables.

Only finished runs (their folder holds ``done``) are read, each first checked against the
files its ``run.json`` says it produced (apmt.collect.runner.check_run_files). Each gives:
- the backend's per-rank rows (kernel, metric, rank, value), from every pass;
- the application's time, kernel ``<app>`` metric ``time``: the wall time of the run's timing
  pass, one row per rank (the same value), so that means per rank work as for any kernel;
  none when every pass ran under a simulator (its clock is not the application's);
- the PMPI trace (timing pass) as communication rows.
One function two tools named apart gets one name (apmt.names.joined_aliases), and the MPI
functions the tracer calls itself, sampled in the traced pass and never executed in an
untraced one, are the tracer's time (``<libapmt_pmpi>``, apmt.names.tracer_callees).
Both tables get the run's columns (p, the parameters, rep), are checked against their
contract (apmt.tables) and written atomically into ``<results>/<study>/`` with
``measurements.csv.provenance.json``: which backends and events, simulated or not, the
machine, hosts, versions, the P list, the repetitions and which runs oversubscribed the cores.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
from pathlib import Path

import pandas as pd

from apmt import __version__, layout
from apmt.collect.backends.base import Backend
from apmt.collect.runner import (
    DONE,
    RUN_JSON,
    backend_passes,
    check_run_files,
    load_run_json,
    make_backends,
    needs_pass,
    pass_name,
    timing_pass,
)
from apmt.errors import ApmtError
from apmt.inputs import is_number, shown
from apmt.machine import Machine
from apmt.names import joined_aliases, tracer_callees
from apmt.study import Run, Study
from apmt.tables import APP_KERNEL, TIME_METRIC, check_table, write_table, write_text_atomic

log = logging.getLogger("apmt")

MAX_WALL_S = 1e9                                 # 30 years: a longer wall time is damage


def extract(results_dir: str | Path, study: Study, backends: list[Backend] | None = None,
            machine: Machine | None = None,
            out_dir: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read every finished run of the study; write and return (measurements, communication).

    ``backends`` are those the runs were made with (default: the study's, from the
    registry). The tables go to ``out_dir`` (default ``<results>/<study>/``). The
    communication table is empty (and comm.csv not written) when no run was traced.
    Raises ApmtError when no run has finished.
    """
    results_dir = Path(results_dir)
    if backends is None:
        backends = make_backends(study, machine)
    runs, measurements = read_measurements(results_dir, study, backends)
    source = str(layout.raw_dir(study.name, results_dir))
    communication = _communication(runs, study)
    if not communication.empty:
        communication = check_table(communication, source, "communication",
                                    study.param_names)
    out = Path(out_dir) if out_dir is not None else layout.study_dir(study.name, results_dir)
    write_table(measurements, out / layout.MEASUREMENTS)
    if not communication.empty:
        write_table(communication, out / layout.COMM)
    record = provenance(study, runs, backends, machine)
    write_text_atomic(json.dumps(record, indent=1, default=str) + "\n",
                      out / layout.MEASUREMENTS_PROVENANCE)
    return measurements, communication


def read_measurements(results_dir: Path, study: Study, backends: list[Backend]
                      ) -> tuple[list[tuple[Run, list[Path]]], pd.DataFrame]:
    """The finished runs and their checked measurements table; ApmtError when none has
    finished."""
    runs = finished_runs(results_dir, study, backends)
    if not runs:
        raise ApmtError(f"{layout.raw_dir(study.name, results_dir)}: no finished run of study "
                        f"{study.name!r} to extract")
    for _, dirs in runs:
        for run_dir in dirs:
            if run_dir is not None:
                check_run_files(run_dir)
    table = check_table(_measurements(runs, backends, study),
                        str(layout.raw_dir(study.name, results_dir)), "measurements",
                        study.param_names)
    return runs, table


def finished_runs(results_dir: Path, study: Study,
                  backends: list[Backend]) -> list[tuple[Run, list[Path]]]:
    """Runs whose every pass has finished, with their pass folders (first pass first)."""
    out = []
    for run in study.runs():
        dirs = [layout.raw_dir(study.name, results_dir) / pass_name(run, index)
                if needs_pass(run, backend) else None
                for index, backend in enumerate(backend_passes(backends))]
        if dirs[0] is not None and all(d is None or (d / DONE).exists() for d in dirs):
            out.append((run, dirs))
    return out


def _run_columns(run: Run, study: Study) -> dict:
    return {"p": run.p, **{name: run.params[name] for name in study.param_names},
            "rep": run.rep}


def _measurements(runs: list[tuple[Run, list[Path]]], backends: list[Backend],
                  study: Study) -> pd.DataFrame:
    frames = []
    timing = timing_pass(backends)
    timed = app_time_measured(backends)
    seen: list[set[str]] = [set() for _ in backends]
    for run, dirs in runs:
        columns = _run_columns(run, study)
        for index, (backend, run_dir) in enumerate(zip(backends, dirs, strict=False)):
            if run_dir is not None:     # a simulator's pass runs in the first repetition only
                frames.append(_parsed(backend, run_dir).assign(**columns))
                seen[index].update(frames[-1]["kernel"])
        if timed:
            frames.append(_app_rows(run, dirs[timing]).assign(**columns))
    order = ["kernel", "metric", "p", *study.param_names, "rep", "rank", "value"]
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        raise ApmtError(f"{study.source}: the finished runs hold no measurements")
    table = pd.concat(frames, ignore_index=True)
    renamed = joined_aliases(seen)      # one function the tools named apart (apmt.names)
    if seen and study.trace_mpi:        # the tracer's own calls, seen only where it ran
        renamed |= tracer_callees(seen[timing], [names for index, names in enumerate(seen)
                                                 if index != timing and names])
    if renamed:
        table["kernel"] = table["kernel"].replace(renamed)
        table = table.groupby(order[:-1], sort=False, dropna=False)["value"].sum().reset_index()
    return table[order]


def app_time_measured(backends: list[Backend]) -> bool:
    """Whether some pass ran the application at its own speed (not under a simulator)."""
    return not backends or any(not backend.simulated for backend in backends)


def _parsed(backend: Backend, run_dir: Path) -> pd.DataFrame:
    """A backend's rows of one run; a problem names the run folder."""
    try:
        rows = backend.parse(run_dir)
    except ApmtError as error:
        raise ApmtError(f"{run_dir}: {error}") from None
    if rows.empty:
        log.warning("%s: backend %s measured nothing in this run", run_dir, backend.name)
        return pd.DataFrame(columns=["kernel", "metric", "rank", "value"])
    missing = {"kernel", "metric", "rank", "value"} - set(rows.columns)
    if missing:
        raise ApmtError(f"{run_dir}: backend {backend.name!r} gave no column "
                        f"{sorted(missing)[0]!r}")
    return rows[["kernel", "metric", "rank", "value"]]


def _app_rows(run: Run, run_dir: Path) -> pd.DataFrame:
    """The run's wall time as kernel ``<app>``, once per rank."""
    wall = load_run_json(run_dir).get("wall_time_s")
    if wall is None:
        raise ApmtError(f"{run_dir / RUN_JSON}: no wall time recorded")
    if not is_number(wall, high=MAX_WALL_S):
        raise ApmtError(f"{run_dir / RUN_JSON}: field 'wall_time_s' is {shown(wall)}, not a "
                        f"number of seconds in (0, {MAX_WALL_S:g}]")
    return pd.DataFrame({"kernel": APP_KERNEL, "metric": TIME_METRIC,
                         "rank": range(run.p), "value": float(wall)})


def _communication(runs: list[tuple[Run, list[Path]]], study: Study) -> pd.DataFrame:
    """PMPI rows of the traced pass of every run."""
    frames = []
    for run, dirs in runs:
        traced = [d for d in dirs if d is not None and load_run_json(d).get("trace_mpi") is True]
        if not traced:
            continue
        from apmt.collect import pmpi
        try:
            rows = pmpi.read_traces(traced[0])
        except ApmtError as error:
            raise ApmtError(f"{traced[0]}: {error}") from None
        if not rows.empty:
            frames.append(rows.assign(**_run_columns(run, study)))
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    first = ["op", "calls", "bytes", "time", "p", *study.param_names, "rep", "rank", "peer"]
    return table[[c for c in first if c in table.columns]
                 + [c for c in table.columns if c not in first]]


def around_launcher(info: dict) -> list[str]:
    """The words of a measuring tool that ran once around the whole launcher (apmt's choice
    on a single host, see apmt.collect.launch); empty when each rank had its own."""
    command, versions = info.get("command"), info.get("versions")
    words = (command.get("launcher") if isinstance(command, dict) else None) or []
    launcher = versions.get("launcher", "") if isinstance(versions, dict) else ""
    program = str(launcher).split(":", 1)[0]
    if not isinstance(words, list) or program not in words:
        return []
    return [str(word) for word in words[:words.index(program)]]


def provenance(study: Study, runs: list[tuple[Run, list[Path]]], backends: list[Backend],
               machine: Machine | None) -> dict:
    """Where the tables came from: the study, tools, hosts, versions and the runs."""
    timing = timing_pass(backends)
    infos = [(dirs, load_run_json(dirs[timing])) for _, dirs in runs]
    return {
        "apmt_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "study": study.name, "study_file": str(study.source),
        "study_sha256": hashlib.sha256(study.source.read_bytes()).hexdigest(),
        "command": study.command, "params": study.param_names,
        "per_rank_params": list(study.per_rank_params), "app_kernel": study.app_kernel,
        "volume_ratios": study.volume_ratios, "work": study.work, "scaling": study.scaling,
        "backends": [{"name": b.name, "simulated": bool(b.simulated),
                      "provenance": b.provenance()} for b in backends] or
                    [{"name": "none", "simulated": False, "provenance": {}}],
        "app_time": ("wall time of each run's timing pass "
                     f"({(backends[timing].name if backends else 'none')})"
                     if app_time_measured(backends) else
                     "not measured: every pass ran under a simulator"),
        "trace_mpi": study.trace_mpi,
        "machine": machine.fields.get("name", study.machine) if machine else study.machine,
        "machine_file": study.machine,
        "hosts": sorted({info.get("host", "unknown") for _, info in infos}),
        "versions": infos[0][1].get("versions", {}) if infos else {},
        "p_values": sorted({run.p for run, _ in runs}),
        "repetitions": study.repetitions,
        "oversubscribed_runs": [dirs[0].name for dirs, info in infos
                                if info.get("oversubscribed")],
        "runs": [{"run": dirs[0].name, "host": info.get("host"), "cpu_mhz": info.get("cpu_mhz"),
                  "wall_time_s": info.get("wall_time_s"), "finished": info.get("finished"),
                  "oversubscribed": info.get("oversubscribed"),
                  "around_launcher": around_launcher(info)} for dirs, info in infos],
        "missing_runs": [run.name for run in study.runs()
                         if run.name not in {dirs[0].name for _, dirs in runs}],
    }
