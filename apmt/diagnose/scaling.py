"""Scaling diagnosis (paper 001): where the time goes at each P, where the total stops falling
and what makes it rise, how the kernels' ranking changes with scale, which functions do not
scale; with the load imbalance (apmt.diagnose.imbalance) and paper 000's checks of memory
contention and CPI.

    sections(study_dir, p_values=None, data=None) -> [Section, ...]

takes a study folder as apmt.diagnose.study reads it: model.json, measurements.csv and, when
there, comm.csv (MPI time per rank), the predictions when given (their P join the scales
diagnosed) and measurements.csv.provenance.json (which runs oversubscribed the cores). The
numbers at each P come from the model (Eq. 2, apmt.predict.assemble), at the measured P and at
larger, predicted ones (apmt.series.scale_points); a P marked * lies beyond the measured ones.

Tables (times in seconds per rank):
components (``components``): one row per P, component (kernel or MPI operation) and part.
    p, kernel, part (computation, memory (not overlapped), p2p communication, a collective's
    name, MPI library, others), time
breakdown (strong and weak scaling sections): one row per P.
    p, beyond_data (P above every measured one), trust (of the model's time: interpolated,
    extrapolated or unsupported, apmt.trust), measured (mean measured application time,
    NaN where not measured), time (the model's application time), one column per part,
    dominant (the largest part)
ranking: one row per key or non-scalable kernel.
    kernel, class, rank_first, time_first (at the smallest P), rank_last, time_last,
    share_last (of all parts, at the largest P), top_from (first P where it is among the
    TOP_RANKS most expensive; NaN if never), flagged (minor at the smallest P, among the
    TOP_RANKS at the largest with at least the model's key threshold of the time)
non-scalable: one row per kernel whose time per rank does not fall with P (grows, in weak
    scaling): kernel, class, slope (b of time ~ P^b), measured_first, measured_last (mean
    measured time at the smallest and largest measured P), predicted_last (at the largest P)
checks: one row per kernel with counters: kernel, contention (E = LLC misses / memory
    accesses, largest over runs), cpi, cpi_deviation (Eq. 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from apmt import layout
from apmt.comm import kind_of
from apmt.diagnose import imbalance
from apmt.diagnose.section import Finding, Section
from apmt.diagnose.study import StudyData, read_study
from apmt.display import seconds
from apmt.errors import ApmtError
from apmt.kernels import KEY_THRESHOLD, NONSCALABLE_SLOPE, OTHERS
from apmt.model import CONTENTION_LIMIT, PART_LABELS, Model
from apmt.names import MPI_NAME, MPI_RUNTIME
from apmt.predict import application_trust, assemble, contributions, outgrowing, whole_time
from apmt.series import MIN_DISTINCT_P, measured_points, per_run, points, scale_points
from apmt.tables import APP_KERNEL, TIME_METRIC, check_table, parameter_columns
from apmt.trust import UNSUPPORTED
from apmt.work import constant_work, evaluate_work, work_names

TOP_RANKS = 3          # "among the top" of the kernel ranking: paper 001 tunes the top few
RISE_CAUSES = 3        # components named as the cause of a rise, the largest growth first
RISE_SHARE = 0.1       # ... each with at least this share of all the growth: smaller
                       # ones do not explain the rise
MAX_LISTED = 10        # non-scalable functions named in findings (all are in the table)
# collectives below this share of the time at every P are summed as "other collectives":
# one column each would crowd the breakdown without changing any conclusion
MINOR_SHARE = 0.01
# Eq. 4's deviation of a kernel's CPI over runs: paper 000 saw 1e-3 to 1e-2 for CICE's
# kernels and took a constant CPI as good; above that range the constant is untested
CPI_DEVIATION_LIMIT = 1e-2
# a rise or fall of the total below 2% counts as flat: far inside the model's own error
# (median 6-12% on held-out runs, docs/accuracy.md), so no evidence of a trend
FLAT = 0.02
# the ranks' sampled time over the cores, as a share of a crowded run's wall time, from which
# the cores' sharing sets that time. The sampled time misses start-up and what runs before
# perf follows a rank: in the largest crowded run of the profiled applications whose runs on
# one rank take 1.5 s or more it filled 67% (NPB EP S) to 89% (miniAMR, NPB LU W), less where
# start-up weighs more (NPB's classes S, 35% to 67%) or other work shared the machine
# (LAMMPS' LJ 0.8 input, 45%)
BUSY_CORES = 0.7
P2P, LIBRARY, OTHER_COLLECTIVES = "p2p communication", "MPI library", "other collectives"
OTHERS_PART = PART_LABELS["others_time"]
SCALING = "Scaling"    # the title when the scaling part cannot be diagnosed
NOT_SEEN = "not seen"  # a time the study did not measure


def sections(study_dir: Path, p_values: Sequence[int] | None = None, *,
             data: StudyData | None = None) -> list[Section]:
    """The scaling diagnosis of one study: strong (and weak) scaling, kernel ranking,
    non-scalable functions, load imbalance, contention and CPI checks. Without runs at
    3 P or without model.json, the scaling part says why and the imbalance is still there."""
    study_dir = Path(study_dir)
    data = data or read_study(study_dir)
    model = data.model
    measurements = check_table(data.table, str(study_dir / layout.MEASUREMENTS),
                               "measurements", model.params if model else None)
    measured = sorted(float(p) for p in measurements["p"].unique())
    params = model.params if model else parameter_columns(measurements)
    result = []
    if len(measured) < MIN_DISTINCT_P:
        shown = ", ".join(f"{p:g}" for p in measured)
        result.append(Section(SCALING, note=(
            f"not diagnosed: needs measurements at {MIN_DISTINCT_P} or more process counts; "
            f"{study_dir} has P = {shown}: measure more P (apmt diagnose --np 1 2 4 -- ..., "
            "or a study with apmt profile)")))
    elif model is None:
        result.append(Section(SCALING, note=(
            f"not diagnosed: {study_dir / layout.MODEL} is missing (apmt fit "
            f"{study_dir / layout.MEASUREMENTS} -o {study_dir / layout.MODEL})")))
    else:
        scales = _p_values(p_values, measured, data.predicted_p, study_dir)
        result += scaling_sections(model, measurements, scales, data.oversubscribed_p)
    threshold = model.threshold if model else KEY_THRESHOLD
    result.append(imbalance.section(measurements, data.comm, params, threshold,
                                    data.oversubscribed_p))
    if model is not None:
        result.append(checks_section(model))
    return result


def scaling_sections(model: Model, measurements: pd.DataFrame, p_values: list[float],
                     oversubscribed_p: set[int] = frozenset()) -> list[Section]:
    """Strong scaling (and weak, for a weak-scaling model), ranking and non-scalable
    functions at the given P; ``oversubscribed_p``: the P of runs with more ranks than
    cores (apmt.diagnose.imbalance.oversubscribed)."""
    # the work per rank of per-rank parameters stays as P grows: that is weak scaling
    first = "weak" if model.scaling == "weak" and not _total_params(model) else "strong"
    p_values = [p for p in p_values if p >= model.first_p]   # what the model describes
    values, setting = scale_values(model, measurements, p_values, "strong")
    strong = components(model, values)
    result = [scaling_section(model, measurements, values, strong, first, setting,
                              oversubscribed_p)]
    if model.scaling == "weak" and _total_params(model):
        values, setting = scale_values(model, measurements, p_values, "weak")
        weak = components(model, values)
        result.append(scaling_section(model, measurements, values, weak, "weak", setting,
                                      oversubscribed_p))
    return [*result, ranking_section(model, strong, measurements["p"].max()),
            nonscalable_section(model, measurements, strong)]


# ---------------------------------------------------------------------------- the numbers

def scale_values(model: Model, measurements: pd.DataFrame, p_values: Sequence[float],
                 mode: str = "strong") -> tuple[dict[str, np.ndarray], str]:
    """The points to diagnose and how they were chosen: every parameter at its largest
    measured value (strong), or the total ones growing with P from the largest measured run
    so that the work per rank stays (weak)."""
    p = np.asarray(sorted(set(float(v) for v in p_values)), float)
    largest = {name: float(measurements[name].max()) for name in model.params}
    values = {"p": p, **{name: np.full(len(p), value) for name, value in largest.items()}}
    per_rank = set(model.per_rank_params)
    described = [f"{name}={value:.10g}" + (" per rank" if name in per_rank else "")
                 for name, value in largest.items()]
    grown = _grown_by_work(model) if mode == "weak" else []
    by_work = _weak_by_work(model, measurements, values, described, grown) if grown else None
    if by_work is not None:
        return by_work
    if mode == "weak":
        p_ref = float(measurements["p"].max())
        for name in _total_params(model):
            work = float(measurements.loc[measurements["p"] == p_ref, name].max()) / p_ref
            values[name] = work * p
            described = [d for d in described if not d.startswith(f"{name}=")]
            described.append(f"{name}/P={work:.4g} as at P={p_ref:g}")
    return values, ", ".join(described)


def _grown_by_work(model: Model) -> list[str]:
    """The total parameters the model's work expression reads: weak scaling grows them."""
    return sorted(set(_total_params(model)) & work_names(model.work)) if model.work else []


