"""apmt diagnose: what a study's measurements say about its performance problems.

``diagnose(study_dir, other_dir)`` reads ``results/<study>/`` once (study.py: measurements.csv
with its provenance, model.json and comm.csv when there, the predictions when given) and
returns the diagnosis as sections, in order:
1. validity (validity.py): runs too short to sample, repetitions that vary too much,
   counters that contradict each other, sampled time shares against an exact reference
   (sampling.py, Eq. 1 of paper 000) (of both folders when two are given);
2. scaling (scaling.py, paper 001): which kernels and operations stop scaling, ranking
   across scales, load imbalance; needs model.json fitted from at least 3 P;
3. PerfExpert's LCPI assessment (lcpi.py, paper 002) of the key kernels, with the remedies
   for the worst category;
4. with a second folder, the two runs side by side (compare.py).
render.py turns the sections into text or HTML; apmt.oneoff measures a command first.
"""

from __future__ import annotations

from pathlib import Path

from apmt.diagnose import compare, lcpi, validity
from apmt.diagnose.section import Finding, Section
from apmt.diagnose.study import StudyData, read_study
from apmt.errors import ApmtError

__all__ = ["Finding", "Section", "diagnose"]
SCALING = "Scaling"


def diagnose(study_dir: str | Path, other_dir: str | Path | None = None, *,
             machine: str | Path | None = None,
             predictions: str | Path | None = None) -> list[Section]:
    """The whole diagnosis of a study folder (and its comparison with a second one).

    ``machine``: a machine file or shipped name for the latencies, when the study's
    provenance names none (or to override it); ``predictions``: the study's predictions
    table, whose P the scaling part shows beside the measured ones.
    """
    data = read_study(study_dir, machine, predictions)
    other = read_study(other_dir, machine) if other_dir is not None else None
    out = validity.sections(study_dir, data=data)
    if other is not None:
        out += validity.sections(other_dir, data=other, title="Validity of run 2")
    out += scaling_sections(data)
    out += lcpi.sections(study_dir, data=data)
    if other is not None:
        out += compare.sections(study_dir, other_dir, data=(data, other))
    return out


def scaling_sections(data: StudyData) -> list[Section]:
    """The scaling part (apmt.diagnose.scaling), which says itself when it needs more P or a
    model, and still reports the load imbalance then."""
    from apmt.diagnose import scaling

    try:
        return list(scaling.sections(Path(data.folder), data=data))
    except ApmtError as error:
        return [Section(SCALING, note=f"not diagnosed: {error}")]
