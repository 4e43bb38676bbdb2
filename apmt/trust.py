"""How far a prediction can be trusted: ``interpolated``, ``extrapolated`` or ``unsupported``.

A prediction is
- ``interpolated`` when its point lies inside the measured range of every variable (P and
  each parameter) through it: the range measured at the point's values of the others
  (apmt.fit.SeriesFit.measured_range), so that a size measured at fewer P than the rest is
  extrapolated beyond its own largest P; the reason adds when its interval spans more than
  ``MAX_WIDTH`` there (noisy values, or a series that changes regime: the model's notes name
  those whose function misses a measured value by more than that, apmt.fit.SeriesFit.misfit).
  Not unsupported: on the real profiles of benchmarks/accuracy.py a fifth of the series'
  predictions at measured points have such intervals (microsecond timers, waits of
  oversubscribed MPI ranks), where the function mostly stays within a factor of 2 or 3 of
  the measured values;
- ``extrapolated`` when it lies beyond that range by at most ``MAX_FACTOR`` and its 90%
  interval spans less than a factor of ``MAX_WIDTH`` (upper / lower);
- ``unsupported`` when it lies beyond and either limit is passed, when it changes a variable
  that was measured at one value only and that no function uses (nothing shows how it acts:
  a profile set of one P over a size parameter), and always for a series the model could
  not fit (no number at all).

Why these limits: the fit engine rejects shapes that turn negative or explode, but it checks
them only up to 100 times the measured range (apmt.fit.EXTRAPOLATION_FACTORS); beyond it,
nothing about the shape was tested, and the users' question (10x to 100x the scale) is
answered within it. An interval wider than a factor of 10 says less than the order of
magnitude: the number is shown, but it is not a prediction to plan with. The intervals
beyond the data are calibrated on each table's backtests (apmt.fit_table), so the width limit
judges how well the table's own series predicted their last measured P. The application's
interval holds its parts' uncertainty; its rows are also unsupported when a part that
carries at least ``MAJOR_SHARE`` of the predicted time lies beyond 100x of its own measured
range (an MPI call measured at fewer P than the rest), since the sum inherits it.
"""

from __future__ import annotations

import numpy as np

from apmt.fit import EXTRAPOLATION_FACTORS, outside

MAX_FACTOR = EXTRAPOLATION_FACTORS[-1]
MAX_WIDTH = 10.0
MAJOR_SHARE = 0.1
LEVELS = ("interpolated", "extrapolated", "unsupported")
UNSUPPORTED = LEVELS[2]


def distance(domain: dict[str, tuple], values: dict[str, np.ndarray]
             ) -> tuple[np.ndarray, list[str]]:
    """Per point: how many times beyond the measured range it lies (1 inside), and in words
    where, for the variable farthest out. The range's ends may be one per point
    (apmt.fit.SeriesFit.measured_range)."""
    n = len(next(iter(values.values())))
    factor, words = np.ones(n), [""] * n
    for name, beyond in outside(domain, values).items():
        value = np.asarray(values[name], float)
        low, high = (np.broadcast_to(np.asarray(end, float), value.shape)
                     for end in domain[name])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(beyond > 0, value / high, np.where(beyond < 0, low / value, 1.0))
        for i in np.flatnonzero(ratio > factor):
            factor[i] = ratio[i]
            words[i] = (f"{name} = {value[i]:g} is {ratio[i]:.3g}x the largest measured "
                        f"({high[i]:g})" if beyond[i] > 0 else
                        f"{name} = {value[i]:g} is {ratio[i]:.3g}x below the smallest measured "
                        f"({low[i]:g})")
    return factor, words


