"""Validation on held-out runs: apmt's per-series fits next to the baselines.

The split holds out given points (``p=max`` by default: the largest P), fits every series on
the rest with every method, and records each held-out point's absolute percentage error. For a
communication table the series are the operations' time per rank, the amounts the model sums
into its communication time: apmt answers with the model's MPI operations (apmt.comm: calls,
volume and the fitted or LogGP time, from the raw table's runs), the baselines with
their formulas fitted to the same per-rank times.

The output is the ``evaluation`` table documented in apmt.tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from apmt.comm import comm_keys, comm_points
from apmt.display import seconds
from apmt.errors import ApmtError
from apmt.fit import SeriesFit
from apmt.fit_table import fit_all
from apmt.model import Model, build_model, measured_parts
from apmt.modelers import KEYS, MODELERS, baseline, operations_predict
from apmt.predict import predicted_parts
from apmt.series import MIN_DISTINCT_P, point_values, points
from apmt.tables import APP_KERNEL, TIME_METRIC


def parse_holdout(spec: str, table: pd.DataFrame) -> dict[str, list[float]]:
    """``p=max``, ``p=512``, ``p=256,512;n=9000``: which values of which columns to hold out."""
    holdout: dict[str, list[float]] = {}
    for part in filter(None, re.split(r"[;\s]+", spec)):
        column, _, text = part.partition("=")
        if column not in table.columns or not text:
            raise ApmtError(f"holdout {part!r}: expected COLUMN=VALUE[,VALUE] or COLUMN=max "
                            f"with a column of the table ({', '.join(map(str, table.columns))})")
        if text == "max":
            holdout[column] = [float(table[column].max())]
            continue
        try:
            holdout[column] = [float(value) for value in text.split(",")]
        except ValueError:
            raise ApmtError(f"holdout {part!r}: {text!r} is not a list of numbers") from None
    if not holdout:
        raise ApmtError(f"holdout {spec!r}: nothing to hold out")
    return holdout


def split(table: pd.DataFrame, holdout: dict[str, list[float]]) -> tuple[pd.DataFrame, ...]:
    held = np.zeros(len(table), dtype=bool)
    for column, values in holdout.items():
        held |= table[column].isin(values).to_numpy()
    if held.all() or not held.any():
        raise ApmtError(f"holdout {holdout}: leaves {'no' if held.all() else 'all'} points "
                        "to fit on")
    return table[~held], table[held]


def series_points(table: pd.DataFrame, kind: str, params: list[str]) -> pd.DataFrame:
    """Points with columns kernel, metric, p, params, value, reps for either kind of table;
    of a communication table, each operation's time per rank (metric time, kernel the
    operation's name as the model's: apmt.comm.Operation.name) where it took time, as the
    model fits it (apmt.comm.fit_operations)."""
    if kind == "measurements":
        return points(table, params)
    comm = comm_points(table, params)
    comm = comm[comm["time"] > 0]
    keys = list(comm_keys(table))
    comm = comm.assign(kernel=comm[keys].astype(str).agg("/".join, axis=1), metric=TIME_METRIC,
                       value=comm["time"])
    return comm[[*KEYS, "p", *params, "value", "reps"]]


def evaluate(table: pd.DataFrame, kind: str, params: list[str], holdout: str,
             baselines: list[str], source: str,
             per_rank_params: frozenset[str] = frozenset(),
             work: str | None = None, whole: pd.DataFrame | None = None) -> pd.DataFrame:
    """Errors of apmt and each baseline (apmt.modelers, by name) at the held-out points of
    every series. The baselines that fit here are compared on the series apmt models, each
    series' rows together; an external one (Extra-P) on every series it models, after them.
    ``whole``: for a communication table, the measurements table of the same runs, whose
    application time bounds the operations' as the model bounds them (apmt.predict.within);
    a measurements table bounds its kernels' times by its own."""
    chosen = [baseline(name) for name in baselines]
    train_table, test_table = split(table, parse_holdout(holdout, table))
    train, test = (series_points(part, kind, params) for part in (train_table, test_table))
    arguments = (params, per_rank_params, source, work)
    ours = MODELERS["apmt"].predict(train, test, *arguments) if kind == "measurements" else \
        operations_predict(train_table, test, params, source,
                           None if whole is None else _whole_fit(whole, holdout, *arguments))
    modelled = test.merge(ours[KEYS].drop_duplicates(), on=KEYS)
    beside = pd.concat([ours, *(one.predict(train, modelled, *arguments)
                                for one in chosen if not one.external)], ignore_index=True)
    result = pd.concat([beside.sort_values(KEYS, kind="stable"),
                        *(one.predict(train, test, *arguments) for one in chosen
                          if one.external)], ignore_index=True)
    result["ape"] = 100.0 * np.abs(result["predicted"] - result["measured"]) / result["measured"]
    return result


