"""Exponents estimated from the data by variable projection.

RAT's ``d + a * log2(P)^b * P^c`` (paper 003), ``d + a * x^c`` and the sum over two variables
``d + a * x^c + e * w^f`` are linear in their coefficients once the exponents are fixed. So
for each candidate exponent the best coefficients, and the relative error they leave, follow
in closed form, all candidates and all series at once; the exponents with the least error
are the estimate, and scipy refines them between the candidates. The fit engine (apmt.fit)
turns the estimate into a hypothesis that competes with the others under the same
cross-validation, the exponents re-estimated in every fold so that their freedom is paid for.
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
    """Per series (y: (S, n)) and candidate (terms: (C, n, k)), the least sum of squared
    relative errors of y ~ const + terms @ coefficients, by modified Gram-Schmidt on the
    1/y-weighted columns: (S, C), infinite where the columns are not finite or dependent."""
    inverse = 1.0 / y[:, None, :]                                            # (S, 1, n)
    first = inverse / np.sqrt(np.sum(inverse**2, axis=2, keepdims=True))
    residual = 1.0 - first * np.sum(first, axis=2, keepdims=True)            # (S, 1, n)
    basis = [first]
    bad = np.zeros((len(y), terms.shape[0]), dtype=bool)
    with np.errstate(all="ignore"):
        for j in range(terms.shape[2]):
            weighted = terms[None, :, :, j] * inverse                        # (S, C, n)
            column = weighted
            for q in basis:
                column = column - q * np.sum(q * column, axis=2, keepdims=True)
            norm = np.linalg.norm(column, axis=2)
            scale = np.linalg.norm(weighted, axis=2)
            bad |= ~np.isfinite(norm) | (norm <= 1e-9 * np.maximum(scale, 1e-300))
            q = column / np.where(bad, 1.0, norm)[..., None]
            basis.append(q)
            residual = residual - q * np.sum(q * residual, axis=2, keepdims=True)
        sse = np.sum(residual**2, axis=2)
    return np.where(bad | ~np.isfinite(sse), np.inf, sse)


def grid_estimates(axes: tuple[np.ndarray, ...], columns: Columns, y: np.ndarray,
                   rows: np.ndarray) -> np.ndarray:
    """Per series (y: (S, n)), the exponents that fit it at these rows best: the best
    candidate of the grid (the product of ``axes``, evenly spaced), moved to the vertex of the
    parabola through it and its neighbours along each axis (between the candidates, at no
    further cost); (S, m), a row of NaN where no candidate fits."""
    shape = tuple(len(axis) for axis in axes)
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
    sse = relative_sse(columns(grid, rows), y[:, rows])                      # (S, C)
    series = np.arange(len(y))
    best = np.argmin(sse, axis=1)
    centre = sse[series, best]
    index = np.array(np.unravel_index(best, shape)).T                         # (S, m)
    estimate = grid[best].astype(float)
    for axis, size in enumerate(shape):
        if size < 3:
            continue
        inside = (index[:, axis] > 0) & (index[:, axis] < size - 1)
        neighbours = []
        for sign in (-1, 1):
            moved = index.copy()
            moved[:, axis] = np.clip(moved[:, axis] + sign, 0, size - 1)
            neighbours.append(sse[series, np.ravel_multi_index(moved.T, shape)])
        low, high = neighbours
        with np.errstate(all="ignore"):
            curvature = low + high - 2 * centre
            shift = 0.5 * (axes[axis][1] - axes[axis][0]) * (low - high) / curvature
        usable = inside & np.isfinite(curvature) & (curvature > 0) & np.isfinite(shift)
        estimate[usable, axis] += shift[usable]
    estimate[~np.isfinite(centre)] = np.nan
    return estimate


def refined_estimate(start: np.ndarray, columns: Columns, y: np.ndarray, rows: np.ndarray,
                     bounds: list[tuple[float, float]]) -> np.ndarray:
    """An estimate refined to the least relative error by scipy (bounded Nelder-Mead): done
    for a shape once it is chosen, as the candidates' estimates only need to compete."""
    def objective(exponents: np.ndarray) -> float:
        value = relative_sse(columns(exponents[None, :], rows), y[None, rows])[0, 0]
        return float(value) if np.isfinite(value) else 1e300

    result = optimize.minimize(objective, start, method="Nelder-Mead", bounds=bounds,
                               options={"xatol": 1e-3, "fatol": 1e-12, "maxiter": 200})
    return result.x if result.fun <= objective(start) else start
