"""Exponents estimated from the data by variable projection.

RAT's ``d + a * log2(P)^b * P^c`` (paper 003), ``d + a * x^c`` and the sum over two variables
``d + a * x^c + e * w^f`` are linear in their coefficients once the exponents are fixed. So
for each candidate exponent the best coefficients, and the relative error they leave, follow
in closed form, all candidates at once; the exponents with the least error are the estimate,
and scipy refines them between the candidates. The fit engine (apmt.fit) turns the estimate
into a hypothesis that competes with the others under the same cross-validation, the
exponents re-estimated in every fold so that their freedom is paid for.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize

EXPONENTS = np.round(np.arange(-3.0, 3.0001, 0.05), 4)       # c, f: 121 candidates
LOG_EXPONENTS = np.arange(0.0, 3.0001, 0.5)                  # b of RAT's log2(P)^b
SUM_EXPONENTS = np.round(np.arange(-3.0, 3.0001, 0.1), 4)    # c and f of a two-variable sum

# columns(exponents, rows) -> designs: exponents (C, m) for C candidates, the design of the
# shape's free terms at the rows, (C, n, k) without the constant
Columns = Callable[[np.ndarray, np.ndarray], np.ndarray]


def relative_sse(terms: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per candidate (terms: (C, n, k)), the least sum of squared relative errors of
    y ~ const + terms @ coefficients, by modified Gram-Schmidt on the 1/y-weighted columns;
    infinite where the columns are not finite or dependent."""
    target = np.ones_like(y)
    basis = [np.broadcast_to(1.0 / y, terms.shape[:2]) / np.sqrt(np.sum(1.0 / y**2))]
    residual = target - basis[0] * (basis[0] @ target)[..., None]
    bad = np.zeros(terms.shape[0], dtype=bool)
    with np.errstate(all="ignore"):
        for j in range(terms.shape[2]):
            column = terms[:, :, j] / y
            for q in basis:
                column = column - q * np.sum(q * column, axis=1, keepdims=True)
            norm = np.linalg.norm(column, axis=1)
            scale = np.linalg.norm(terms[:, :, j] / y, axis=1)
            bad |= ~np.isfinite(norm) | (norm <= 1e-9 * np.maximum(scale, 1e-300))
            q = column / np.where(bad, 1.0, norm)[:, None]
            basis.append(q)
            residual = residual - q * np.sum(q * residual, axis=1, keepdims=True)
        sse = np.sum(residual**2, axis=1)
    return np.where(bad | ~np.isfinite(sse), np.inf, sse)


def grid_estimate(grid: np.ndarray, columns: Columns, y: np.ndarray,
                  rows: np.ndarray) -> np.ndarray | None:
    """The exponents that fit y at these rows best: the best candidate of the grid, moved to
    the vertex of the parabola through it and its neighbours along each exponent (between
    the candidates, at no further cost); None if no candidate fits."""
    sse = relative_sse(columns(grid, rows), y[rows])
    best = int(np.argmin(sse))
    if not np.isfinite(sse[best]):
        return None
    estimate = grid[best].astype(float)
    for axis in range(grid.shape[1]):
        step = np.diff(np.unique(grid[:, axis]))
        if not len(step):
            continue
        neighbours = [np.flatnonzero(np.all(np.delete(grid, axis, 1) == np.delete(grid[best],
                                                                               axis), axis=1)
                                     & np.isclose(grid[:, axis], grid[best, axis] + sign
                                                  * step[0])) for sign in (-1, 1)]
        if all(len(n) for n in neighbours):
            low, high = sse[neighbours[0][0]], sse[neighbours[1][0]]
            curvature = low + high - 2 * sse[best]
            if np.isfinite(curvature) and curvature > 0:
                estimate[axis] += 0.5 * step[0] * (low - high) / curvature
    return estimate


def refined_estimate(start: np.ndarray, columns: Columns, y: np.ndarray, rows: np.ndarray,
                     bounds: list[tuple[float, float]]) -> np.ndarray:
    """An estimate refined to the least relative error by scipy (bounded Nelder-Mead): done
    for a shape once it is chosen, as the candidates' estimates only need to compete."""
    def objective(exponents: np.ndarray) -> float:
        value = relative_sse(columns(exponents[None, :], rows), y[rows])[0]
        return float(value) if np.isfinite(value) else 1e300

    result = optimize.minimize(objective, start, method="Nelder-Mead", bounds=bounds,
                               options={"xatol": 1e-3, "fatol": 1e-12, "maxiter": 200})
    return result.x if result.fun <= objective(start) else start
