"""LogGP for point-to-point operations (Alexandrov et al., 1995), from per-rank totals.

In LogGP a message of s bytes costs its sender o + (s - 1) G, the next one may leave no
sooner than the gap g after it, and the last arrives L later; a rank's n messages back to
back take

    T = L + n * max(g, o + (s - 1) G),        s = bytes / calls.

The communication table measures, per operation and run, a rank's calls n, bytes B and time
T, so s is the mean size per call. What tells LogGP from Hockney (apmt.comm: a*B + b, the
time following the volume) on such data is its cost per message, paid for every call, and
its kink: below K = 1 + (g - o) / G bytes a message costs the gap alone, above it G more per
byte. For a given K the time is linear in L, g and G,

    T = L + g * n + G * max(B - K n, 0),

all nonnegative: scipy's nonnegative least squares on relative errors (timing noise is
multiplicative), K profiled between each two neighbouring measured sizes (scipy's bounded
scalar search) and either side of them all (K below every size: the messages pay
o + (s - 1) G, the gap is hidden; K above: they pay the gap alone, the bytes are hidden).
An interior K is a fourth coefficient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from apmt.fit import CAPPED_LOG_ERROR, Hypothesis, SeriesFit, Term, folds_for

CALLS, EXCESS = "calls", "excess"     # the fit's variables: calls, and bytes beyond the kink


@dataclass(frozen=True)
class Points:
    """One operation's per-rank totals per run (calls, bytes, time) and the runs' P and
    parameters (``values``)."""

    values: dict[str, np.ndarray]
    calls: np.ndarray
    bytes: np.ndarray
    time: np.ndarray

    def where(self, keep: np.ndarray) -> Points:
        return Points({k: v[keep] for k, v in self.values.items()}, self.calls[keep],
                      self.bytes[keep], self.time[keep])


@dataclass(frozen=True)
class Shape:
    """A LogGP fit's shape: the kink in bytes per message (None: no message passes it, the
    bytes are hidden under the gap; 0: every message does, the gap is hidden) and whether
    the calls vary (if not, L and g * calls are one intercept)."""

    kink: float | None
    calls_vary: bool

    @property
    def interior(self) -> bool:
        return self.kink is not None and self.kink > 0

    def hypothesis(self) -> Hypothesis:
        bases = ([(Term(CALLS, "power", 1.0),)] if self.calls_vary else []) + (
            [(Term(EXCESS, "power", 1.0),)] if self.kink is not None else [])
        return Hypothesis("linear", tuple(bases), int(self.interior))

    def inputs(self, calls: np.ndarray, bytes_: np.ndarray) -> dict[str, np.ndarray]:
        """The fit's variables at the points: calls, and the bytes beyond the kink."""
        excess = np.maximum(bytes_ - calls * (self.kink or 0.0), 0.0)
        return {CALLS: np.asarray(calls, float), EXCESS: excess}


def inputs(shape: Shape, values: dict[str, np.ndarray], calls: np.ndarray,
           bytes_: np.ndarray) -> dict[str, np.ndarray]:
    """The points (P, parameters) with the fit's variables added."""
    return {**values, **shape.inputs(calls, bytes_)}


def _shapes(points: Points) -> list[Shape]:
    """The shapes the points can fit with one point to spare: the kink below, between and
    above the measured sizes per message."""
    calls_vary = bool(np.ptp(points.calls) > 1e-9 * np.max(points.calls))
    sizes = np.unique(points.bytes / points.calls)
    kinks = [None, 0.0, *((sizes[:-1] + sizes[1:]) / 2)]
    shapes = [Shape(kink, calls_vary) for kink in kinks]
    return [shape for shape in shapes if shape.hypothesis().n_coefficients < len(points.time)]


def _solve(shape: Shape, points: Points) -> tuple[np.ndarray, float] | None:
    """Nonnegative least squares of the relative errors for one shape: the coefficients and
    the residual norm; None when the columns are dependent (the points cannot tell them) or
    the overhead o comes out negative."""
    design = shape.hypothesis().design(inputs(shape, points.values, points.calls,
                                              points.bytes))
    weighted = design / points.time[:, None]
    scale = np.linalg.norm(weighted, axis=0)
    if np.any(scale <= 0) or np.linalg.matrix_rank(weighted / scale) < weighted.shape[1]:
        return None
    scaled, residual = optimize.nnls(weighted / scale, np.ones(len(points.time)))
    coefficients = scaled / scale
    if shape.interior and shape.calls_vary and \
            coefficients[1] < coefficients[2] * (shape.kink - 1.0):
        return None            # o = g - (K - 1) G < 0: no message can cost less than nothing
    return coefficients, float(residual)


def _refined(shape: Shape, points: Points) -> Shape:
    """An interior kink moved to where the residual is least between the two measured sizes
    around it (scipy's bounded scalar search): there the fit is smooth in the kink."""
    if not shape.interior:
        return shape
    sizes = np.unique(points.bytes / points.calls)
    above = sizes[np.searchsorted(sizes, shape.kink)]
    below = sizes[np.searchsorted(sizes, shape.kink) - 1]

    infeasible = np.sqrt(len(points.time)) + 1.0     # worse than no fit at all (all zeros)

    def residual(kink: float) -> float:
        result = _solve(Shape(kink, shape.calls_vary), points)
        return infeasible if result is None else result[1]

    best = optimize.minimize_scalar(residual, bounds=(below, above), method="bounded")
    return Shape(float(best.x), shape.calls_vary) if best.fun <= residual(shape.kink) else shape


