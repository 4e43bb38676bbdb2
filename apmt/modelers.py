"""Modelers: apmt's fitter and the models it is compared with, behind one interface and
chosen by name (MODELERS). Each fits every series of a training points table and predicts the
held-out points:

    modeler.predict(train, test, params, per_rank_params, source, work=None) -> frame

``train`` and ``test`` are points tables (apmt.series.points: kernel, metric, p, the
parameters, value, reps); the frame has one row per test point the modeler could model, with
columns kernel, metric, p, the parameters, method, measured, predicted, lower, upper (the
90% interval; not a number where the modeler gives none), in the order of the test's series
(sorted) and, within a series, of its points.

- apmt: apmt.fit_table.fit_all, the model's own per-series fits, with their intervals; of a
  communication table, the model's MPI operations (operations_predict: it fits the raw
  table's runs, as the model does);
- analytic, amdahl, powerlaw: apmt.baselines' formulas, fitted per series;
- extrap: Extra-P's default modeler, in its own environment (apmt.extrap_peer); ``external``:
  one run over every series, which evaluate compares on every series it can model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from apmt.baselines import amdahl, analytic, powerlaw
from apmt.comm import Operation, fit_operations
from apmt.errors import ApmtError
from apmt.fit import SeriesFit
from apmt.fit_table import described, fit_all
from apmt.predict import part_time, within
from apmt.series import point_values
from apmt.tables import APP_KERNEL, TIME_METRIC

log = logging.getLogger("apmt")
KEYS = ["kernel", "metric"]
Formula = Callable[..., np.ndarray]


def rows(targets: pd.DataFrame, params: list[str], method: str, predicted: np.ndarray,
         lower: np.ndarray | None = None, upper: np.ndarray | None = None) -> pd.DataFrame:
    """A modeler's rows for the target points of one series (or more)."""
    frame = targets[[*KEYS, "p", *params]].reset_index(drop=True).copy()
    nan = np.full(len(frame), np.nan)
    return frame.assign(method=method, measured=targets["value"].to_numpy(float),
                        predicted=predicted, lower=nan if lower is None else lower,
                        upper=nan if upper is None else upper)


def _series(test: pd.DataFrame) -> Iterator[tuple[tuple, pd.DataFrame]]:
    return iter(test.groupby(KEYS, sort=True))


def _joined(frames: list[pd.DataFrame], test: pd.DataFrame, params: list[str],
            method: str) -> pd.DataFrame:
    if not frames:    # no series could be modelled: the table's columns, no row
        return rows(test.iloc[:0], params, method, np.array([]))
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class ApmtModeler:
    """apmt's per-series fits (one table: regime, calibrated intervals)."""

    name: str = "apmt"
    external: bool = False

    def predict(self, train: pd.DataFrame, test: pd.DataFrame, params: list[str],
                per_rank_params: frozenset[str], source: str,
                work: str | None = None) -> pd.DataFrame:
        train = train.merge(test[KEYS].drop_duplicates(), on=KEYS)
        fitted = fit_all(train, params, source, per_rank_params, work=work)
        if fitted.left_out:
            log.warning("%s: not evaluated, %d of %d series that cannot be fitted without the "
                        "held-out runs: %s", source, len(fitted.left_out),
                        len(fitted.left_out) + len(fitted.fits), described(fitted.left_out))
        whole = fitted.fits.get((APP_KERNEL, TIME_METRIC))
        frames = [rows(targets, params, self.name, *_bounded(
                      fitted.fits[key], whole if part_time(*key) else None,
                      point_values(targets, params)))
                  for key, targets in _series(test) if key in fitted.fits]
        return _joined(frames, test, params, self.name)


def _bounded(fit: SeriesFit | Operation, whole: SeriesFit | None,
             values: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """A part's prediction at the points, no greater than the application's time fitted on
    its own (``whole``, where the table has it) says the whole is, as the model bounds it."""
    return within(fit.predict(values), whole.predict(values) if whole is not None else None)


def operations_predict(train: pd.DataFrame, test: pd.DataFrame, params: list[str],
                       source: str, whole: SeriesFit | None = None) -> pd.DataFrame:
    """apmt's rows for a communication table: the model's MPI operations
    (apmt.comm.fit_operations) fitted to the training runs ``train`` (a communication table),
    each predicting its time per rank, with its interval, at the points of ``test`` (its
    series keyed by the operations' names). The operations the model leaves out, with why,
    in the log. ``whole``: the application's time fitted on the same runs, where known,
    which bounds each operation's (apmt.predict.within)."""
    operations, left_out, _ = fit_operations(train, params, source)
    if left_out:
        log.warning("%s: not evaluated, %d MPI operation(s) the model leaves out: %s", source,
                    len(left_out), "; ".join(f"{name} {why}" for name, why in left_out))
    by_name = {operation.name: operation for operation in operations}
    frames = [rows(targets, params, "apmt", *_bounded(by_name[name], whole,
                                                      point_values(targets, params)))
              for (name, _), targets in _series(test) if name in by_name]
    return _joined(frames, test, params, "apmt")


@dataclass(frozen=True)
class BaselineModeler:
    """A baseline formula (apmt.baselines) fitted to each series on its own."""

    name: str
    formula: Formula
    external: bool = False

    def predict(self, train: pd.DataFrame, test: pd.DataFrame, params: list[str],
                per_rank_params: frozenset[str], source: str,
                work: str | None = None) -> pd.DataFrame:
        train_groups = dict(list(train.groupby(KEYS, sort=False)))
        frames = []
        for key, targets in _series(test):
            known = train_groups[key]
            predicted = self.formula(point_values(known, params),
                                     known["value"].to_numpy(float),
                                     point_values(targets, params), params, per_rank_params,
                                     work)
            frames.append(rows(targets, params, self.name, predicted))
        return _joined(frames, test, params, self.name)


@dataclass(frozen=True)
class ExtrapModeler:
    """Extra-P's default modeler, every series in one run of its own environment."""

    name: str = "extrap"
    external: bool = True

    def predict(self, train: pd.DataFrame, test: pd.DataFrame, params: list[str],
                per_rank_params: frozenset[str], source: str,
                work: str | None = None) -> pd.DataFrame:
        from apmt.extrap_peer import extrap_predict

        targets = test[["p", *params]].drop_duplicates()
        predicted = extrap_predict(train[[*KEYS, "p", *params, "value"]], targets, params)
        merged = test.merge(predicted[[*KEYS, "p", *params, "predicted"]],
                            on=[*KEYS, "p", *params], how="inner")
        return rows(merged, params, self.name, merged["predicted"].to_numpy(float))


MODELERS = {modeler.name: modeler for modeler in (
    ApmtModeler(), BaselineModeler("analytic", analytic), BaselineModeler("amdahl", amdahl),
    BaselineModeler("powerlaw", powerlaw), ExtrapModeler())}
BASELINES = tuple(name for name in MODELERS if name != "apmt")


def baseline(name: str) -> BaselineModeler | ExtrapModeler:
    """The baseline of this name; one line naming the known ones otherwise."""
    if name not in BASELINES:
        raise ApmtError(f"unknown baseline {name!r} (known: {', '.join(BASELINES)})")
    return MODELERS[name]
