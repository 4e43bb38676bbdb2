"""``apmt profile`` and ``apmt extract`` as steps of the package: a study file with the command
line's choices applied, its runs (made, or taken as stored), its lower-frequency rerun, and the
tables of its finished runs. The command line only parses and prints; the tests call these.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from apmt import layout
from apmt.collect.backends.base import Backend
from apmt.collect.extract import extract
from apmt.collect.frequency import extract_frequency, run_at_frequency
from apmt.collect.runner import (
    RunRecord,
    check_environment,
    check_runnable,
    describe_plan,
    load_study_machine,
    make_backends,
    plan,
    run_study,
    stored_runs,
    with_machine,
)
from apmt.machine import Machine
from apmt.probe import this_machine
from apmt.study import Study, load_study, with_backend, with_p
from apmt.tables import describe_table, write_text_atomic

Report = Callable[[RunRecord], None]


@dataclass(frozen=True)
class Profiled:
    """A study ready to run or extract: the checked study, its machine file and backends."""

    study: Study
    machine: Machine | None
    backends: list[Backend]


def load_profiled(path: Path, results: Path, *, backend: str | None = None,
                  p_values: Sequence[int] | None = None,
                  note: Callable[[str], None] = print) -> Profiled:
    """The study file with ``--backend`` and ``--p`` applied, its machine (this host's,
    measured once, when the study names none; the study's needs are checked first, so that a
    mistake in it is said before the half-minute probe) and its backends."""
    study = load_study(path)
    if backend is not None:
        study = with_backend(study, backend)
    if p_values:
        study = with_p(study, list(p_values))

    def measured_here() -> Path:
        check_environment(study, results)
        return this_machine(note)

    study = with_machine(study, results, measured_here)
    machine = load_study_machine(study)
    return Profiled(study, machine, make_backends(study, machine))


def dry_run(profiled: Profiled, results: Path) -> list[str]:
    """Each launch the study would make, as a line, running nothing."""
    launcher = check_runnable(profiled.study, results, profiled.backends, dry_run=True)
    return [describe_plan(planned)
            for planned in plan(profiled.study, results, profiled.backends, launcher)]


def profile(profiled: Profiled, results: Path, *, stored_only: bool = False,
            report: Report | None = None) -> list[RunRecord]:
    """Run the study's runs, skipping finished ones (or, ``stored_only``, take the stored
    runs and run nothing); every run's record, failed ones included."""
    if not stored_only:
        return run_study(profiled.study, results, profiled.backends, report=report)
    records = stored_runs(profiled.study, results, profiled.backends)
    for record in records if report is not None else []:
        report(record)
    return records


def profile_at_frequency(profiled: Profiled, results: Path, ghz: float,
                         report: Report | None = None) -> tuple[list[RunRecord], list[str]]:
    """Refinement's rerun of the study's one P at a lower frequency, in run folders of its
    own; its records and why the frequency did not change where it did not. Its tables are
    extract_at_frequency's."""
    records = run_at_frequency(profiled.study, results, profiled.backends, ghz, report=report)
    reasons = sorted({record.info.get("frequency_reason") for record in records} - {None})
    return records, reasons


def write_summary(records: list[RunRecord], path: Path | None) -> list[RunRecord]:
    """Write what became of each run (``--summary``); the failed records."""
    if path is not None:
        write_text_atomic(json.dumps([record.summary() for record in records], indent=1)
                          + "\n", path)
    return [record for record in records if not record.ok]


def extract_tables(profiled: Profiled, results: Path, out_dir: Path | None = None
                   ) -> list[str]:
    """The measurements and communication tables of the finished runs, with their
    provenance (in ``out_dir``, default the study's folder); a line per file written."""
    measurements, comm = extract(results, profiled.study, profiled.backends, profiled.machine,
                                 out_dir)
    out = out_dir if out_dir is not None else layout.study_dir(profiled.study.name, results)
    lines = [f"{out / layout.MEASUREMENTS}: {describe_table(measurements, 'measurements')}"]
    if not comm.empty:
        lines.append(f"{out / layout.COMM}: {describe_table(comm, 'communication')}")
    return [*lines, str(out / layout.MEASUREMENTS_PROVENANCE)]


def extract_at_frequency(profiled: Profiled, results: Path, p: int, ghz: float,
                         output: Path) -> str:
    """The rerun's table: its runs and the base runs of the same P with their measured clock
    (and whether the frequency changed, in its sidecar); a line saying what it holds."""
    table: pd.DataFrame = extract_frequency(results, profiled.study, p, ghz, profiled.backends,
                                            output)
    clocks = ", ".join(f"{value:g}" for value in sorted(table["frequency_ghz"].unique()))
    return f"{output}: {describe_table(table, 'measurements')}, clocks {clocks} GHz"
