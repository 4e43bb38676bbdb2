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
    """Per series (y: (S, n)) and candidate (terms: (C, n, k), k of 1 or 2), the least sum of
    squared relative errors of y ~ const + terms @ coefficients: (S, C), infinite where the
    columns are not finite or dependent.

    One step of Gram-Schmidt per series takes the constant's unit column q (the 1/y-weighted
    ones) and leaves the residual r of the target (ones) on it; the terms' weighted columns,
    made orthogonal to q, have a k x k Gram matrix G and products b with r, all of them
    matrix products over every candidate at once, and the error is |r|^2 - b' G^-1 b. A
    column within 1e-6 (in norm) of the span of the others is dependent, since differences of
    squares resolve no less. It replaced a loop of Gram-Schmidt over (S, C, n) arrays, 17
    times slower on the 3,721 candidates of a two-variable sum (20 series of 6 points): a
    third of the fitting time of LAMMPS at three sizes went there."""
    if terms.shape[2] not in (1, 2):
        raise ValueError(f"relative_sse: {terms.shape[2]} free terms; the families have 1 or 2")
    inverse = 1.0 / y                                                        # (S, n)
    weights = inverse**2
    first = inverse / np.sqrt(np.sum(weights, axis=1, keepdims=True))
    residual = 1.0 - first * np.sum(first, axis=1, keepdims=True)            # (S, n)
    columns = [terms[:, :, j] for j in range(terms.shape[2])]                # (C, n) each
    with np.errstate(all="ignore"):
        along = [(inverse * first) @ column.T for column in columns]         # (S, C) each
        squared = [weights @ (column**2).T for column in columns]
        toward = [(inverse * residual) @ column.T for column in columns]
        diagonal = [whole - part**2 for whole, part in zip(squared, along, strict=True)]
        bad = np.zeros(diagonal[0].shape, dtype=bool)
        for own, whole in zip(diagonal, squared, strict=True):
            bad |= ~np.isfinite(whole) | ~(own > 1e-12 * whole)
        if len(columns) == 1:
            explained = toward[0] ** 2 / diagonal[0]
        else:
            cross = weights @ (columns[0] * columns[1]).T - along[0] * along[1]
            determinant = diagonal[0] * diagonal[1] - cross**2
            bad |= ~(determinant > 1e-12 * diagonal[0] * diagonal[1])
            explained = (diagonal[1] * toward[0] ** 2 - 2 * cross * toward[0] * toward[1]
                         + diagonal[0] * toward[1] ** 2) / determinant
        sse = np.sum(residual**2, axis=1, keepdims=True) - explained
        bad |= ~np.isfinite(sse)
    return np.where(bad, np.inf, np.maximum(sse, 0.0))


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
