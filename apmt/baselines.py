"""The models apmt is compared with (paper 000, section 5), fitted per series.

- analytic: T = a * (D/P) + b, with D/P the work per rank (the product of the total-size
  parameters over P; per-rank parameters enter as they are; 1/P without parameters);
- amdahl: T = a/P + b * P^c + d (an Amdahl-type empirical model), c from a grid, the rest by
  least squares;
- powerlaw: T = a * P^b * prod(param^c): least squares of log T on log P and the log
  parameters, the naive floor that any automatic modeler must beat;
- extrap: Extra-P's default modeler, run by apmt.extrap_peer in its own environment.

apmt.modelers registers them by name, with apmt's own fitter, behind one interface.
"""

from __future__ import annotations

import numpy as np

AMDAHL_EXPONENTS = np.linspace(-1.0, 3.0, 41)


def work_per_rank(values: dict[str, np.ndarray], params: list[str],
                  per_rank_params: frozenset[str]) -> np.ndarray:
    work = np.ones_like(values["p"], dtype=float)
    for param in params:
        work = work * values[param]
    if any(param not in per_rank_params for param in params) or not params:
        work = work / values["p"]
    return work


def analytic(train: dict[str, np.ndarray], y: np.ndarray, test: dict[str, np.ndarray],
             params: list[str], per_rank_params: frozenset[str] = frozenset()) -> np.ndarray:
    """Fit a*(D/P)+b on the training points and predict the test points."""
    def design(values: dict[str, np.ndarray]) -> np.ndarray:
        work = work_per_rank(values, params, per_rank_params)
        return np.column_stack([work, np.ones_like(work)])
    coefficients = np.linalg.lstsq(design(train), y, rcond=None)[0]
    return design(test) @ coefficients


def amdahl(train: dict[str, np.ndarray], y: np.ndarray, test: dict[str, np.ndarray],
           params: list[str], per_rank_params: frozenset[str] = frozenset()) -> np.ndarray:
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
             params: list[str], per_rank_params: frozenset[str] = frozenset()) -> np.ndarray:
    """Fit ln T = a + b ln P + sum c ln param and predict."""
    def design(values: dict[str, np.ndarray]) -> np.ndarray:
        varying = [name for name in ["p", *params] if np.ptp(train[name]) > 0]
        return np.column_stack([np.ones_like(values["p"]),
                                *(np.log(values[name]) for name in varying)])
    coefficients = np.linalg.lstsq(design(train), np.log(y), rcond=None)[0]
    return np.exp(design(test) @ coefficients)