def _whole_fit(whole: pd.DataFrame, holdout: str, params: list[str],
               per_rank_params: frozenset[str], source: str, work: str | None
               ) -> SeriesFit | None:
    """The application's time fitted, as the model fits it (in its table), on the runs of
    ``whole`` (a measurements table) that the holdout leaves to fit; None without one."""
    train_table, _ = split(whole, parse_holdout(holdout, whole))
    fitted = fit_all(points(train_table, params), params, source, per_rank_params, work=work)
    return fitted.fits.get((APP_KERNEL, TIME_METRIC))


def evaluate_table(table: pd.DataFrame, kind: str, params: list[str], holdout: str,
                   baselines: list[str], source: str,
                   per_rank_params: frozenset[str] = frozenset(), *,
                   metrics: list[str] | None = None, tolerance: float = 0.1,
                   comm: pd.DataFrame | None = None, imported: bool = False,
                   model_options: Mapping | None = None,
                   work: str | None = None,
                   whole: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict | None]:
    """``apmt evaluate``: the errors of every series (of ``metrics`` only, when given) and,
    for a measurements table, the assembled model's validation rows beside them with the
    refinement decision; profiles that were ``imported`` cannot get new runs, which the
    decision says. Returns the evaluation table and the decision (None for a communication
    table). ``model_options``: build_model's, for the validation; ``work``: the work per
    rank as an expression (apmt.work), for every modeler; ``whole``: of a communication
    table, the measurements of the same runs (evaluate)."""
    series = table
    if metrics and kind == "measurements":
        series = table[table["metric"].isin(metrics)]
        if series.empty:
            raise ApmtError(f"{source}: no series of metric(s) {','.join(metrics)!r}")
    result = evaluate(series, kind, params, holdout, baselines, source, per_rank_params, work,
                      whole)
    if kind != "measurements":
        return result, None
    rows, decision = validate(table, params, holdout, tolerance, source, comm,
                              **(model_options or {}))
    if imported:
        decision = without_new_runs(decision, "apmt cannot make runs of imported profiles "
                                              "(profile the application with a study file "
                                              "to refine it)")
    return with_validation(result, rows), decision


def summary(evaluation: pd.DataFrame) -> pd.DataFrame:
    """Per method: points, median and 90th percentile APE, and for apmt its 90% intervals:
    how many hold the measured value (coverage_90) and how wide they are (the median of
    upper/lower)."""
    grouped = evaluation.dropna(subset=["ape"]).groupby("method", sort=False)
    table = grouped["ape"].agg(points="count", median_ape="median",
                               p90_ape=lambda a: float(np.percentile(a, 90)))
    bounded = evaluation[evaluation["lower"].notna()]
    inside = (bounded["measured"] >= bounded["lower"]) & (bounded["measured"] <= bounded["upper"])
    table["coverage_90"] = inside.groupby(bounded["method"]).mean()
    table["width_90"] = (bounded["upper"] / bounded["lower"]).groupby(bounded["method"]).median()
    return table.reset_index()


# -------------------------------------------------------------------------------- validation

