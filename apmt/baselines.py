"""The models apmt is compared with (paper 000, section 5), fitted per series.

- analytic: T = a * (D/P) + b, with D/P the work per rank (the study's work expression, or
  the product of the total-size parameters over P; per-rank parameters enter as they are;
  1/P without parameters);
- amdahl: T = a/P + b * P^c + d (an Amdahl-type empirical model), c from a grid, the rest by
  least squares;
- powerlaw: T = a * P^b * prod(param^c): least squares of log T on log P and the log
  parameters, the naive floor that any automatic modeler must beat;
- extrap: Extra-P's default modeler, run by apmt.extrap_peer in its own environment.

apmt.modelers registers them by name, with apmt's own fitter, behind one interface (each
takes the work expression; only analytic's law has a use for it).
"""

from __future__ import annotations

import numpy as np

from apmt.work import evaluate_work

AMDAHL_EXPONENTS = np.linspace(-1.0, 3.0, 41)


def work_per_rank(values: dict[str, np.ndarray], params: list[str],
                  per_rank_params: frozenset[str], work: str | None = None) -> np.ndarray:
    """D/P: the study's work expression (apmt.work) where it has one, else the product of
    the parameters, over P unless all of them are per rank."""
    if work is not None:
        return evaluate_work(work, values)
    amount = np.ones_like(values["p"], dtype=float)
    for param in params:
        amount = amount * values[param]
    if any(param not in per_rank_params for param in params) or not params:
        amount = amount / values["p"]
    return amount


def analytic(train: dict[str, np.ndarray], y: np.ndarray, test: dict[str, np.ndarray],
             params: list[str], per_rank_params: frozenset[str] = frozenset(),
             work: str | None = None) -> np.ndarray:
    """Fit a*(D/P)+b on the training points and predict the test points."""
    def design(values: dict[str, np.ndarray]) -> np.ndarray:
        amount = work_per_rank(values, params, per_rank_params, work)
        return np.column_stack([amount, np.ones_like(amount)])
    coefficients = np.linalg.lstsq(design(train), y, rcond=None)[0]
    return design(test) @ coefficients


def amdahl(train: dict[str, np.ndarray], y: np.ndarray, test: dict[str, np.ndarray],
           params: list[str], per_rank_params: frozenset[str] = frozenset(),
           work: str | None = None) -> np.ndarray:
    """Fit a/P + b*P^c + d (c by grid search, least squares for the rest) and predict."""
    best = (np.inf, None, None)
    for exponent in AMDAHL_EXPONENTS:
        design = _amdahl_design(train["p"], exponent)
        coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
        error = float(np.sum((design @ coefficients - y) ** 2))
        if error < best[0]:
            best = (error, exponent, coefficients)
    _, exponent, coefficients = best
    return _amdahl_design(test["p"], exponent) @ coefficients


def _amdahl_design(p: np.ndarray, exponent: float) -> np.ndarray:
    return np.column_stack([1.0 / p, p**exponent, np.ones_like(p)])


def powerlaw(train: dict[str, np.ndarray], y: np.ndarray, test: dict[str, np.ndarray],
             params: list[str], per_rank_params: frozenset[str] = frozenset(),
             work: str | None = None) -> np.ndarray:
    """Fit ln T = a + b ln P + sum c ln param and predict."""
    def design(values: dict[str, np.ndarray]) -> np.ndarray:
        varying = [name for name in ["p", *params] if np.ptp(train[name]) > 0]
        return np.column_stack([np.ones_like(values["p"]),
                                *(np.log(values[name]) for name in varying)])
    coefficients = np.linalg.lstsq(design(train), np.log(y), rcond=None)[0]
    return np.exp(design(test) @ coefficients)