def fitted(points: Points) -> tuple[Shape, np.ndarray] | None:
    """The shape (kink) with the least residual and its coefficients; None when no shape
    can be fitted with a point to spare."""
    shapes = [_refined(shape, points) for shape in _shapes(points)
              if _solve(shape, points) is not None]
    solved = [(shape, _solve(shape, points)) for shape in shapes]
    solved = [(shape, result) for shape, result in solved if result is not None]
    if not solved:
        return None
    shape, (coefficients, _) = min(
        solved, key=lambda item: (item[1][1], item[0].hypothesis().n_coefficients))
    return shape, coefficients


def predict(shape: Shape, coefficients: np.ndarray, values: dict[str, np.ndarray],
            calls: np.ndarray, bytes_: np.ndarray) -> np.ndarray:
    return shape.hypothesis().design(inputs(shape, values, calls, bytes_)) @ coefficients


def fold_bias(points: Points) -> dict[str, float]:
    """Mean ln(prediction / measured) per cross-validation fold (apmt.fit.folds_for over P:
    leave one P out, forward), the kink chosen again from each fold's own points; folds too
    small to fit are left out."""
    bias = {}
    for fold in folds_for(points.values["p"]):
        train = np.setdiff1d(np.arange(len(points.time)), fold.deleted)
        result = fitted(points.where(train))
        if result is None:
            continue
        test = points.where(fold.scored)
        predicted = predict(*result, test.values, test.calls, test.bytes)
        with np.errstate(divide="ignore"):
            ratio = np.log(np.maximum(predicted, 0.0) / test.time)
        bias[fold.label] = float(np.mean(np.clip(ratio, -CAPPED_LOG_ERROR, CAPPED_LOG_ERROR)))
    return bias


def series_fit(points: Points, like: SeriesFit) -> tuple[SeriesFit, Shape] | None:
    """LogGP as a series fit (its intervals as apmt.fit's: the cross-validated error, the
    leverage, and beyond the data the calibration of ``like``, the operation's Hockney fit,
    scaled to LogGP's own error); None when the points are too few for any shape."""
    result = fitted(points)
    if result is None:
        return None
    shape, coefficients = result
    bias = fold_bias(points)
    if not bias:
        return None
    hypothesis = shape.hypothesis()
    design = hypothesis.design(inputs(shape, points.values, points.calls, points.bytes))
    weighted = design / points.time[:, None]
    scale = np.linalg.norm(weighted, axis=0)
    inverse_gram = np.linalg.pinv((weighted / scale).T @ (weighted / scale)) / np.outer(
        scale, scale)
    weights = {fold.label: fold.weight for fold in folds_for(points.values["p"])}
    w = np.array([weights[label] for label in bias])
    errors = np.abs(np.array(list(bias.values())))
    sigma = float(np.sqrt(np.sum(w * errors**2) / w.sum()))
    k, n = hypothesis.n_coefficients, len(points.time)
    fitted_time = design @ coefficients
    total = np.sum((points.time - points.time.mean()) ** 2)
    r2 = 1.0 - np.sum((points.time - fitted_time) ** 2) / total if total > 0 else 1.0
    multiplier = like.noise_width / like.sigma if like.sigma > 0 else float("nan")
    fit = SeriesFit(
        hypothesis=hypothesis, coefficients=coefficients, inverse_gram=inverse_gram,
        sigma=sigma, dof=max(1, min(n - k, len(np.unique(points.values["p"])) - 1)),
        r2=float(r2), adj_r2=float(1.0 - (1.0 - r2) * (n - 1) / (n - k)),
        loo_error=float(np.expm1(errors @ w / w.sum())), n_points=n,
        domain={v: (float(np.min(x)), float(np.max(x))) for v, x in points.values.items()},
        averaged=False, fold_bias=bias, noise_width=multiplier * sigma,
        drift_width=like.drift_width, step=like.step)
    return fit, shape


def parameters(shape: Shape, coefficients: np.ndarray) -> dict[str, float | None]:
    """LogGP's parameters from a fit's coefficients, in seconds (G: per byte), the kink in
    bytes per message; None for what the data cannot tell (see ``MEANING``)."""
    named = dict(zip(["intercept", *(basis[0].variable for basis in
                                     shape.hypothesis().bases)], coefficients, strict=True))
    per_call = named.get(CALLS)
    G = named.get(EXCESS)
    if shape.kink is None:                     # every message costs the gap
        o = None
        g = per_call
    elif shape.kink == 0:                      # every message costs o + (s - 1) G
        o = None if per_call is None else per_call + G
        g = None
    else:
        g = per_call
        o = None if g is None else g - G * (shape.kink - 1.0)
    return {"L": float(named["intercept"]) if shape.calls_vary else None,
            "o": _number(o), "g": _number(g), "G": _number(G),
            "kink_bytes": shape.kink, "intercept": float(named["intercept"])}


def _number(value: float | None) -> float | None:
    return None if value is None else float(value)


MEANING = {
    "L": "latency (s), paid once per rank's sequence of messages; None when the calls do not "
         "vary (then L + g * calls is the intercept)",
    "o": "overhead per message (s); None when no measured message is larger than the kink "
         "(the gap hides it)",
    "g": "gap between consecutive messages (s); None when every measured message is larger "
         "than the kink (o + (s - 1) G exceeds it)",
    "G": "gap per byte (s/byte); None when no measured message is larger than the kink",
    "kink_bytes": "message size at which o + (s - 1) G reaches g (0: below every measured "
                  "size; None: above them all)",
    "intercept": "the fit's constant (s per rank)",
}

