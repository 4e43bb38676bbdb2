"""apmt.varpro's closed-form relative error against numpy's least squares."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apmt import varpro

P = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 8.0])
SIZE = np.array([10.0, 10.0, 20.0, 20.0, 40.0, 40.0])


def _least_squares_sse(terms: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The sum of squared relative errors of y ~ const + terms, by numpy (SVD), and how far
    the weighted columns are from dependent (the least singular value over the largest)."""
    design = np.column_stack([np.ones(len(y)), terms]) / y[:, None]
    design = design / np.linalg.norm(design, axis=0)
    singular = np.linalg.svd(design, compute_uv=False)
    coefficients, *_ = np.linalg.lstsq(design, np.ones(len(y)), rcond=None)
    return float(np.sum((design @ coefficients - 1.0) ** 2)), singular[-1] / singular[0]


exponent = st.floats(-3.0, 3.0).map(lambda value: round(value, 2))
noise = st.lists(st.floats(-0.5, 0.5), min_size=len(P), max_size=len(P))


@settings(max_examples=60, deadline=None)
@given(c=exponent, f=exponent, trend=exponent, log_noise=noise)
def test_relative_sse_is_the_least_squares_error(c: float, f: float, trend: float,
                                                 log_noise: list[float]) -> None:
    """One free term (d + a*P^c) and two (d + a*P^c + e*size^f): the error the grid ranks
    candidates by is numpy's least squares error, to rounding."""
    y = (2.0 + P**trend) * np.exp(np.array(log_noise))
    for terms in (np.array([P**c]).T, np.column_stack([P**c, SIZE**f])):
        expected, apart = _least_squares_sse(terms, y)
        [[found]] = varpro.relative_sse(terms[None], y[None])
        if apart > 1e-4:      # well apart from dependent: the same error, to rounding
            assert abs(found - expected) <= 1e-8 * max(1.0, expected)
        elif apart < 1e-9:    # dependent: refused
            assert np.isinf(found)


def test_dependent_and_exact_candidates() -> None:
    """A term that is a constant (P^0) or a copy of the other is refused; an exact shape
    leaves no error, and the grid finds its exponent."""
    y = 3.0 + 10.0 / P
    constant = np.ones((1, len(P), 1))
    twice = np.stack([P**0.5, 2.0 * P**0.5], axis=1)[None]
    assert np.isinf(varpro.relative_sse(constant, y[None])).all()
    assert np.isinf(varpro.relative_sse(twice, y[None])).all()
    [[exact]] = varpro.relative_sse((P**-1.0)[None, :, None], y[None])
    assert exact < 1e-20
    estimate = varpro.grid_estimates((varpro.EXPONENTS,), lambda e, rows: (
        P[rows][None, :] ** e[:, :1])[..., None], y[None], np.arange(len(P)))
    assert estimate[0, 0] == pytest.approx(-1.0, abs=0.01)