def _weak_by_work(model: Model, measurements: pd.DataFrame, values: dict[str, np.ndarray],
                  described: list[str], grown: list[str]
                  ) -> tuple[dict[str, np.ndarray], str] | None:
    """Weak scaling by the work expression: its parameters (``grown``, _grown_by_work) grow
    from the largest measured run so that the work per rank stays as there
    (apmt.work.constant_work); None when growing them cannot keep it (then each grows with
    P)."""
    p_ref = float(measurements["p"].max())
    reference = measurements[measurements["p"] == p_ref]
    base = {"p": np.array([p_ref]), **{name: np.array([float(reference[name].max())])
                                       for name in model.params}}
    target = float(evaluate_work(model.work, base)[0])
    factors = constant_work(model.work, {**values, **{name: np.full(len(values["p"]),
                                                                     base[name][0])
                                                      for name in grown}}, grown, target)
    if factors is None:
        return None
    values = dict(values)
    for name in grown:
        values[name] = base[name][0] * factors
    described = [d for d in described if d.split("=")[0] not in grown]
    described.append(f"{', '.join(grown)} grown so that {model.work} = {target:.4g} per rank "
                     f"as at P={p_ref:g}")
    return values, ", ".join(described)


def components(model: Model, values: dict[str, np.ndarray]) -> pd.DataFrame:
    """The model's time per component (kernel or MPI operation) and part of Eq. 2 at the
    points (columns p, kernel, part, time): apmt.predict.assemble's parts split by where they
    come from; summed per part they are assemble's parts."""
    rows = []
    for source, part, operation, bounds in contributions(model, values):
        if part == "comm_time":
            label = _comm_part(operation.op, operation.kind) if operation else \
                _comm_part(source)
        else:
            label = OTHERS_PART if part == "others_time" else PART_LABELS[part]
        rows.append((source, label, bounds[0]))
    frames = [pd.DataFrame({"p": values["p"], "kernel": kernel, "part": part, "time": time})
              for kernel, part, time in rows]
    columns = ["p", "kernel", "part", "time"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else \
        pd.DataFrame(columns=columns)


def _comm_part(name: str, kind: str | None = None) -> str:
    """p2p communication, the collective's own name, or the MPI library's internals."""
    if kind is None:
        leaf = name.rsplit("/", 1)[-1]
        if not MPI_NAME.match(leaf):
            return LIBRARY
        kind, name = kind_of(leaf), leaf
    return P2P if kind == "p2p" else name


def breakdown(model: Model, values: dict[str, np.ndarray], parts: pd.DataFrame,
              measurements: pd.DataFrame, trust: list[str]) -> pd.DataFrame:
    """One row per P: measured and modelled application time, how far the latter can be
    trusted (apmt.predict.application_trust's levels) and the parts (see the module
    docstring); negative predictions count as zero."""
    wide = parts.assign(time=parts["time"].clip(lower=0.0)).pivot_table(
        index="p", columns="part", values="time", aggfunc="sum", sort=False)
    wide = _fold_minor_collectives(wide)
    p = values["p"]
    table = pd.DataFrame({"p": p, "beyond_data": p > measurements["p"].max(),
                          "trust": trust,
                          "measured": _measured_app(model, measurements, values),
                          "time": assemble(model, values)[TIME_METRIC][0]})
    table = table.join(wide, on="p")
    table["dominant"] = wide.loc[p].idxmax(axis=1).to_numpy()
    return table.astype({"p": int})


def _fold_minor_collectives(wide: pd.DataFrame) -> pd.DataFrame:
    """Collectives under MINOR_SHARE at every P become one column; parts in a fixed order."""
    shares = wide.div(wide.sum(axis=1), axis=0)
    fixed = [PART_LABELS["comp_time"], PART_LABELS["mem_time"], P2P]
    tail = [LIBRARY, OTHERS_PART]
    collectives = [c for c in wide.columns if c not in (*fixed, *tail)]
    minor = [c for c in collectives if (shares[c] < MINOR_SHARE).all()]
    if len(minor) > 1:
        wide = wide.assign(**{OTHER_COLLECTIVES: wide[minor].sum(axis=1)}).drop(columns=minor)
        collectives = [c for c in collectives if c not in minor] + [OTHER_COLLECTIVES]
    order = [c for c in (*fixed, *collectives, *tail) if c in wide.columns]
    return wide[order]


def _measured_app(model: Model, measurements: pd.DataFrame,
                  values: dict[str, np.ndarray]) -> np.ndarray:
    """The mean measured application time at each point that was measured, else NaN."""
    app = model.app_kernel or APP_KERNEL
    if app in set(measurements["kernel"]):
        return _at_points(measured_points(measurements, model.params, app), model, values)
    # no application kernel: the model's time is the sum of the kernels, so too here
    return _kernels_time(model, measurements, values)


def _kernels_time(model: Model, measurements: pd.DataFrame,
                  values: dict[str, np.ndarray]) -> np.ndarray:
    """One rank's measured time summed over its kernels (the application's own time left
    out), the mean over the runs, at each point that was measured, else NaN."""
    times = measurements[(measurements["metric"] == TIME_METRIC)
                         & (measurements["kernel"] != (model.app_kernel or APP_KERNEL))]
    runs = per_run(times, model.params)
    summed = runs.groupby(["p", *model.params, "rep"], as_index=False)["value"].sum()
    measured = summed.groupby(["p", *model.params], as_index=False)["value"].mean()
    return _at_points(measured.rename(columns={"value": "mean"}), model, values)


def _at_points(measured: pd.DataFrame, model: Model, values: dict[str, np.ndarray]
               ) -> np.ndarray:
    """``measured``'s mean at each point of ``values`` (NaN where it has none)."""
    result = np.full(len(values["p"]), np.nan)
    for index in range(len(values["p"])):
        mask = np.isclose(measured["p"].to_numpy(float), values["p"][index])
        for name in model.params:
            mask &= np.isclose(measured[name].to_numpy(float), values[name][index])
        if mask.any():
            result[index] = float(measured.loc[mask, "mean"].iloc[0])
    return result


def kernel_times(model: Model, parts: pd.DataFrame) -> pd.DataFrame:
    """Per key or non-scalable kernel and P: its modelled time (all its parts) and its rank
    among them (1: the most expensive); columns p, kernel, time, rank."""
    ranked = {k["kernel"] for k in model.kernels_of("key", "non-scalable")}
    rows = parts[parts["kernel"].isin(ranked)]
    times = rows.groupby(["p", "kernel"], as_index=False)["time"].sum()
    times["rank"] = times.groupby("p")["time"].rank(ascending=False, method="first")
    return times.astype({"rank": int})


# --------------------------------------------------------------------------- the sections

def scaling_section(model: Model, measurements: pd.DataFrame, values: dict[str, np.ndarray],
                    parts: pd.DataFrame, mode: str, setting: str,
                    oversubscribed_p: set[int] = frozenset()) -> Section:
    """Which part dominates at each P, where the total stops falling and what makes it rise;
    what runs with more ranks than cores mean for it."""
    levels, reasons = application_trust(model, values)
    table = breakdown(model, values, parts, measurements, levels)
    measured_max = float(measurements["p"].max())
    findings = _dominance(table, measured_max) + _minimum(table, parts, measured_max, mode)
    findings += _unsupported(values, levels, reasons)
    findings += _outgrowing(model, values, table)
    findings += _shared_cores(table, oversubscribed_p, mode)
    findings += _busy_cores(model, measurements, values, table, oversubscribed_p)
    title = f"{mode.capitalize()} scaling" + (f" ({setting})" if setting else "")
    return Section(title, findings, table, _scaling_note(model, parts, measurements))


def _shared_cores(table: pd.DataFrame, oversubscribed_p: set[int], mode: str) -> list[Finding]:
    """Runs with more ranks than cores: their times hold the waits for a core, and a model of
    them predicts runs as crowded, not a cluster's (on 2 cores miniFE's time stopped falling
    at P = 3, the first such run, and the model carried the crowding to 15 s at P = 256).
    Once the ranks share the cores the total cannot fall much: a stop there, or at the last
    P before, is the machine's."""
    if not oversubscribed_p:
        return []
    first = min(oversubscribed_p)
    shown = ", ".join(f"{p:g}" for p in sorted(oversubscribed_p))
    p, stop = table["p"].to_numpy(float), ""
    before = p[p < first]
    edge = before[-1] if len(before) else first   # the last P before the crowded ones, if shown
    if mode == "strong" and p[int(np.argmin(table["time"].to_numpy(float)))] >= edge:
        stop = ("; the total stops falling where the ranks share cores (from "
                f"P={first}), which says more about the machine than about the application")
    return [Finding("warning", f"the runs at P={shown} had more ranks than cores: their times "
                               "include waiting for a core, and the model's times from them on "
                               "are of runs as crowded, not of runs with a core per rank; "
                               "profile on as many cores as ranks to predict a cluster" + stop,
                    p=first)]


def _busy_cores(model: Model, measurements: pd.DataFrame, values: dict[str, np.ndarray],
                table: pd.DataFrame, oversubscribed_p: set[int]) -> list[Finding]:
    """How full the shared cores were in the largest crowded run: its ranks' sampled time
    (one rank's, times P) over the cores, against the run's wall time. The cores are as many
    as the largest P that ran uncrowded. Near 1 (BUSY_CORES and up) the crowded runs' time
    is the ranks' total work shared out over the cores: miniAMR's 32 ranks on 2 cores, 89%,
    where its parts per rank (0.3 s of computation, 1.2 s in MPI) left 6.8 s of the modelled
    8.3 s unaccounted."""
    alone = [p for p in measurements["p"].unique() if p not in oversubscribed_p]
    if not oversubscribed_p or not alone:
        return []
    per_rank = _kernels_time(model, measurements, values)
    p, wall = table["p"].to_numpy(float), table["measured"].to_numpy(float)
    crowded = np.flatnonzero(np.isin(p, list(oversubscribed_p)) & np.isfinite(wall)
                             & np.isfinite(per_rank) & (wall > 0))
    if not len(crowded):
        return []
    at, cores = crowded[-1], max(alone)
    busy = p[at] * per_rank[at] / cores / wall[at]
    why = ("; a crowded run's time is its ranks' total work shared out over the cores, and "
           "the model's time beyond the measured P carries that on" if busy >= BUSY_CORES
           else "; in the rest no rank was sampled (start-up, waits off the cores)")
    return [Finding("info", f"at P={p[at]:g} the ranks' sampled time, {p[at]:g} x "
                            f"{seconds(per_rank[at])} over {cores:g} cores, fills {busy:.0%} of "
                            f"the run's {seconds(wall[at])}" + why, p=int(p[at]))]


def _outgrowing(model: Model, values: dict[str, np.ndarray], table: pd.DataFrame
                ) -> list[Finding]:
    """The parts whose own forecast outgrows the application's (apmt.predict.outgrowing),
    named at the largest such P, the three largest there: the model holds each at the
    whole's, and which of the two forecasts errs only a run at that scale can tell. The
    whole's own fit is told from the model's time there (``table``, the breakdown: a row per
    point of ``values``), which reconciles the two: miniWeather's at P = 256 is 6.53 s as
    fitted on its own, 9.41 s as the model gives it, both shown, where one bare
    'application's time' read as either."""
    whole = whole_time(model, values)
    found = outgrowing(model, values, whole)
    if not found:
        return []
    at = max(int(np.flatnonzero(over)[-1]) for _, over, _ in found)
    named = sorted((own[at], source) for source, over, own in found if over[at])[::-1][:3]
    parts = ", ".join(f"{source} ({seconds(own)})" for own, source in named)
    more = f" and {len(found) - len(named)} more" if len(found) > len(named) else ""
    one = len(named) == 1 and not more
    told = "the forecast of" if one else "the forecasts of"
    exceed = "on its own exceeds" if one else "on their own exceed"
    p = values["p"][at]
    return [Finding("warning", f"at P={p:g} {told} {parts}{more} {exceed} the application's "
                               f"time as fitted on its own ({seconds(whole[0][at])}; the "
                               "model's, reconciled with its parts: "
                               f"{seconds(table['time'].iloc[at])}): "
                               f"the model holds {'it' if one else 'each'} there at that, as no "
                               "part outlasts the run, and at least one of the forecasts is "
                               "wrong; a run at that scale tells which", p=int(p))]


def _unsupported(values: dict[str, np.ndarray], levels: list[str],
                 reasons: list[str]) -> list[Finding]:
    """The P whose modelled time is unsupported (apmt.trust): named, with the first reason."""
    bad = [i for i, level in enumerate(levels) if level == UNSUPPORTED]
    if not bad:
        return []
    where = ", ".join(f"P={values['p'][i]:g}" for i in bad)
    return [Finding("warning", f"the model's time at {where} is unsupported, not a prediction "
                               f"to plan with: {reasons[bad[0]]}", p=int(values["p"][bad[0]]))]


def _dominance(table: pd.DataFrame, measured_max: float) -> list[Finding]:
    """One finding per run of consecutive P with the same dominant part."""
    parts = [c for c in table.columns if c not in ("p", "beyond_data", "trust", "measured",
                                                   "time", "dominant")]
    shares = table[parts].div(table[parts].sum(axis=1), axis=0)
    runs = (table["dominant"] != table["dominant"].shift()).cumsum()
    findings = []
    for _, rows in table.groupby(runs, sort=False):
        part = rows["dominant"].iloc[0]
        first, last = rows.index[0], rows.index[-1]
        where = _p_range(table.loc[first, "p"], table.loc[last, "p"], measured_max)
        share = _range(shares.loc[first, part], shares.loc[last, part], "{:.0%}")
        findings.append(Finding("info", f"largest part at {where}: {part} ({share} of the "
                                        "time)", p=int(table.loc[last, "p"])))
    return findings


def _minimum(table: pd.DataFrame, parts: pd.DataFrame, measured_max: float,
             mode: str) -> list[Finding]:
    """Strong scaling: where the total stops falling (its minimum over P) and the components
    that grow from there to the largest P. Weak scaling: whether the time per rank grows."""
    time, p = table["time"].to_numpy(float), table["p"].to_numpy(float)
    if mode == "weak":
        return _weak_growth(time, p, parts, measured_max)
    best, last = int(np.argmin(time)), len(p) - 1
    if time[last] <= time[best] * (1 + FLAT):
        flat = f" (flat within {FLAT:.0%} from {_p(p[best], measured_max)})" \
            if best != last else ""
        return [Finding("info", (
            f"total time keeps falling up to {_p(p[last], measured_max)}{flat}: "
            f"{seconds(time[0])} at {_p(p[0], measured_max)} -> {seconds(time[last])} (parallel "
            f"efficiency {time[0] * p[0] / (time[last] * p[last]):.0%})"), p=int(p[last]))]
    severity = "problem" if p[best] <= measured_max else "warning"
    findings = [Finding(severity, (
        f"total time stops falling at {_p(p[best], measured_max)}: minimum "
        f"{seconds(time[best])}; {seconds(time[last])} at {_p(p[last], measured_max)} "
        f"(+{seconds(time[last] - time[best])})"),
        p=int(p[best]))]
    return findings + _rise_causes(parts, p[best], p[last], measured_max, severity)


def _weak_growth(time: np.ndarray, p: np.ndarray, parts: pd.DataFrame,
                 measured_max: float) -> list[Finding]:
    """Weak scaling keeps the work per rank: ideally the time stays; what makes it grow."""
    last = len(p) - 1
    text = (f"{seconds(time[0])} at {_p(p[0], measured_max)} -> {seconds(time[last])} at "
            f"{_p(p[last], measured_max)} (weak-scaling efficiency {time[0] / time[last]:.0%})")
    if time[last] <= time[0] * (1 + FLAT):
        return [Finding("info", f"time per rank stays within {FLAT:.0%}: {text}",
                        p=int(p[last]))]
    severity = "problem" if time[p <= measured_max][-1] > time[0] * (1 + FLAT) else "warning"
    return [Finding(severity, f"time per rank grows with P: {text}", p=int(p[last])),
            *_rise_causes(parts, p[0], p[last], measured_max, severity)]


def _rise_causes(parts: pd.DataFrame, low_p: float, high_p: float, measured_max: float,
                 severity: str) -> list[Finding]:
    """The components whose time grows most from the minimum to the largest P."""
    at = parts.assign(time=parts["time"].clip(lower=0.0)).pivot_table(
        index=["kernel", "part"], columns="p", values="time", aggfunc="sum")
    growth = (at[high_p] - at[low_p]).sort_values(ascending=False)
    growth = growth[growth >= RISE_SHARE * growth[growth > 0].sum()]
    total = at[high_p].sum()
    findings = []
    for kernel, part in growth.head(RISE_CAUSES).index:
        what = kernel if kernel == part else f"{kernel} ({part})"
        findings.append(Finding(severity, (
            f"the rise from {_p(low_p, measured_max)} comes from {what}: "
            f"{seconds(at.loc[(kernel, part), low_p])} -> "
            f"{seconds(at.loc[(kernel, part), high_p])} "
            f"at {_p(high_p, measured_max)}, {at.loc[(kernel, part), high_p] / total:.0%} of "
            "the time there"), kernel, None, int(high_p)))
    return findings


def _scaling_note(model: Model, parts: pd.DataFrame, measurements: pd.DataFrame) -> str:
    measured = sorted(float(p) for p in measurements["p"].unique())
    notes = [f"* predicted beyond the measured P (largest measured: {measured[-1]:g})"]
    negative = sorted(set(parts.loc[parts["time"] < 0, "kernel"]))
    if negative:
        notes.append("predicted negative, counted as 0: " + ", ".join(negative))
    if model.app_kernel not in (None, APP_KERNEL):
        notes.append(f"time is the fit of {model.app_kernel!r}, the parts the fits of the "
                     "other kernels")
    nested = [k["kernel"] for k in model.kernels_of("nested")]
    if nested:
        notes.append(f"nested regions, inside the parts and not counted again: "
                     f"{', '.join(nested)}")
    regime = model.calibration.get("regime", {})
    if "start" in regime:
        notes.append(regime["note"])
        before = ", ".join(f"{p:g}" for p in measured if p < regime["start"])
        if before:
            notes.append(f"the measured P = {before} are left out here: the model does not "
                         "describe them")
    return "; ".join(notes)


def ranking_section(model: Model, parts: pd.DataFrame, measured_max: float) -> Section:
    """Kernels ranked by modelled time at each P; flagged: minor at the smallest P and among
    the TOP_RANKS at the largest (paper 001's edgevunpack)."""
    times = kernel_times(model, parts)
    title = "Kernel ranking across scales"
    if times.empty:
        return Section(title, note="no key or non-scalable kernel has a time model")
    table = _ranking_table(model, times, parts)
    first, last = times["p"].min(), times["p"].max()
    shown = sorted({first, measured_max, last} & set(times["p"]))
    findings = [_top(times, p, parts, measured_max) for p in shown]
    for _, row in table[table["flagged"]].iterrows():
        findings.append(Finding("warning", (
            f"{row['kernel']} is minor at {_p(first, measured_max)} (#{row['rank_first']}, "
            f"{seconds(row['time_first'])}) but #{row['rank_last']} at {_p(last, measured_max)} "
            f"({seconds(row['time_last'])}, {row['share_last']:.0%} of the time), among the top "
            f"{TOP_RANKS} from {_p(row['top_from'], measured_max)}: a candidate for tuning "
            "that runs at small P would not show"), row["kernel"], None, int(last)))
    if not table["flagged"].any():
        findings.append(Finding("info", f"no kernel climbs into the top {TOP_RANKS} between "
                                        f"{_p(first, measured_max)} and "
                                        f"{_p(last, measured_max)}"))
    findings += _runtime_shares(model, parts, [first, last], measured_max)
    return Section(title, findings, table, f"ranked: the key and non-scalable kernels of the "
                                           f"application; the others are summed in {OTHERS}, "
                                           f"the run-time system's parts not ranked")


def _runtime_shares(model: Model, parts: pd.DataFrame, at: list[float],
                    measured_max: float) -> list[Finding]:
    """How much of the modelled time the run-time system takes (MPI's internals, the loader,
    the C library and the OS kernel), by bucket: what the ranking leaves out."""
    buckets = {k["kernel"] for k in model.kernels
               if k["class"] == "runtime" or k["kernel"] == MPI_RUNTIME}
    rows = parts[parts["kernel"].isin(buckets)]
    if rows.empty:
        return []
    findings = []
    for p in at:
        total = parts.loc[parts["p"] == p, "time"].clip(lower=0.0).sum()
        here = rows[rows["p"] == p].groupby("kernel")["time"].sum().clip(lower=0.0)
        if total <= 0 or here.empty:
            continue
        each = ", ".join(f"{kernel} {time / total:.0%}"
                         for kernel, time in here.sort_values(ascending=False).items())
        findings.append(Finding("info", f"the run-time system takes {here.sum() / total:.0%} "
                                        f"of the modelled time at {_p(p, measured_max)} "
                                        f"({each})", p=int(p)))
    return findings


def _ranking_table(model: Model, times: pd.DataFrame, parts: pd.DataFrame) -> pd.DataFrame:
    first, last = times["p"].min(), times["p"].max()
    by_p = times.set_index(["kernel", "p"])
    classes = model.classes
    total_last = parts.loc[parts["p"] == last, "time"].clip(lower=0.0).sum()
    top = times[times["rank"] <= TOP_RANKS].groupby("kernel")["p"].min()
    rows = []
    for kernel in times.loc[times["p"] == last].sort_values("rank")["kernel"]:
        head, tail = by_p.loc[(kernel, first)], by_p.loc[(kernel, last)]
        rows.append({"kernel": kernel, "class": classes[kernel],
                     "rank_first": int(head["rank"]), "time_first": head["time"],
                     "rank_last": int(tail["rank"]), "time_last": tail["time"],
                     "share_last": tail["time"] / total_last,
                     "top_from": top.get(kernel, np.nan),
                     "flagged": bool(head["rank"] > TOP_RANKS >= tail["rank"]
                                     and tail["time"] >= model.threshold * total_last)})
    return pd.DataFrame(rows)


def _top(times: pd.DataFrame, p: float, parts: pd.DataFrame, measured_max: float) -> Finding:
    rows = times[times["p"] == p].sort_values("rank").head(TOP_RANKS)
    total = parts.loc[parts["p"] == p, "time"].clip(lower=0.0).sum()
    listed = ", ".join(f"#{r['rank']} {r['kernel']} {seconds(r['time'])} ({r['time'] / total:.0%})"
                       for _, r in rows.iterrows())
    return Finding("info", f"top kernels at {_p(p, measured_max)}: {listed}", p=int(p))


def nonscalable_section(model: Model, measurements: pd.DataFrame,
                        parts: pd.DataFrame) -> Section:
    """Functions whose time per rank does not fall with P (grows, in weak scaling): the
    non-scalable class, and key kernels with the same slope."""
    limit = NONSCALABLE_SLOPE[model.scaling]
    kernels = [k for k in model.kernels if k["class"] == "non-scalable"
               or (k["class"] == "key" and k["slope"] is not None and k["slope"] > limit)]
    title = "Non-scalable functions"
    trend = "does not fall" if model.scaling == "strong" else "grows"
    if not kernels:
        return Section(title, [Finding("info", (
            f"every function's time per rank scales: none above P^{limit:g} (slope of time "
            "per rank over P)"))])
    table = _nonscalable_table(model, measurements, parts, kernels)
    last = parts["p"].max()
    total = parts.loc[parts["p"] == last, "time"].clip(lower=0.0).sum()
    measured_max = float(measurements["p"].max())
    first_p, last_p = float(measurements["p"].min()), measured_max
    findings = []
    for _, row in table.head(MAX_LISTED).iterrows():
        share = row["predicted_last"] / total
        severity = "problem" if share >= model.threshold else "warning"
        findings.append(Finding(severity, (
            f"{row['kernel']}: time per rank ~ P^{row['slope']:.2f}, {trend} with P: "
            f"{seconds(row['measured_first'], missing=NOT_SEEN)} at P={first_p:g}, "
            f"{seconds(row['measured_last'], missing=NOT_SEEN)} at P={last_p:g} (measured); "
            f"{seconds(row['predicted_last'], missing=NOT_SEEN)} at {_p(last, measured_max)} "
            f"({share:.0%} of the time)"), row["kernel"], None, int(last)))
    note = f"{len(table) - MAX_LISTED} more in the table" if len(table) > MAX_LISTED else None
    return Section(title, findings, table, note)


def _nonscalable_table(model: Model, measurements: pd.DataFrame, parts: pd.DataFrame,
                       kernels: list[dict]) -> pd.DataFrame:
    series = points(measurements[measurements["metric"] == TIME_METRIC], model.params)
    series = series.sort_values(["p", *model.params]).groupby(["kernel", "p"]).last()
    last = parts["p"].max()
    predicted = parts[parts["p"] == last].groupby("kernel")["time"].sum()
    first_p, last_p = measurements["p"].min(), measurements["p"].max()

    def measured(kernel: str, p: float) -> float:
        return float(series["value"].get((kernel, p), np.nan))

    rows = [{"kernel": k["kernel"], "class": k["class"], "slope": k["slope"],
             "measured_first": measured(k["kernel"], first_p),
             "measured_last": measured(k["kernel"], last_p),
             "predicted_last": float(predicted.get(k["kernel"], np.nan))} for k in kernels]
    return pd.DataFrame(rows).sort_values("predicted_last", ascending=False,
                                          ignore_index=True)


def checks_section(model: Model) -> Section:
    """Paper 000's warnings: memory contention E above CONTENTION_LIMIT in the profiling
    runs (predictions for larger sizes may be optimistic), and a CPI that varies over runs
    (Eq. 4) though the model takes it as constant."""
    contention, cpi = model.contention, model.cpi
    kernels = sorted(set(contention) | set(cpi))
    table = pd.DataFrame({"kernel": kernels,
                          "contention": [contention.get(k, np.nan) for k in kernels],
                          "cpi": [cpi[k].cpi if k in cpi else np.nan for k in kernels],
                          "cpi_deviation": [cpi[k].deviation if k in cpi else np.nan
                                            for k in kernels],
                          "bf_mem": [cpi[k].bf_mem if k in cpi and cpi[k].bf_mem is not None
                                     else np.nan for k in kernels],
                          "bf_mem_path": [cpi[k].path or "" if k in cpi else ""
                                          for k in kernels]})
    findings = [Finding("info", text) for text in _counter_mode(model)]
    described = len(findings)
    for kernel, ratio in contention.items():
        if ratio > CONTENTION_LIMIT:
            findings.append(Finding("warning", (
                f"{kernel}: memory contention E = LLC misses / memory accesses = {ratio:.2g} "
                f"> {CONTENTION_LIMIT:g} in the profiling runs: predictions for larger "
                "problem sizes may be optimistic; profile at other P (paper 000, 4.2)"), kernel))
    for kernel, entry in cpi.items():
        if entry.deviation > CPI_DEVIATION_LIMIT:
            runs = ", ".join(f"{run}: {value:.3g}" for run, value in entry.per_run.items())
            findings.append(Finding("warning", (
                f"{kernel}: CPI varies over runs, deviation (Eq. 4) {entry.deviation:.2g} > "
                f"{CPI_DEVIATION_LIMIT:g} ({runs}): the model's constant CPI "
                f"{entry.cpi:.3g} is doubtful for it"), kernel))
    if len(findings) == described and kernels:
        findings.append(Finding("info", (
            f"E <= {CONTENTION_LIMIT:g} and CPI deviation <= {CPI_DEVIATION_LIMIT:g} for "
            f"every kernel measured ({len(kernels)})")))
    return Section("Memory contention and CPI", findings, table if kernels else None,
                   _checks_note(contention, cpi))


def _counter_mode(model: Model) -> list[str]:
    """How the model's computation is built: counter mode with where its cycles come from
    and, per key kernel, its CPI split (Cpi.describe); or nothing in time mode."""
    if model.mode != "counters":
        return []
    cycles = model.counters.get("cycles", "counted")
    origin = (f"derived from the sampled time x {model.counters.get('clock_ghz'):g} GHz"
              if cycles == "derived" else "counted")
    return [f"counter mode (Eq. 2): T_comp = instructions x CPI_core / f and BF_mem x T_mem "
            f"per kernel; cycles {origin}",
            *(f"{kernel}: {entry.describe()}" for kernel, entry in model.counter_kernels())]


def _checks_note(contention: dict, cpi: dict) -> str | None:
    missing = []
    if not contention:
        missing.append("E (needs llc_misses, mem_loads and mem_stores of the key kernels)")
    if not cpi:
        missing.append("CPI (needs cycles and instructions)")
    return ("not measured: " + "; ".join(missing)) if missing else None


def _p_values(requested: Sequence[int] | None, measured: list[float],
              predicted: list[float], study_dir: Path) -> list[float]:
    """The P to diagnose: as requested, or the measured P, the doublings beyond them and
    the P of predictions.csv."""
    if requested is None:
        return sorted(set(scale_points(measured)) | set(predicted))
    for value in requested:
        if not _is_process_count(value):
            raise ApmtError(f"{study_dir}: p_values: {value!r} is not a process count")
    return sorted(set(float(v) for v in requested))


def _is_process_count(value: object) -> bool:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool) and number.is_integer() and number >= 1


def _total_params(model: Model) -> list[str]:
    return [name for name in model.params if name not in model.per_rank_params]


def _p(p: float, measured_max: float) -> str:
    return f"P={p:g}" + ("*" if p > measured_max else "")


def _p_range(first: float, last: float, measured_max: float) -> str:
    if first == last:
        return _p(first, measured_max)
    return f"{_p(first, measured_max)} to {_p(last, measured_max)[2:]}"


def _range(first: float, last: float, form: str) -> str:
    low, high = form.format(first), form.format(last)
    return low if low == high else f"{low} to {high}"