def judge(domain: dict[str, tuple[float, float]], values: dict[str, np.ndarray],
          predicted: np.ndarray, lower: np.ndarray, upper: np.ndarray,
          used: set[str] = frozenset(), beyond: tuple[np.ndarray, list[str]] | None = None
          ) -> tuple[list[str], list[str]]:
    """The trust level and its reason (one short sentence) of each prediction; ``used``:
    the variables the prediction's functions depend on (apmt.fit.SeriesFit.variables);
    ``beyond``: how far beyond where it was measured each point lies, if not beyond the box
    of ``domain`` (distance or nearest of the measured ranges through the points,
    apmt.fit.SeriesFit.measured_range)."""
    factor, where = beyond if beyond is not None else distance(domain, values)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        width = np.asarray(upper, float) / np.asarray(lower, float)
    levels, reasons = [], []
    fixed = unvaried(domain, values, used)
    for i, predicted_value in enumerate(np.asarray(predicted, float)):
        if not np.isfinite(predicted_value):
            levels.append(UNSUPPORTED)
            reasons.append("no finite prediction")
        elif fixed[i]:
            levels.append(UNSUPPORTED)
            reasons.append(fixed[i])
        elif factor[i] <= 1:
            levels.append("interpolated")
            reasons.append("inside the measured range" + (
                f"; its 90% interval spans a factor of {width[i]:.3g}: the measured values "
                "scatter around the function" if width[i] > MAX_WIDTH else ""))
        elif factor[i] > MAX_FACTOR:
            levels.append(UNSUPPORTED)
            reasons.append(f"{where[i]}: beyond {MAX_FACTOR:g}x, no shape was checked")
        elif width[i] > MAX_WIDTH:
            levels.append(UNSUPPORTED)
            reasons.append(f"{where[i]}, and its 90% interval spans a factor of {width[i]:.3g} "
                           f"(more than {MAX_WIDTH:g}): only the order of magnitude is known")
        else:
            levels.append("extrapolated")
            reasons.append(where[i] + (f"; 90% interval within a factor of {width[i]:.2g}"
                                       if np.isfinite(width[i]) else ""))
    return levels, reasons


def unvaried(domain: dict[str, tuple[float, float]], values: dict[str, np.ndarray],
             used: set[str] = frozenset()) -> list[str]:
    """Per point, in words, a variable it sets to another value than the only one measured
    ("" where there is none), unless a function uses it all the same (through a work
    expression such as ``size/p``, whose values did vary): else nothing says how it acts."""
    n = len(next(iter(values.values())))
    words = [""] * n
    for name, low in fixed_variables(domain, used).items():
        if name not in values:
            continue
        value = np.asarray(values[name], float)
        for i in np.flatnonzero(~np.isclose(value, low, rtol=1e-9)):
            words[i] = words[i] or (f"{name} = {value[i]:g}, but {name} was measured at "
                                    f"{low:g} only: nothing shows how it acts")
    return words


def fixed_variables(domain: dict[str, tuple[float, float]], used: set[str] = frozenset()
                    ) -> dict[str, float]:
    """The variables measured at one value only that no function uses, with that value:
    predictions elsewhere in them are unsupported (see unvaried)."""
    return {name: low for name, (low, high) in domain.items()
            if low == high and name not in used}


def merged_domain(domains: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """The measured range of every variable over several fits (the application's)."""
    merged: dict[str, tuple[float, float]] = {}
    for domain in domains:
        for name, (low, high) in domain.items():
            known = merged.get(name, (low, high))
            merged[name] = (min(known[0], low), max(known[1], high))
    return merged


def nearest(ranges: list[dict[str, tuple]], values: dict[str, np.ndarray]
            ) -> tuple[np.ndarray, list[str]]:
    """As distance, to the nearest of several measured ranges: a point is measured where any
    of them holds it (the application, where one of its fits was measured), which a box of
    their ranges would claim also between them (one fit's P and another's size)."""
    n = len(next(iter(values.values())))
    if not ranges:
        return np.ones(n), [""] * n
    each = [distance(one, values) for one in ranges]
    factors = np.array([factor for factor, _ in each])
    closest = np.argmin(factors, axis=0)
    return factors[closest, np.arange(n)], [each[k][1][i] for i, k in enumerate(closest)]
