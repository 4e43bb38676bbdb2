"""Refinement's lower-frequency rerun (paper 000, 3.4): one P's runs at a lowered CPU clock.

The runs go into folders of their own (``p4_r1_f2000MHz``: apmt.study.with_frequency),
never mixed with the study's runs. Locally the frequency is pinned with
apmt.collect.cpufreq.pinned_frequency for the duration of the runs; inside a Slurm job the job's
``sbatch --cpu-freq`` sets it. Either way each run.json says which frequency was asked for,
the clock measured (cpu_mhz) and whether the frequency really changed: where it could not be
set, the runs are kept, marked ``frequency_changed: false`` with the reason, and the
refinement keeps the model's first parameters.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from apmt import layout
from apmt.collect.backends.base import Backend
from apmt.collect.cpufreq import frequency_control, pinned_frequency
from apmt.collect.extract import finished_runs, read_measurements
from apmt.collect.runner import RunRecord, load_run_json, run_study, timing_pass
from apmt.errors import ApmtError
from apmt.study import Run, Study, with_frequency, with_p

MIN_DROP = 0.05   # under Slurm, the measured clock must drop this much for the rerun to count


def run_at_frequency(study: Study, results_dir: Path, backends: list[Backend], ghz: float,
                     report: Callable[[RunRecord], None] | None = None,
                     control: dict | None = None) -> list[RunRecord]:
    """Run the study (already narrowed to one P) at ``ghz``; resumed and never overwritten
    like any run. ``control`` is frequency_control() (read here when None)."""
    control = frequency_control() if control is None else control
    lowered = with_frequency(study, ghz)
    if control.get("slurm_job"):
        reference = base_mhz(results_dir, study, backends)
        return run_study(lowered, results_dir, backends, report,
                         lambda info: {**info, **slurm_mark(info, ghz, reference)})
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(pinned_frequency(ghz, control))
            mark = frequency_mark(ghz, control.get("method"), True,
                                  f"pinned at {ghz:g} GHz with {control.get('method')}")
        except ApmtError as error:
            mark = frequency_mark(ghz, control.get("method"), False, str(error))
        return run_study(lowered, results_dir, backends, report,
                         lambda info: {**info, **mark})


def frequency_mark(ghz: float, method: str | None, changed: bool, reason: str) -> dict:
    """What a run at a lowered frequency adds to its run.json."""
    return {"frequency_ghz": ghz, "frequency_method": method, "frequency_changed": changed,
            "frequency_reason": reason}


def slurm_mark(info: dict, ghz: float, reference_mhz: float | None) -> dict:
    """Under Slurm the job step's clock is set by --cpu-freq, which a node may ignore: the
    frequency counts as changed only if the measured clock dropped by MIN_DROP or more below
    the base runs' clock."""
    measured = info.get("cpu_mhz")
    if not isinstance(measured, int | float):
        return frequency_mark(ghz, "slurm", False, f"the clock was not measured (cpu_mhz "
                                                   f"{measured!r})")
    if reference_mhz is None:
        return frequency_mark(ghz, "slurm", False, f"measured {measured:g} MHz, but no base "
                                                   "run at this P to compare with")
    changed = measured <= (1 - MIN_DROP) * reference_mhz
    verb = "dropped" if changed else "did not drop by 5% or more"
    return frequency_mark(ghz, "slurm", changed, f"sbatch --cpu-freq: measured {measured:g} "
                                                 f"MHz {verb} from the base runs' "
                                                 f"{reference_mhz:g} MHz")


def base_mhz(results_dir: Path, study: Study, backends: list[Backend]) -> float | None:
    """The median measured clock of the study's own finished runs (None without any)."""
    return median_mhz(finished_runs(Path(results_dir), study, backends), backends)


def median_mhz(finished: list[tuple[Run, list[Path]]], backends: list[Backend]) -> float | None:
    """The median measured clock (run.json field cpu_mhz) of these finished runs."""
    clocks = [_timing_record(dirs, backends).get("cpu_mhz") for _, dirs in finished]
    clocks = [float(mhz) for mhz in clocks if isinstance(mhz, int | float)]
    return statistics.median(clocks) if clocks else None


def _timing_record(dirs: list[Path], backends: list[Backend]) -> dict:
    return load_run_json(dirs[timing_pass(backends)])


# ---------------------------------------------------------------------------- extraction

def extract_frequency(results_dir: Path, study: Study, p: int, ghz: float,
                      backends: list[Backend], output: Path) -> pd.DataFrame:
    """The measurements of P's own runs and of its runs at ``ghz``, with a column
    frequency_ghz (each set's median measured clock), into ``output``; its sidecar says
    whether the frequency really changed, and names the machine file (T_mem needs it)."""
    from apmt.tables import write_table, write_text_atomic

    base = with_p(study, [p])
    lowered = with_frequency(base, ghz)
    frames, sets, finished = [], {}, {}
    for name, runs in (("base", base), ("lowered", lowered)):
        finished[name], table = read_measurements(Path(results_dir), runs, backends)
        clock = median_mhz(finished[name], backends)
        if clock is None:
            raise ApmtError(f"{layout.raw_dir(study.name, results_dir)}: no finished run with "
                            f"a measured clock (run.json field 'cpu_mhz') among the {name} runs "
                            f"at P={p}")
        frames.append(table.assign(frequency_ghz=clock / 1000))
        sets[name] = clock / 1000
    marks = [_timing_record(dirs, backends) for _, dirs in finished["lowered"]]
    record = {"study": study.name, "p": p, "requested_ghz": ghz, "base_ghz": sets["base"],
              "lowered_ghz": sets["lowered"], "changed": bool(marks) and all(
                  mark.get("frequency_changed") for mark in marks),
              "reasons": sorted({str(mark.get("frequency_reason")) for mark in marks}),
              "machine_file": study.machine}
    table = pd.concat(frames, ignore_index=True)
    write_table(table, output)
    write_text_atomic(json.dumps(record, indent=1) + "\n", layout.sidecar(output))
    return table
