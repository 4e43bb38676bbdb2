"""What a diagnosis reads from a study's results folder, read once (apmt.layout names the
files): the measurements with their provenance, the model and the communication table when
the folder has them, the machine file, and the P of a predictions table when one is given.
Every part of the diagnosis (validity, scaling, LCPI, the comparison) takes this one object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from apmt import layout
from apmt.diagnose.imbalance import oversubscribed
from apmt.errors import ApmtError
from apmt.machine import Machine, load_machine
from apmt.model import Model, load_model
from apmt.tables import parameter_columns, read_json, read_table


@dataclass
class StudyData:
    """A study folder as the diagnosis sees it."""

    folder: Path
    table: pd.DataFrame                      # the measurements, as read
    params: list[str]
    provenance: dict                         # the measurements' sidecar ({} without one)
    model: Model | None
    machine: Machine | None
    machine_source: str | None
    comm: pd.DataFrame | None = None
    predicted_p: list[float] = field(default_factory=list)

    @property
    def oversubscribed_p(self) -> set[int]:
        return oversubscribed(self.provenance)


def read_study(folder: str | Path, machine: str | Path | None = None,
               predictions: str | Path | None = None) -> StudyData:
    """The measurements, their provenance, the model (if fitted), the communication table (if
    traced), the P of ``predictions`` and the machine file: the one given, else the one the
    provenance or the model names."""
    folder = Path(folder)
    table = read_table(folder / layout.MEASUREMENTS)
    provenance = _provenance(folder)
    model = _model(folder)
    params = list(provenance.get("params") or parameter_columns(table))
    params = [name for name in params if name in table.columns]
    found, source = _machine(folder, machine, provenance, model)
    comm_path = folder / layout.COMM
    comm = read_table(comm_path, "communication", model.params if model else None) \
        if comm_path.exists() else None
    predicted = predicted_p(Path(predictions)) if predictions is not None else []
    return StudyData(folder, table, params, provenance, model, found, source, comm, predicted)


def _provenance(folder: Path) -> dict:
    path = folder / layout.MEASUREMENTS_PROVENANCE
    return read_json(path) if path.is_file() else {}


def _model(folder: Path) -> Model | None:
    path = folder / layout.MODEL
    return load_model(path) if path.is_file() else None


def _machine(folder: Path, given: str | Path | None, provenance: dict,
             model: Model | None) -> tuple[Machine | None, str | None]:
    """The given machine; else the provenance's (the file or shipped name the runs were
    measured with, or its name), the study file's, or the one stored in model.json."""
    if given is not None:
        return load_machine(given), f"--machine {given}"
    problem = None
    for named in (provenance.get("machine_file"), provenance.get("machine"),
                  _study_machine(provenance)):
        if not named:
            continue
        try:
            return load_machine(named), "named by the study"
        except ApmtError as error:
            problem = problem or error
    if model is not None and model.machine is not None:
        return model.machine, "stored in model.json"
    if problem is not None:
        raise ApmtError(f"{folder / layout.MEASUREMENTS_PROVENANCE}: field 'machine': {problem} "
                        "(give one with --machine)")
    return None, None


def _study_machine(provenance: dict) -> str | None:
    """The machine field of the study file the provenance names, if it is still there."""
    path = provenance.get("study_file")
    if not path or not Path(path).is_file():
        return None
    from apmt.study import load_study
    try:
        return load_study(path).machine
    except ApmtError:
        return None


def predicted_p(path: Path) -> list[float]:
    """The P of a predictions table: the scales the study asked for."""
    try:
        p = pd.read_csv(path, usecols=["p"])["p"]
    except (ValueError, OSError, pd.errors.ParserError) as error:
        raise ApmtError(f"{path}: not a readable predictions table ({error})") from None
    values = pd.to_numeric(p, errors="coerce")
    bad = values.isna() | (values < 1)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ApmtError(f"{path}: row {row + 2}, column 'p': {p.iloc[row]!r} is not a "
                        "process count")
    return sorted(set(values.astype(float)))