def validate(table: pd.DataFrame, params: list[str], holdout: str, tolerance: float,
             source: str, comm: pd.DataFrame | None = None,
             refine_model: Callable[[Model], Model] | None = None, **model_options) -> tuple:
    """Build the whole model (Eq. 2) without the held-out runs and compare it with them.

    Returns the rows of the evaluation table for the application and its parts (kernel
    ``<app>``, metrics time, computation_time, comm_time, others_time where the model has a
    term for the time outside kernels and MPI; each part measured and predicted alike:
    apmt.model.measured_parts) and the refinement decision: the
    model needs refining when the application's error exceeds ``tolerance`` at a held-out
    point, and the part to refine is the one (computation or communication) whose error in
    seconds is larger there. The decision lists the series and operations the model left out
    (too few P without the held-out runs, zeros among positive values, no plausible shape)
    with why. ``refine_model`` changes the model before it is compared (a refinement round's
    accepted lower-frequency solution).
    """
    holdout_points = parse_holdout(holdout, table)
    train, test = split(table, holdout_points)
    if train["p"].nunique() < MIN_DISTINCT_P:
        return _too_few_p(train, params, holdout, tolerance)
    comm_train, comm_test = split(comm, holdout_points) if comm is not None else (None, None)
    model = build_model(train, params, source=source, comm=comm_train, **model_options)
    if refine_model is not None:
        model = refine_model(model)
    measured = measured_parts(model, test, comm_test)
    parts = predicted_parts(model, point_values(measured, params))
    frames = []
    for metric, (value, lower, upper) in parts.items():
        measured[f"predicted_{metric}"] = value
        frames.append(measured[["p", *params]].assign(
            kernel=APP_KERNEL, metric=metric, method="apmt", measured=measured[metric],
            predicted=value, lower=lower, upper=upper))
    rows = pd.concat(frames, ignore_index=True).dropna(subset=["measured"])
    rows["ape"] = 100 * np.abs(rows["predicted"] - rows["measured"]) / rows["measured"]
    decision = decide(measured, params, tolerance)
    decision["left_out"] = [entry.to_dict() for entry in model.left_out]
    return rows.reset_index(drop=True), decision


def _too_few_p(train: pd.DataFrame, params: list[str], holdout: str, tolerance: float
               ) -> tuple:
    """No validation is possible (a study of three P holding out the largest): no rows, and
    a decision that asks for more P, which refinement can add and an import cannot."""
    left = sorted(int(p) for p in train["p"].unique())
    reason = (f"holding out {holdout} leaves {len(left)} distinct P ({', '.join(map(str, left))})"
              f": too few to fit ({MIN_DISTINCT_P} are needed), so the model cannot be "
              "validated; more P are needed")
    decision = {"tolerance": tolerance, "worst_point": None, "error": None, "refine": True,
                "part": None, "gap_seconds": {}, "reason": reason, "left_out": []}
    columns = ["kernel", "metric", "p", *train.columns.intersection(params), "method",
               "measured", "predicted", "lower", "upper", "ape"]
    return pd.DataFrame(columns=columns), decision


def with_validation(evaluation: pd.DataFrame, validation: pd.DataFrame) -> pd.DataFrame:
    """The per-series evaluation with the assembled model's rows (validate): apmt's answer
    for the application time is the assembled one, so its own fit of a measured ``<app>``
    kernel's time becomes metric ``fitted_time`` (as in the predictions), and each method
    has one ``<app>``/time row per point."""
    fitted = (evaluation["kernel"] == APP_KERNEL) & (evaluation["metric"] == TIME_METRIC) & \
        (evaluation["method"] == "apmt") & (validation["metric"] == TIME_METRIC).any()
    evaluation = evaluation.assign(metric=evaluation["metric"].mask(fitted, "fitted_time"))
    return pd.concat([evaluation, validation], ignore_index=True)


def without_new_runs(decision: dict, why: str) -> dict:
    """The decision for profiles apmt cannot add runs to (imported ones): no refinement, and
    what it would need, with whether the error exceeds the tolerance kept."""
    needed = decision["refine"]
    refinement = (f"the model would need refining in {decision['part'] or 'its runs'}, which "
                  f"needs new runs at other P; {why}" if needed else "not needed")
    return {**decision, "refine": False, "part": None, "exceeds_tolerance": needed,
            "refinement": refinement}


def decide(parts: pd.DataFrame, params: list[str], tolerance: float) -> dict:
    """Whether to refine, and which part, with the numbers that decided it."""
    errors = (parts["predicted_time"] - parts["time"]).abs() / parts["time"]
    worst = parts.loc[errors.idxmax()]
    error = float(errors.max())
    gaps = {part: abs(float(worst[f"predicted_{metric}"]) - float(np.nan_to_num(worst[metric])))
            for part, metric in (("computation", "computation_time"),
                                 ("communication", "comm_time"), ("others", "others_time"))
            if part != "others" or np.isfinite(worst[metric])}
    part = max(gaps, key=gaps.get)
    point = {column: float(worst[column]) for column in ["p", *params]}
    verdict = "exceeds" if error > tolerance else "is within"
    return {
        "tolerance": tolerance, "worst_point": point, "error": error,
        "refine": bool(error > tolerance), "part": part if error > tolerance else None,
        "gap_seconds": gaps,
        "reason": (f"application error {error:.1%} at {point} {verdict} the tolerance "
                   f"{tolerance:.0%}; the larger gap is in {part} ({seconds(gaps[part])})"),
    }
