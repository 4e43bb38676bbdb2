"""Per-series fits: one metric of one kernel as a function of P (and further parameters).

The family is that of APMT and RAT (papers 000 and 003): constant, linear, polynomial, power
``a*x^b + c``, logarithm, RAT's ``a*(log P)^b * P^c + d``, exponential, and a power law fitted
in log space (``y = a * P^b``, multiplicative errors, the usual shape of timing noise). With a
size parameter the series is also tried as a function of the compute per rank ``size/P``
(APMT's choice, which makes problem-size prediction possible), and as a multi-parameter form
``c + a*f(P)*g(size)``, ``c + a*f(P) + b*g(size)`` or ``y = a * P^b * size^c``. The exponents
of ``d + a*x^c``, of RAT's function and of the sum ``d + a*x^c + e*w^f`` are also estimated
from the data (apmt.varpro), not only taken from the grid of the others.

Every hypothesis is linear in its coefficients once its exponents are fixed, so all of them are
fitted at once with batched least squares (QR of the column-scaled designs) on relative errors,
and their cross-validation errors come in closed form from the hat matrix; an estimated shape
re-estimates its exponents in every fold instead. With 3 to 6 points the highest R^2 overfits,
so the selection uses out-of-sample error: leave-one-P-out folds (does the shape hold?) and
forward folds (fit the smaller P, predict the next one: the user's question one step back), and
the one-standard-error rule: among the hypotheses within one paired standard error of the best,
the one with the fewest coefficients and the plainest shape is the series' function, and
predictions average it with the next plainest plausible shapes (model averaging over that
window). Shapes that turn negative or explode within 100x of the measured range are never
chosen; that is checked along the primary variable, and where an averaged shape is not
positive at a point all the same (another variable moved with it), the average there is of
those that are. Every prediction gets a 90% interval from the cross-validated error, the
leverage of the target point and the spread of the averaged shapes, widened beyond the
measured range by how much forward predictions erred per step (apmt.fit_table.calibrate)
and, where those backtests could check only the classic laws, holding their forecast as well
(_classic_fits); where the series' runs scatter, every interval also holds that scatter
(SeriesFit.scatter), since a value to come is measured in such runs. Beyond the largest
measured P, a series whose latest trend (the power law through its two largest values)
backtested clearly better than its function is forecast by that trend, its interval holding
both (SeriesFit.latest, apmt.fit_table.latest_trends); a kernel's time with an instruction
count, by the count's forecast times its time per instruction (apmt.fit_table.counted_times).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np
from scipy import stats

from apmt import varpro
from apmt.work import evaluate_work

# Extra-P's exponents, mirrored for strong scaling and capped at 2: steeper growth in P is not
# seen in real codes, and from 4-5 points it is what turns a noisy last point into a blow-up.
POWER_EXPONENTS = (-2, -3 / 2, -4 / 3, -1, -3 / 4, -2 / 3, -1 / 2, -1 / 3, -1 / 4, 0, 1 / 4,
                   1 / 3, 1 / 2, 2 / 3, 3 / 4, 1, 5 / 4, 4 / 3, 3 / 2, 5 / 3, 7 / 4, 2)
LOG_EXPONENTS = (0, 1, 2)
EXP_RATES = (-4.0, -2.0, -1.0)   # decaying only: a growing exponential in P explodes
CAPPED_LOG_ERROR = 3.0
INTERVAL_LEVEL = 0.90
Z_INTERVAL = float(stats.norm.ppf(0.5 + INTERVAL_LEVEL / 2))   # its normal quantile
ONE_SE = 1.0
FORWARD_WEIGHT = 2.0
ALTERNATIVES = 4        # plausible shapes averaged with the chosen one, widening its interval
TINY = np.finfo(float).tiny
FLOAT_LOG_LIMIT = 300.0   # e^300: the widest interval a float holds around any prediction
PAIR_TERMS = 8          # best terms per variable that multi-parameter hypotheses combine
MAX_LOG_EXPONENT = 3.0
NEGLIGIBLE_EXPONENT = 5e-4   # a power law's exponent shown as none (p^5e-4 at 1e9: 1.01)
NEGLIGIBLE_CONSTANT = 1e-9   # a sum's constant shown as none, relative to the function's value
MISFIT_NOTED = 10.0     # a function off by this factor at a measured value does not follow it
EXTRAPOLATION_FACTORS = (1.0, 2.0, 4.0, 16.0, 100.0)
PER_RANK_SUFFIX = "/p"
SHAPE_LEVELS = 4        # values of the primary variable from which a shape is chosen
Section = tuple[list[float], float, float]   # the others' values, the lowest, the highest
DRAWN_ON = 1e-6         # a weight (stratum_weights) below it draws on a measured value in name only


class NoPlausibleFit(ValueError):
    """No hypothesis of the family describes the series plausibly."""


@dataclass(frozen=True)
class Term:
    """One basis function of one variable.

    kind ``power``: x^exponent * log2(x)^log_exponent; ``exp``: exp(rate * x / scale);
    ``ln``: ln(x) and ``lnlog``: ln(log2 x), used by the power laws fitted in log space.
    The variable is ``p``, a parameter, or a per-rank amount such as ``size/p``.
    """

    variable: str
    kind: str = "power"
    exponent: float = 0.0
    log_exponent: float = 0.0
    scale: float = 1.0

    def evaluate(self, values: dict[str, np.ndarray]) -> np.ndarray:
        x = variable_values(self.variable, values)
        if self.kind == "ln":
            return np.log(x)
        if self.kind == "lnlog":
            return np.log(np.maximum(np.log2(x), 1e-12))
        if self.kind == "exp":
            return np.exp(self.exponent * x / self.scale)
        result = x ** self.exponent
        if self.log_exponent:
            result = result * np.log2(x) ** self.log_exponent
        return result

    def text(self) -> str:
        name = self.variable if self.variable.isidentifier() else f"({self.variable})"
        if self.kind == "ln":
            return f"ln({self.variable})"
        if self.kind == "lnlog":
            return f"ln(log2({self.variable}))"
        if self.kind == "exp":
            return f"exp({self.exponent:g}*{name}/{self.scale:g})"
        parts = []
        if self.exponent:
            parts.append(name if self.exponent == 1 else f"{name}^{_fraction(self.exponent)}")
        if self.log_exponent:
            log = f"log2({self.variable})"
            parts.append(log if self.log_exponent == 1 else f"{log}^{self.log_exponent:.3g}")
        return " * ".join(parts) or "1"

    @property
    def complexity(self) -> int:
        """How unusual the shape is; ties in cross-validated error go to the plainer shape."""
        if self.kind == "ln":
            return 0
        if self.kind in ("exp", "lnlog"):
            return 3
        plain = 0 if self.exponent in (0, 1, -1) else 1 if self.exponent in (0.5, -0.5, 2) else 2
        return plain + math.ceil(self.log_exponent)

    def to_dict(self) -> dict:
        return {"variable": self.variable, "kind": self.kind, "exponent": self.exponent,
                "log_exponent": self.log_exponent, "scale": self.scale}


def outside(domain: dict[str, tuple[float, float]],
            values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per variable of the domain given a value: how far each point lies beyond its measured
    range, in log units: positive above the largest, negative below the smallest, 0 inside.
    The range's ends may be arrays, one per point (SeriesFit.measured_range)."""
    result = {}
    for name, (low, high) in domain.items():
        if name in values:
            value = np.asarray(values[name], float)
            with np.errstate(divide="ignore", invalid="ignore"):
                above, below = np.log(value / high), np.log(low / value)
            result[name] = np.nan_to_num(np.where(above > 0, above,
                                                  np.where(below > 0, -below, 0.0)))
    return result


def variable_values(variable: str, values: dict[str, np.ndarray]) -> np.ndarray:
    """Values of ``p``, a parameter, ``size/p`` (the compute per rank) or a study's work
    expression of them (apmt.work), such as ``size ** 3 / p``."""
    if variable in values:
        return np.asarray(values[variable], float)
    if variable.endswith(PER_RANK_SUFFIX) and variable[: -len(PER_RANK_SUFFIX)] in values:
        return np.asarray(values[variable[: -len(PER_RANK_SUFFIX)]], float) / values["p"]
    return evaluate_work(variable, values)


def derived(variable: str) -> bool:
    """Whether a variable is computed from P and the parameters (``size/p``, a work
    expression) rather than one of them: it enters the fits alone, not beside them in a
    product or a joint power law, whose logs it is a combination of."""
    return not variable.isidentifier()


def _fraction(value: float) -> str:
    for denominator in (1, 2, 3, 4):
        numerator = value * denominator
        if abs(numerator - round(numerator)) < 1e-9:
            whole = round(numerator)
            return f"{whole}" if denominator == 1 else f"({whole}/{denominator})"
    return f"{value:g}"


@dataclass(frozen=True)
class Hypothesis:
    """A model shape: ``linear`` is y = c0 + sum c_k * basis_k, each basis a product of terms;
    ``loglinear`` is ln y = c0 + sum c_k * term_k (a power law with multiplicative errors)."""

    form: str
    bases: tuple[tuple[Term, ...], ...]
    estimated: int = 0      # exponents estimated from the data (apmt.varpro): they count too

    @property
    def n_coefficients(self) -> int:
        return 1 + len(self.bases) + self.estimated

    @cached_property
    def complexity(self) -> int:
        """How unusual the shape is (its terms', and one per basis beyond the first): the
        one-SE rule sorts hundreds of shapes by it per series, so it is computed once."""
        return sum(t.complexity for basis in self.bases for t in basis) + len(self.bases) - 1

    def design(self, values: dict[str, np.ndarray]) -> np.ndarray:
        return designs([self], values)[0]

    def text(self, coefficients: np.ndarray, constant_shown: bool = True) -> str:
        """The function as a formula. A power law's exponent below NEGLIGIBLE_EXPONENT is left
        out (an exact fit of a constant leaves p^1.75e-16: a factor of 1 at any P), as is
        the constant of a sum where ``constant_shown`` is False (SeriesFit.function: it is
        rounding beside the rest)."""
        if self.form == "loglinear":
            factors = [f"{np.exp(coefficients[0]):.4g}"]
            for coefficient, (term,) in zip(coefficients[1:], self.bases, strict=True):
                if abs(coefficient) < NEGLIGIBLE_EXPONENT:
                    continue
                name = term.variable if term.variable.isidentifier() else f"({term.variable})"
                inner = name if term.kind == "ln" else f"log2({term.variable})"
                factors.append(f"{inner}^{coefficient:.3g}")
            return " * ".join(factors)
        pieces = [f"{coefficients[0]:.4g}"] if constant_shown or not self.bases else []
        for coefficient, basis in zip(coefficients[1:], self.bases, strict=True):
            pieces.append(f"{coefficient:.4g} * " + " * ".join(t.text() for t in basis))
        return " + ".join(pieces).replace("+ -", "- ")

    def to_dict(self) -> dict:
        return {"form": self.form, "bases": [[t.to_dict() for t in b] for b in self.bases],
                "estimated": self.estimated}

    @staticmethod
    def from_dict(data: dict) -> Hypothesis:
        bases = tuple(tuple(Term(**t) for t in basis) for basis in data["bases"])
        return Hypothesis(data["form"], bases, data.get("estimated", 0))


@dataclass
class SeriesFit:
    """The chosen function of one series, its quality, and what its intervals need."""

    hypothesis: Hypothesis
    coefficients: np.ndarray
    inverse_gram: np.ndarray
    sigma: float
    dof: int
    r2: float
    adj_r2: float
    loo_error: float
    n_points: int
    domain: dict[str, tuple[float, float]]
    alternatives: list[tuple[Hypothesis, np.ndarray]] = field(default_factory=list)
    averaged: bool = True   # False when theory chose the shape (Hockney): it stands alone
    fold_bias: dict[str, float] = field(default_factory=dict)  # signed error per fold label
    # the table's calibration (apmt.fit_table.calibrate): the interval's log half-width one
    # ``step`` (in log units of the primary variable) beyond the measured range, in two parts:
    # the series' own noise and the table's typical error
    noise_width: float = float("nan")
    drift_width: float = float("nan")
    step: float = float("nan")
    # the classic laws (power_law, linear_law) fitted to the same points, where the table's
    # backtests could check only them (see _classic_fits); beyond the data the interval
    # holds their forecast too
    anchors: list[tuple[Hypothesis, np.ndarray]] = field(default_factory=list)
    # the series' latest trend, the power law in the primary variable through its two largest
    # values, where the table's backtest found it the better forecast (apmt.fit_table
    # latest_trends): beyond the largest value it is the prediction, the interval holding the
    # function's forecast as well
    latest: list[tuple[Hypothesis, np.ndarray]] = field(default_factory=list)
    # the primary variable's second largest measured value, from which the latest trend takes
    # over from the function, in full at the largest (``_trend_weight``)
    trend_from: float = float("nan")
    # what ``latest`` holds where it is not the latest trend, in words for the predictions'
    # reasons (a sampled time forecast through its kernel's instruction count:
    # apmt.fit_table.counted_times)
    ahead_by: str = ""
    # how far the function misses the measured values it was fitted to, at worst (a factor:
    # 1 exact), and where: a series that changes regime (NPB FT's fft_ counts 4,500 times the
    # instructions at P = 1 that it counts from P = 2) or scatters is not followed everywhere
    misfit: float = 1.0
    misfit_at: dict[str, float] = field(default_factory=dict)
    # fits of the series at each measured value of its other parameters alone (apmt.fit_table
    # strata): a point at one of them is predicted by that value's fit, others from those
    # fits, interpolated and extrapolated in the parameters' logs (see predict)
    strata: list[tuple[dict[str, float], SeriesFit]] = field(default_factory=list)
    # per variable, where there are several: its measured range at each measured combination
    # of the others (their values in the order of their names, the lowest, the highest)
    sections: dict[str, list[Section]] = field(default_factory=dict)
    # a stratum's measured points (its variables' values and ``value``, the mean there): the
    # line between and beyond the sizes runs through them where it is drawn at one of them
    observed: dict[str, list[float]] = field(default_factory=dict)
    # the log standard error of a mean measured at any of its points, from the scatter of
    # the runs there (apmt.fit_table.SeriesData.scatter): a measured value to come is that
    # uncertain in itself, however well the function follows the means
    scatter: float = 0.0

    @property
    def function(self) -> str:
        """The function as a formula, without a constant that is rounding: below
        NEGLIGIBLE_CONSTANT of the function's value where every variable is at its largest
        measured value (an exact fit of 1 * p^2 * log2(p) leaves -9.019e-15 + ...)."""
        hypothesis, coefficients = self.hypothesis, self.coefficients
        if hypothesis.form != "linear" or not hypothesis.bases or \
                not self.variables <= set(self.domain):   # (an MPI operation's call count)
            return hypothesis.text(coefficients)
        largest = {name: np.array([high]) for name, (_, high) in self.domain.items()}
        value = float(hypothesis.design(largest)[0] @ coefficients)
        rounding = abs(coefficients[0]) < NEGLIGIBLE_CONSTANT * abs(value)
        return hypothesis.text(coefficients, constant_shown=not rounding)

    @property
    def variables(self) -> set[str]:
        """The names the function depends on, also inside a work expression (``size/p``
        depends on size and p): a name it does not use, it cannot predict the effect of."""
        return {name for basis in self.hypothesis.bases for term in basis
                for name in re.findall(r"[A-Za-z_]\w*", term.variable)}

    def predict(self, values: dict[str, np.ndarray], measured: bool = True,
                capped: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Point prediction and the lower and upper ends of its 90% interval: at a measured
        value of the other parameters from that value's own fit (``strata``). Along one such
        parameter measured at several values, between and beyond them at each point a power
        law in it through the two nearest values' fits: linear in the logs, with the
        interval's half-widths combined by the same weights (beyond, the nearer value weighs
        more than 1 and the other less than 0, so the interval widens with the distance, the
        two fits' errors adding in quadrature: ``_ends``) and widened beyond them by the
        table's drift (``_drifted``). Over
        several parameters, from the function of them all (``predict_joint``) times the
        strata's ratios to it, interpolated in the parameters' logs. ``measured``: whether
        the interval holds the scatter of the series' runs too (``predict_joint``);
        ``capped``: whether an interval inside the measured range is capped (inside_cap).
        The strata's intervals that a line carries between and beyond them are not: its
        weights amplify their errors as they stand (capped, NPB CG's class A from S and W
        held 73% of its values, 78% uncapped)."""
        names = sorted({name for at, _ in self.strata for name in at})
        if not self.strata or any(name not in values for name in names):
            return self.predict_joint(values, measured, capped)
        count = len(next(iter(values.values())))
        weights = stratum_weights([[at[name] for name in names] for at, _ in self.strata],
                                  np.column_stack([values[name] for name in names]))
        there = [{**values, **{name: np.full(count, value) for name, value in at.items()}}
                 for at, _ in self.strata]
        own = [fit.predict(points, measured, capped=False)
               for (_, fit), points in zip(self.strata, there, strict=True)]
        at_sizes = [np.logical_and.reduce([np.isclose(values[name], value, rtol=1e-9, atol=0)
                                           for name, value in at.items()])
                    for at, _ in self.strata]
        if len(names) == 1 and len(self.strata) > 1:
            line = own
            if not np.logical_or.reduce(at_sizes).all():    # the line is drawn somewhere
                line = [fit.through_observed(points, piece) for (_, fit), points, piece
                        in zip(self.strata, there, own, strict=True)]
            bounds = self._drifted(_log_combination(weights, line), names[0], values)
        else:
            bounds = self._shifted(values, weights, there, own, measured)
        for rows, (_, fit), points, piece in zip(at_sizes, self.strata, there, own, strict=True):
            if rows.any():      # at a measured stratum, its own interval: capped unless asked
                mine = fit.predict(points, measured, capped) if capped else piece
                for whole, part in zip(bounds, mine, strict=True):
                    whole[rows] = part[rows]
        return bounds

    def through_observed(self, values: dict[str, np.ndarray], bounds: tuple[np.ndarray, ...]
                         ) -> tuple[np.ndarray, ...]:
        """``bounds`` (this fit's prediction and interval at ``values``) moved, where a point
        was measured, to its measured mean, the interval shifted alike. Why: a size's fit
        over P smooths away what one P does at every size (a decomposition's step, the MPI
        library's counts at P = 1), and a line in log size through two fits carries their
        misses; through the measured values at that P it does not. NPB IS class A from S and
        W at every P erred by 5.8% (median) through the fits, 1.3% through the measured
        values; CG 19.2 and 14.5%, MG 12.8 and 11.1%, LAMMPS' LJ size 1.0 from 0.6 and 0.8
        7.6 and 1.5%."""
        if not self.observed:
            return bounds
        names = [name for name in self.observed if name != "value"]
        if any(name not in values for name in names):
            return bounds
        match = np.logical_and.reduce([
            np.isclose(np.asarray(values[name], float)[:, None],
                       np.asarray(self.observed[name], float)[None, :], rtol=1e-9, atol=0)
            for name in names])                                           # points x observed
        centre, low, high = (np.asarray(side, float) for side in bounds)
        found = match.any(axis=1)
        value = np.asarray(self.observed["value"], float)[np.argmax(match, axis=1)]
        # the interval's ends keep their ratios to the prediction; where the fit is not
        # positive there, it says nothing of them (the table's drift still widens the line)
        speaks = _speaks(centre)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            below = np.where(speaks, low / np.where(speaks, centre, 1.0), 1.0)
            above = np.where(speaks, high / np.where(speaks, centre, 1.0), 1.0)
        return (np.where(found, value, centre), np.where(found, value * below, low),
                np.where(found, value * above, high))

    def _drifted(self, bounds: tuple[np.ndarray, ...], name: str,
                 values: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """The strata's line beyond their measured values of ``name`` widened by the table's
        calibrated drift for that distance, as the function of all parameters would be
        (``beyond``): the line's slope between two sizes is an estimate too."""
        measured = sorted(at[name] for at, _ in self.strata)
        if not self.calibrated or measured[0] <= 0:      # no log distance to a size of 0
            return bounds
        distance = outside({name: (measured[0], measured[-1])}, values)[name]
        step = np.log(np.where(distance > 0, measured[-1] / measured[-2],
                               measured[1] / measured[0]))
        center, low, high = bounds
        with np.errstate(over="ignore", invalid="ignore"):   # far out (n = 1e300): inf or
            widening = np.exp(self.drift_width * np.abs(distance) / step)   # NaN, as beyond
            return center, low / widening, high * widening

    def _shifted(self, values: dict[str, np.ndarray], weights: np.ndarray,
                 there: list[dict[str, np.ndarray]], own: list[tuple[np.ndarray, ...]],
                 measured: bool) -> tuple[np.ndarray, ...]:
        """The function of all parameters times the strata's ratios to it (in logs,
        weighted); ``own``: each stratum's prediction at the points moved to its values
        (``there``)."""
        ratios = []
        for points, piece in zip(there, own, strict=True):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.log(piece[0] / self.predict_joint(points)[0])
            speaking = np.isfinite(ratio) & _speaks(piece[0])   # as in _log_combination
            ratios.append(np.where(speaking, ratio, 0.0))
        shift = np.exp(np.sum(weights * np.array(ratios), axis=0))
        return tuple(whole * shift for whole in self.predict_joint(values, measured))

    def measured_range(self, values: dict[str, np.ndarray]
                       ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per point, the smallest and largest measured value of each variable through it
        (``sections``): where the other variables were measured at the point's values, the
        range at those; between them, the range that both neighbours (along one other
        variable; all, along several) were measured over. On a ragged table (a larger size
        measured at fewer P) that is narrower than the box of the whole table's ranges
        (``domain``), which is what is left where no sections are known."""
        count = len(next(iter(values.values())))
        ranges = {name: (np.full(count, low), np.full(count, high))
                  for name, (low, high) in self.domain.items()}
        for name, measured in self.sections.items():
            others = [other for other in sorted(self.domain) if other != name]
            if name not in values or any(other not in values for other in others):
                continue
            weights = stratum_weights([at for at, _, _ in measured],
                                      np.column_stack([values[other] for other in others]))
            drawn_on = weights > DRAWN_ON
            lows, highs = (np.array([section[end] for section in measured])[:, None]
                           for end in (1, 2))
            ranges[name] = (np.max(np.where(drawn_on, lows, -np.inf), axis=0),
                            np.min(np.where(drawn_on, highs, np.inf), axis=0))
        return ranges

    def predict_joint(self, values: dict[str, np.ndarray], measured: bool = True,
                      capped: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Point prediction and 90% interval of the function itself (no strata).

        The prediction averages (geometrically) the chosen shape and the plausible
        alternatives, all within one standard error of the best: with 4-5 points no single
        one of them has earned the trust that a pick would suggest. A shape that theory
        prefers (Hockney's, for communication) is not averaged away. Inside the measured range
        the interval's width comes from the cross-validated error, the leverage of the point
        and the spread of the averaged shapes; beyond it, from how far the table's series
        erred when their last measured value was predicted from the rest (apmt.fit_table
        calibrate), see ``beyond``, around this forecast and, for a fit with ``anchors``,
        around theirs as well: the backtests checked theirs. Both widen by the scatter of the
        series' runs (``_with_scatter``) unless not ``measured``: a sum of series whose own
        runs' scatter is known (the application's time) takes that instead.
        """
        # far beyond the data (n = 1e300) values overflow: inf and NaN are the answer there,
        # which apmt.trust calls no finite prediction
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            design = self.hypothesis.design(values)
            shapes = np.array([_evaluate(self.hypothesis, self.coefficients, values, design)]
                              + [_evaluate(hypothesis, coefficients, values)
                                 for hypothesis, coefficients in self.alternatives])
            chosen = np.maximum(shapes[0], TINY)
            if self.hypothesis.form == "linear":
                design = design / chosen[:, None]
            leverage = np.einsum("ik,kl,il->i", design, self.inverse_gram, design)
            quantile = t_quantile(max(self.dof, 1))
            half_width = quantile * self.sigma * np.sqrt(1.0 + np.nan_to_num(leverage, nan=1e6))
            logs = np.log(np.maximum(shapes, TINY))
            positive = shapes > 0
            center = _positive_mean(logs, positive) if self.averaged else logs[0]
            half_width = np.maximum(half_width, np.max(np.where(positive, np.abs(logs - center),
                                                                0.0), axis=0))
            if self.calibrated and capped:
                half_width = np.minimum(half_width, self.inside_cap)
            low, high = center - half_width, center + half_width
            if self.calibrated:
                beyond = self.distance(values)
                noise = Z_INTERVAL * self.sigma
                half_width = np.maximum(noise, self.beyond(beyond))
                anchored = center
                if self.anchors:
                    forecasts = np.array([_evaluate(h, c, values) for h, c in self.anchors])
                    anchored = _positive_mean(np.log(np.maximum(forecasts, TINY)),
                                              forecasts > 0, center)
                low = np.where(beyond > 0, np.minimum(center, anchored) - half_width, low)
                high = np.where(beyond > 0, np.maximum(center, anchored) + half_width, high)
                center, low, high = self._ahead(values, center, low, high, half_width)
            if measured:
                low, high = _with_scatter(center, low, high, Z_INTERVAL * self.scatter)
            # no cap: an interval says how little is known; only kept within floating point
            low = np.maximum(low, center - FLOAT_LOG_LIMIT)
            high = np.minimum(high, center + FLOAT_LOG_LIMIT)
            return np.exp(center), np.exp(low), np.exp(high)

    def _ahead(self, values: dict[str, np.ndarray], center: np.ndarray, low: np.ndarray,
               high: np.ndarray, half_width: np.ndarray) -> tuple[np.ndarray, ...]:
        """Beyond the largest measured value of the primary variable, at the measured values
        of the others, the latest trend's forecast (``latest``) in place of the function's,
        the interval widened to hold both: the backtest preferred the trend, but one
        backtest is one value. Where another parameter moves (a weak-scaling size), the
        trend, a law of the primary variable alone, says nothing, and the function
        answers."""
        if not self.latest:
            return center, low, high
        weight = self._trend_weight(values)
        hypothesis, coefficients = self.latest[0]
        trend = np.log(np.maximum(_evaluate(hypothesis, coefficients, values), TINY))
        handed = center + weight * (trend - center)
        taken = weight > 0
        return (handed, np.where(taken, np.minimum(low, handed - half_width), low),
                np.where(taken, np.maximum(high, handed + half_width), high))

    def _trend_weight(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """How much of the forecast is the latest trend's: all of it where it forecasts the
        series (trend_at); across the last measured step, from the second largest value of
        the primary variable to the largest, a share rising in log distance from 0 to 1, so
        that the function hands over to the trend where the data ends. Taken at once at the
        largest value, MILC's MPI_Wait (its function 7.6 s per rank at P = 32, where 10.8 s
        was measured and its trend went on from) made the application's model jump from 9.9 s
        at P = 32 to 13.3 s at 33."""
        varying = self._varying()
        if not np.isfinite(self.trend_from) or len(varying) != 1:
            return self.trend_at(values).astype(float)
        name = varying[0]
        with np.errstate(divide="ignore", invalid="ignore"):    # 1 and more beyond the data
            share = np.log(np.asarray(values[name], float) / self.trend_from) / \
                np.log(self.domain[name][1] / self.trend_from)
        return np.where(self._others_measured(values), np.clip(np.nan_to_num(share), 0, 1), 0.0)

    def trend_at(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Where a latest trend forecasts the series (``_ahead``): beyond the largest
        measured value of its variable, at the measured values of the others; for a series
        its strata predict, where one of them that takes part there does."""
        count = len(next(iter(values.values())))
        if self.strata:
            return np.logical_or.reduce([
                fit.trend_at({**values, **{name: np.full(count, value)
                                           for name, value in at.items()}})
                for at, fit in self.strata])
        if not self.latest:
            return np.zeros(count, bool)
        beyond = outside(self.domain, values)
        return np.logical_and.reduce([*(beyond[name] > 0 for name in self._varying()),
                                      self._others_measured(values)])

    def _varying(self) -> list[str]:
        """The variables the fit's points spread over."""
        return [name for name, (low, high) in self.domain.items() if high > low]

    def _others_measured(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Whether each point has the fit's other variables at the one value they were
        measured at (a law of the varying one says nothing elsewhere)."""
        count = len(next(iter(values.values())))
        beyond = outside(self.domain, values)
        varying = self._varying()
        return np.logical_and.reduce([np.ones(count, bool), *(
            np.abs(beyond.get(name, np.full(count, np.inf))) < 1e-9
            for name in self.domain if name not in varying)])

    def without_trend(self) -> SeriesFit:
        """The fit as its function alone forecasts, without latest trends (its strata's too):
        what a row forecast by a trend says its function gave."""
        return replace(self, latest=[], ahead_by="",
                       strata=[(at, fit.without_trend()) for at, fit in self.strata])

    def beyond(self, distance: np.ndarray) -> np.ndarray:
        """The calibrated log half-width at a log distance beyond the measured range: one
        step out it is what the backtests measured; farther, the series' own noise adds up
        like independent errors, step by step (with the square root of the steps), and the
        table's typical error like an error of the slope (in proportion to them). Grown
        linearly throughout, the noise of an erratic MPI wait made the application's interval
        span a factor of 11 at LAMMPS' held-out P (median; 30 sets: 90% of the values inside,
        the application's 28 all); held at one step, it covered 85% (the application's 75%)."""
        steps = np.asarray(distance, float) / self.step
        return self.noise_width * np.sqrt(steps) + self.drift_width * steps

    @property
    def inside_cap(self) -> float:
        """The widest log half-width inside the measured range: that one step beyond it,
        where the table's backtests measured the errors (``beyond``, at least the noise's
        Z * sigma). Student's t with the few degrees of freedom of a short series, times its
        leverage at the range's ends, made the interval at a measured P wider than one step
        beyond it for 165 of LAMMPS' 495 calibrated series from P <= 8 (<libhwloc>'s time,
        sampled at 3 P: a factor of 3e8 there, 77 one step beyond). Held out at an interior
        P of 28 sets (4,334 points, benchmarks/interpolation.py), the intervals held 95.2% at
        a median width of 2.22, the widest set's median 120 (NPB LU W); capped, 94.4% at
        1.72, at most 9.0."""
        return max(Z_INTERVAL * self.sigma, float(self.beyond(np.array([self.step]))[0]))

    @property
    def calibrated(self) -> bool:
        """Whether a table calibrated the intervals beyond the data; a fit on its own (a
        refinement's what-if) widens them by its leverage alone."""
        return bool(np.isfinite(self.noise_width) and np.isfinite(self.drift_width)
                    and np.isfinite(self.step) and self.step > 0)

    def distance(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """How far beyond the measured range each point lies, in log units (0 inside)."""
        beyond = outside(self.domain, values)
        return np.max(np.abs(list(beyond.values())), axis=0) if beyond else \
            np.zeros(len(next(iter(values.values()))))

    def to_dict(self) -> dict:
        return {
            "function": self.function, "hypothesis": self.hypothesis.to_dict(),
            "coefficients": self.coefficients.tolist(),
            "inverse_gram": self.inverse_gram.tolist(), "sigma": self.sigma, "dof": self.dof,
            "r2": self.r2, "adj_r2": self.adj_r2, "loo_error": self.loo_error,
            "n_points": self.n_points, "domain": {k: list(v) for k, v in self.domain.items()},
            "alternatives": _shapes_dict(self.alternatives),
            "averaged": self.averaged, "fold_bias": self.fold_bias,
            "noise_width": self.noise_width, "drift_width": self.drift_width, "step": self.step,
            "anchors": _shapes_dict(self.anchors), "latest": _shapes_dict(self.latest),
            "trend_from": self.trend_from, "ahead_by": self.ahead_by,
            "misfit": self.misfit, "misfit_at": self.misfit_at,
            "strata": [{"at": at, "fit": fit.to_dict()} for at, fit in self.strata],
            "sections": {name: [list(section) for section in measured]
                         for name, measured in self.sections.items()},
            "observed": self.observed, "scatter": self.scatter,
        }

    @staticmethod
    def from_dict(data: dict) -> SeriesFit:
        return SeriesFit(
            hypothesis=Hypothesis.from_dict(data["hypothesis"]),
            coefficients=np.array(data["coefficients"], float),
            inverse_gram=np.array(data["inverse_gram"], float), sigma=data["sigma"],
            dof=data["dof"], r2=data["r2"], adj_r2=data["adj_r2"], loo_error=data["loo_error"],
            n_points=data["n_points"], domain={k: tuple(v) for k, v in data["domain"].items()},
            alternatives=_shapes_of(data["alternatives"]), averaged=data["averaged"],
            fold_bias=data.get("fold_bias", {}), **_calibration_of(data),
            anchors=_shapes_of(data.get("anchors", [])),
            latest=_shapes_of(data.get("latest", [])),
            trend_from=data.get("trend_from", float("nan")), ahead_by=data.get("ahead_by", ""),
            misfit=data.get("misfit", 1.0), misfit_at=data.get("misfit_at", {}),
            strata=[(dict(stratum["at"]), SeriesFit.from_dict(stratum["fit"]))
                    for stratum in data.get("strata", [])],
            sections={name: [(list(at), low, high) for at, low, high in measured]
                      for name, measured in data.get("sections", {}).items()},
            observed=data.get("observed", {}), scatter=data.get("scatter", 0.0),
        )


def _shapes_dict(shapes: list[tuple[Hypothesis, np.ndarray]]) -> list[dict]:
    """Fitted shapes (alternatives, anchors, a latest trend) as a model file keeps them, with
    their functions written out for the reader."""
    return [{"hypothesis": h.to_dict(), "coefficients": c.tolist(), "function": h.text(c)}
            for h, c in shapes]


def _shapes_of(stored: list[dict]) -> list[tuple[Hypothesis, np.ndarray]]:
    return [(Hypothesis.from_dict(a["hypothesis"]), np.array(a["coefficients"])) for a in stored]


def _with_scatter(center: np.ndarray, low: np.ndarray, high: np.ndarray, scatter: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The interval's log ends (around ``center``) widened by the measurement's own
    half-width ``scatter``, in quadrature: the error of the function and the scatter of the
    runs to come are independent. Without it, NPB's kernel times at P = 16 (fitted at 1..8,
    two runs each) were inside their intervals 83.5% of the time, with it 88.0%; all held-out
    times of benchmarks/accuracy.py 89.5% and 91.9%."""
    if not scatter:
        return low, high
    return (center - np.hypot(center - low, scatter), center + np.hypot(high - center, scatter))


@lru_cache(maxsize=64)
def t_quantile(dof: int) -> float:
    """The two-sided INTERVAL_LEVEL quantile of Student's t with ``dof`` degrees of freedom,
    computed once per dof: scipy's is slow beside a prediction."""
    return float(stats.t.ppf(0.5 + INTERVAL_LEVEL / 2, dof))


def _calibration_of(data: dict) -> dict[str, float]:
    """A stored fit's calibration; a model file from before the backtests widened its
    intervals by its ``drift`` (log error per log distance, at the normal quantile)."""
    if "drift_width" in data:
        return {name: data[name] for name in ("noise_width", "drift_width", "step")}
    return {"noise_width": 0.0, "step": 1.0,
            "drift_width": Z_INTERVAL * data.get("drift", 0.0)}


def measured_sections(values: dict[str, np.ndarray]) -> dict[str, list[Section]]:
    """Per variable, its measured range at each measured combination of the other variables
    (SeriesFit.sections); none where one variable varies, or the points lie on a full grid:
    every range is the domain's there."""
    names = sorted(values)
    if sum(np.ptp(values[name]) > 0 for name in names) < 2:
        return {}
    inverse = [np.unique(values[name], return_inverse=True) for name in names]
    shape = tuple(len(levels) for levels, _ in inverse)
    cells = np.unique(np.ravel_multi_index([which.ravel() for _, which in inverse], shape))
    if len(cells) == np.prod(shape):
        return {}
    result = {}
    for name in names:
        others = np.column_stack([values[other] for other in names if other != name])
        combinations, which = np.unique(others, axis=0, return_inverse=True)
        which = which.ravel()
        lows = np.full(len(combinations), np.inf)
        highs = np.full(len(combinations), -np.inf)
        np.minimum.at(lows, which, values[name])
        np.maximum.at(highs, which, values[name])
        result[name] = [(combination.tolist(), float(low), float(high))
                        for combination, low, high in zip(combinations, lows, highs, strict=True)]
    return result


def stratum_weights(strata: list[list[float]], points: np.ndarray) -> np.ndarray:
    """Each stratum's weight at each point (strata x points, columns summing to 1), in the
    logs of the parameters where they are positive: along one parameter, linear in it through
    the two nearest strata, between them and beyond (where the nearer one weighs more than 1
    and the other less than 0); over several, inverse squared distances."""
    at = np.asarray(strata, float)
    points = np.asarray(points, float)
    if np.all(at > 0) and np.all(points > 0):
        at, points = np.log(at), np.log(points)
    weights = np.zeros((len(at), len(points)))
    if len(at) == 1:
        weights[0] = 1.0
    elif at.shape[1] == 1:
        order = np.argsort(at[:, 0])
        line = at[order, 0]
        upper = np.clip(np.searchsorted(line, points[:, 0]), 1, len(line) - 1)
        share = (points[:, 0] - line[upper - 1]) / (line[upper] - line[upper - 1])
        columns = np.arange(len(points))
        weights[order[upper], columns] = share
        weights[order[upper - 1], columns] = 1.0 - share
    else:
        distance = np.sum((at[:, None, :] - points[None, :, :]) ** 2, axis=2)
        inverse = 1.0 / np.maximum(distance, 1e-300)
        weights = inverse / inverse.sum(axis=0)
    return weights


def _log_combination(weights: np.ndarray, own: list[tuple[np.ndarray, ...]]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predictions and interval ends of several fits combined linearly in their logs by
    ``weights`` (fits x points, see stratum_weights); a negative weight takes the other end.
    Between the fits' values (weights from 0 to 1) the interval is as wide as theirs,
    weighted alike; beyond them the weights amplify the fits' errors, which come from
    separate runs, so their half-widths add in quadrature (``_ends``).
    A fit with no positive value at a point says nothing there: the others' weights are
    rescaled to carry it (NPB MG S's MPI-library time, fitted from P = 4, falls below zero
    at P = 2, and the line through it and class W's forecast 1e149 s for class A)."""
    with np.errstate(over="ignore", invalid="ignore"):      # far out: inf, as predict_joint
        stacked = np.array(own, float)                                 # fits x 3 x points
        logs = np.log(np.maximum(stacked, TINY))
        weights = _without_silent(weights, _speaks(stacked[:, 0]))
        positive = weights >= 0
        center = np.sum(weights * logs[:, 0], axis=0)
        below = np.where(positive, logs[:, 0] - logs[:, 1], logs[:, 2] - logs[:, 0])
        above = np.where(positive, logs[:, 2] - logs[:, 0], logs[:, 0] - logs[:, 1])
        low = center - _ends(weights, below)
        high = center + _ends(weights, above)
        low = np.maximum(low, center - FLOAT_LOG_LIMIT)
        high = np.minimum(high, center + FLOAT_LOG_LIMIT)
        return np.exp(center), np.exp(low), np.exp(high)


def _ends(weights: np.ndarray, half_widths: np.ndarray) -> np.ndarray:
    """One side's half-width of a combination of fits (fits x points): between them the
    weighted sum of theirs; beyond them (a weight below 0) the root of the sum of the
    weighted squares, as the errors of estimates from separate runs add. The weighted sum
    treated them as one error: NPB FT class A (16 times class W's size, which is twice
    class S's) from S and W, a line with weights 5 and -4, held 90% of its values in
    intervals 268 wide (median; median error 14%), 71 in quadrature (90% held)."""
    amplified = (weights < 0).any(axis=0)
    summed = np.sum(np.abs(weights) * half_widths, axis=0)
    root = np.sqrt(np.sum((weights * half_widths) ** 2, axis=0))
    return np.where(amplified, root, summed)


def _speaks(predicted: np.ndarray) -> np.ndarray:
    """Whether a fit's predictions are values: a fit not positive at a point is clamped to
    TINY there (predict_joint), which its exp(log()) may leave a few ulps above."""
    return np.asarray(predicted, float) > 2.0 * TINY


def _without_silent(weights: np.ndarray, speaking: np.ndarray) -> np.ndarray:
    """``weights`` (fits x points) with those of the fits not ``speaking`` at a point set
    to 0 and the rest rescaled to sum to 1 there; unchanged where all or none speak."""
    kept = np.where(speaking, weights, 0.0)
    total = kept.sum(axis=0)
    rescale = speaking.any(axis=0) & ~speaking.all(axis=0) & (total != 0)
    return np.where(rescale, kept / np.where(rescale, total, 1.0), weights)


def _positive_mean(logs: np.ndarray, positive: np.ndarray,
                   otherwise: np.ndarray | None = None) -> np.ndarray:
    """Per point, the mean of the logs of the shapes positive there (shapes x points):
    a shape that turns negative at a point says nothing of its value there, and its clamp to
    the tiniest float would pull a geometric mean to 1e-104 (NPB IS W's MPI_Alltoall, whose
    volume grows with P: a shape in P and the volume that falls below 0 at P = 16). Where
    none is positive: ``otherwise``, by default the first shape's clamped log."""
    count = positive.sum(axis=0)
    mean = np.sum(np.where(positive, logs, 0.0), axis=0) / np.maximum(count, 1)
    fallback = logs[0] if otherwise is None else otherwise
    return np.where(count > 0, mean, fallback)


def _evaluate(hypothesis: Hypothesis, coefficients: np.ndarray,
              values: dict[str, np.ndarray], design: np.ndarray | None = None) -> np.ndarray:
    """The hypothesis's values at the points (``design``: its design there, if known)."""
    result = (hypothesis.design(values) if design is None else design) @ coefficients
    return np.exp(np.minimum(result, 700.0)) if hypothesis.form == "loglinear" else result


# ---------------------------------------------------------------------------------- candidates

def _power_terms(variable: str, logs: bool) -> list[Term]:
    return [Term(variable, "power", e, j) for e in POWER_EXPONENTS
            for j in (LOG_EXPONENTS if logs else LOG_EXPONENTS[:1]) if (e, j) != (0, 0)]


def _exp_terms(variable: str, scale: float) -> list[Term]:
    return [Term(variable, "exp", rate, 0, scale) for rate in EXP_RATES]


@lru_cache(maxsize=64)
def candidate_hypotheses(variables: tuple[str, ...], scales: tuple[float, ...],
                         loggable: tuple[bool, ...], n_points: int) -> tuple[Hypothesis, ...]:
    """The hypotheses of one variable at a time that ``n_points`` points can cross-validate.

    ``variables`` are the independent variables (the primary first); ``scales`` their largest
    training values, which fix the exponential's rate; ``loggable`` whether log2 of each keeps
    its sign where the shapes are checked (apmt.fit.log_sign_kept): a log factor of one that
    does not is left out. A hypothesis needs at least one point more than it has
    coefficients. Products and sums of two variables come second, from the best terms of
    each (see ``pair_hypotheses``), as in Extra-P's multi-parameter modeler.
    """
    found: list[Hypothesis] = [Hypothesis("linear", ())]
    for variable, scale, logs in zip(variables, scales, loggable, strict=True):
        terms = _power_terms(variable, logs) + _exp_terms(variable, scale)
        found += [Hypothesis("linear", ((term,),)) for term in terms]
        found.append(Hypothesis("loglinear", ((Term(variable, "ln"),),)))
        if logs:
            found.append(Hypothesis("loglinear", ((Term(variable, "ln"),),
                                                  (Term(variable, "lnlog"),))))
    for variable in variables[1:]:
        if not derived(variable):
            found.append(Hypothesis("loglinear", ((Term(variables[0], "ln"),),
                                                  (Term(variable, "ln"),))))
    return tuple(h for h in found if h.n_coefficients < n_points)


def log_sign_kept(values: dict[str, np.ndarray], variables: tuple[str, ...],
                  primary: str) -> tuple[bool, ...]:
    """Per variable, whether log2 of it keeps one sign from the measured points to 100x the
    primary variable, where shapes are checked: a per-rank amount such as grid/p (NPB LU W's
    33/p) falls below 1 there, and a log factor that turns negative is no law of cost (from
    LU W's P = 1..8 such a shape predicted rhs_'s instructions at P = 16 16% high, where the
    power law erred by 0.2%). P itself never falls below 1 (RAT's family asks the same)."""
    extended = _extended_values(values, primary)
    return tuple(bool(np.all(x >= 1) or np.all(x <= 1))
                 for x in (variable_values(variable, extended) for variable in variables))


def pair_hypotheses(best_terms: dict[str, list[Term]], primary: str,
                    n_points: int) -> list[Hypothesis]:
    """c + a*f*g and c + a*f + b*g for the best single terms f of the primary variable and g
    of each other (total-size or per-rank) parameter."""
    found = []
    for variable, terms in best_terms.items():
        if variable == primary or derived(variable):
            continue
        for a, b in itertools.product(best_terms[primary], terms):
            found.append(Hypothesis("linear", ((a, b),)))
            found.append(Hypothesis("linear", ((a,), (b,))))
    return [h for h in found if h.n_coefficients < n_points]


def power_law(variables: tuple[str, ...], values: dict[str, np.ndarray]) -> Hypothesis:
    """ln y = c0 + sum c_v ln v over the variables that vary (per-rank amounts such as
    ``size/p`` only without P and the size themselves, whose logs they are the difference
    of): the naive power law, a straight line in log-log space."""
    varying = [v for v in variables if np.ptp(variable_values(v, values)) > 0]
    plain = [v for v in varying if not derived(v)] or varying[:1]
    return Hypothesis("loglinear", tuple((Term(v, "ln"),) for v in plain))


def linear_law(variables: tuple[str, ...]) -> Hypothesis:
    """c + a*x in the first variable to try when it is an amount of work (a size, or the work
    per rank ``size/p``), c + a/P when it is P: the analytic model's law (apmt.baselines)."""
    first = variables[0]
    return Hypothesis("linear", ((Term(first, "power", -1.0 if first == "p" else 1.0),),))


# ------------------------------------------------------------------------------------- fitting

def designs(hypotheses: list[Hypothesis], values: dict[str, np.ndarray]) -> np.ndarray:
    """Design matrices of hypotheses with equal coefficient counts, each term computed once."""
    cache: dict[Term, np.ndarray] = {}

    def column(basis: tuple[Term, ...]) -> np.ndarray:
        result = None
        for term in basis:
            if term not in cache:
                cache[term] = term.evaluate(values)
            result = cache[term] if result is None else result * cache[term]
        return result

    n = len(next(iter(values.values())))
    ones = np.ones(n)
    return np.array([[ones, *(column(b) for b in h.bases)] for h in hypotheses]).transpose(0, 2, 1)


@dataclass(frozen=True)
class Fold:
    """One cross-validation fold: fit without ``deleted``, score the error at ``scored``
    (``kept``: which of the deleted rows are scored)."""

    deleted: np.ndarray
    scored: np.ndarray
    weight: float
    label: str = ""     # "leave P" or "forward P": the same fold in every series of a table
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


def folds_for(primary_values: np.ndarray) -> list[Fold]:
    """Leave-one-out folds over the primary variable's values, and forward folds.

    Leaving one value out (all its points) tests the shape; the last value counts double, as
    users extrapolate. A forward fold fits the smaller values only and predicts the next one,
    from the third value on: the same question as the user's, one step back.
    """
    levels = np.unique(primary_values)
    at = [np.flatnonzero(primary_values == level) for level in levels]
    folds = [(rows, rows, 2.0 if i == len(at) - 1 else 1.0, f"leave {levels[i]:g}")
             for i, rows in enumerate(at)]
    folds += [(np.flatnonzero(primary_values >= levels[i]), at[i], FORWARD_WEIGHT,
               f"forward {levels[i]:g}") for i in range(2, len(at))]
    return [Fold(deleted, scored, weight, label, np.isin(deleted, scored))
            for deleted, scored, weight, label in folds]


@dataclass
class _Batch:
    """Least-squares results of one series' hypotheses sharing one form and coefficient
    count."""

    hypotheses: list[Hypothesis]
    coefficients: np.ndarray      # (H, k)
    inverse_gram: np.ndarray      # (H, k, k)
    fold_errors: np.ndarray       # (H, F): mean |ln(prediction / observation)| per fold
    fold_signed: np.ndarray       # (H, F): mean ln(prediction / observation), NaN if unknown
    fitted: np.ndarray            # (H, n)
    shape_ok: np.ndarray          # (H,): positive, finite, sane exponents up to 100x
    family: _Family | None = None  # an estimated shape's family (one hypothesis per batch)
    exponents: np.ndarray | None = None  # and its exponents as estimated

    @property
    def sane(self) -> np.ndarray:
        """Plausible hypotheses: a sane shape that some fold can predict."""
        return self.shape_ok & (self.fold_errors < CAPPED_LOG_ERROR).any(axis=1)


def _held_out_residuals(weighted: np.ndarray, inverse_gram: np.ndarray,
                        residual: np.ndarray, fold: Fold) -> np.ndarray:
    """Residuals at the scored points of a fit without the deleted points, in closed form.

    For least squares, deleting rows D changes their residuals to (I - H_DD)^-1 r_D, with H
    the hat matrix; a singular I - H_DD means the rest cannot determine the fit: NaN.
    """
    block = weighted[:, fold.deleted, :]                                    # (B, d, k)
    if len(fold.deleted) == 1:
        leverage = np.einsum("hik,hkl,hil->hi", block, inverse_gram, block)[:, 0]
        singular = leverage > 1.0 - 1e-9
        result = residual[:, fold.deleted[0]] / np.where(singular, 1.0, 1.0 - leverage)
        return np.where(singular, np.nan, result)[:, None]
    hat = np.einsum("hik,hkl,hjl->hij", block, inverse_gram, block)        # (B, d, d)
    system = np.eye(len(fold.deleted))[None] - hat
    singular = np.abs(np.linalg.det(system)) < 1e-9
    system[singular] = np.eye(len(fold.deleted))
    solved = np.linalg.solve(system, residual[:, fold.deleted, None])[..., 0]
    solved[singular] = np.nan
    return solved[:, fold.kept]


def _fit_group(hypotheses: list[list[Hypothesis]], design: np.ndarray, extended: np.ndarray,
               y: np.ndarray, folds: list[Fold], exponent_limit: float = MAX_LOG_EXPONENT
               ) -> list[_Batch]:
    """Fit hypotheses of one form and size to S series at once: ``hypotheses[s]`` are series
    s's (the same list for all, or one estimated shape each), ``design`` (S or 1, H, n, k) their
    designs at the points and ``extended`` (S or 1, H, m, k) where users extrapolate, ``y``
    (S, n) the series. One batched least squares (QR of the column-scaled, 1/y-weighted
    designs) for all, and every fold's held-out errors in closed form."""
    loglinear = hypotheses[0][0].form == "loglinear"
    series, n = y.shape
    design = np.broadcast_to(design, (series, *design.shape[1:]))
    count, k = design.shape[1], design.shape[3]
    if loglinear:
        weighted = design.reshape(-1, n, k)
        target = np.broadcast_to(np.log(y)[:, None, :], (series, count, n)).reshape(-1, n)
    else:
        # relative errors: each point weighs 1/y, as timing noise is multiplicative
        weighted = (design / y[:, None, :, None]).reshape(-1, n, k)
        target = np.ones((series * count, n))
    with np.errstate(all="ignore"):
        coefficients, inverse_gram = _least_squares(weighted, target)
        residual = target - np.einsum("bnk,bk->bn", weighted, coefficients)
        held = [_held_out_residuals(weighted, inverse_gram, residual, fold) for fold in folds]
        signed = np.stack([(-h if loglinear else np.log(1.0 - h)).mean(axis=1) for h in held],
                          axis=1)
        errors = np.stack([_log_errors(h, loglinear).mean(axis=1) for h in held], axis=1)
        fitted = np.exp(np.log(y)[:, None, :] - residual.reshape(series, count, n)) \
            if loglinear else y[:, None, :] * (1.0 - residual.reshape(series, count, n))
        shape_ok = _shape_ok(np.broadcast_to(extended, (series, *extended.shape[1:]))
                             .reshape(-1, *extended.shape[2:]), coefficients, loglinear,
                             exponent_limit)
    errors = _impute_undetermined(errors)
    errors[~np.isfinite(coefficients).all(axis=1)] = CAPPED_LOG_ERROR
    signed = np.where(np.isfinite(signed), np.clip(signed, -CAPPED_LOG_ERROR, CAPPED_LOG_ERROR),
                      np.nan)
    split = [a.reshape(series, count, *a.shape[1:]) for a in
             (coefficients, inverse_gram, errors, signed, shape_ok)]
    return [_Batch(hypotheses[s] if len(hypotheses) > 1 else hypotheses[0],
                   *(a[s] for a in split[:4]), fitted[s], split[4][s])
            for s in range(series)]


def _shape_ok(extended: np.ndarray, coefficients: np.ndarray, loglinear: bool,
              exponent_limit: float) -> np.ndarray:
    """Hypotheses that stay positive and finite, with exponents of a power law within
    ``exponent_limit``, up to 100x the training range (``extended``: (B, m, k) designs
    there)."""
    linear = np.einsum("bmk,bk->bm", extended, coefficients)
    ok = np.isfinite(linear).all(axis=1)
    if loglinear:
        return ok & (np.abs(coefficients[:, 1:]) <= exponent_limit).all(axis=1)
    return ok & (linear > 0).all(axis=1)


def _least_squares(weighted: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched least squares by QR of the column-scaled designs, not the normal equations
    (which square the condition number: p^2 log^2 p beside a constant spans 10 decades).
    Returns the coefficients and (X'X)^-1, both in the unscaled columns; a design whose columns
    are dependent gets NaN coefficients (no fit), not a pseudo-inverse's arbitrary one."""
    scale = np.linalg.norm(weighted, axis=1)                                  # (B, k)
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    q, r = np.linalg.qr(np.nan_to_num(weighted / scale[:, None, :]))
    diagonal = np.abs(np.diagonal(r, axis1=1, axis2=2))
    dependent = (diagonal < 1e-10 * np.maximum(diagonal.max(axis=1, keepdims=True), TINY)).any(
        axis=1) | ~np.isfinite(weighted).all(axis=(1, 2))
    identity = np.eye(r.shape[-1])
    r_inverse = np.linalg.inv(np.where(dependent[:, None, None], identity, r))
    scaled = np.einsum("hkl,hnl,hn->hk", r_inverse, q, target)
    coefficients = scaled / scale
    inverse_gram = np.einsum("hkl,hml->hkm", r_inverse, r_inverse) / (
        scale[:, :, None] * scale[:, None, :])
    coefficients[dependent] = np.nan
    return coefficients, inverse_gram


def _log_errors(residual: np.ndarray, loglinear: bool) -> np.ndarray:
    """|ln(prediction / observation)|, capped so that one wild fold cannot dominate; NaN where
    the fold cannot determine the hypothesis."""
    if loglinear:
        log_error = np.abs(residual)
    else:
        ratio = 1.0 - residual          # prediction / observation for relative residuals
        log_error = np.where(ratio > 0, np.abs(np.log(np.abs(ratio))), np.inf)
    return np.where(np.isnan(residual), np.nan, np.minimum(log_error, CAPPED_LOG_ERROR))


def _impute_undetermined(errors: np.ndarray) -> np.ndarray:
    """A fold too small to fit a hypothesis (a forward fold with fewer P than coefficients)
    says nothing about it: it takes the hypothesis's mean error over its other folds."""
    known = ~np.isnan(errors)
    count = known.sum(axis=1, keepdims=True)
    own_mean = np.where(known, errors, 0.0).sum(axis=1, keepdims=True) / np.maximum(count, 1)
    own_mean[count == 0] = CAPPED_LOG_ERROR
    return np.where(known, errors, own_mean)


def fit_series(values: dict[str, np.ndarray], y: np.ndarray,
               variables: tuple[str, ...] | None = None, primary: str = "p",
               preferred: Callable[[Hypothesis], bool] | None = None) -> SeriesFit:
    """Fit one series given per-point means ``y`` (positive) at ``values`` (``p`` and params);
    see fit_many. Raises NoPlausibleFit when no shape of the family describes it."""
    [fit] = fit_many(values, np.asarray(y, float)[None, :], variables, primary, preferred)
    if isinstance(fit, NoPlausibleFit):
        raise fit
    return fit


def fit_many(values: dict[str, np.ndarray], y: np.ndarray,
             variables: tuple[str, ...] | None = None, primary: str = "p",
             preferred: Callable[[Hypothesis], bool] | None = None, summary: bool = False
             ) -> list[SeriesFit | NoPlausibleFit]:
    """Fit S series measured at the same points: ``y`` (S, n) holds their per-point means
    (positive) at ``values`` (``p`` and params), fitted together (the batched least squares
    and closed-form folds serve all of them) and chosen each on its own.

    ``variables`` are the independent variables to try (the primary one first, then
    parameters and per-rank amounts such as ``size/p``); by default the keys of ``values``.
    ``primary`` is the variable users extrapolate in (P, or a size when P is fixed): the
    cross-validation folds are over its values. ``preferred`` marks shapes that theory expects
    (Hockney's for communication): they win ties as the plainest would. Points must be
    distinct; repetitions are averaged by the caller.

    With fewer than ``SHAPE_LEVELS`` values of the primary variable no shape is chosen from
    the data: leaving one of three values out leaves two, through which every two-coefficient
    shape passes exactly, so cross-validation cannot tell the shapes apart, and a pick among
    a hundred of them is a guess (on LAMMPS fitted at P = 1, 2, 3 it chose growth in P^2 and
    erred by 19% at P = 4..32, where the power law erred by 1.8%). Only the two classic laws
    compete then, the power law in the series' variables (straight in log-log space) and the
    linear law in the work per rank (c + a/P, Amdahl's; bending to a floor), and the one-SE
    rule averages them where the data cannot tell them apart, as they mostly cannot: their
    mean errs less than either one guessed. A shape theory prefers still comes first.
    ``summary``: only the power law in every variable competes (with a shape theory
    prefers), whatever the values: a function that only summarises a series that others
    predict (apmt.fit_table), in all its variables. Its exponents are not bounded, as it is
    not extrapolated: what grows like size^5 is summarised as that (with the bound, LAMMPS'
    25 such series went to a search of shapes over both variables, a third of its fitting
    time).
    """
    y = np.atleast_2d(np.asarray(y, float))
    variables = variables or tuple(values)
    preferred = preferred or _nothing_preferred
    scales = tuple(float(np.max(variable_values(v, values))) for v in variables)
    loggable = log_sign_kept(values, variables, primary)
    hypotheses = candidate_hypotheses(variables, scales, loggable, y.shape[1])
    folds = folds_for(values[primary])
    levels = len(np.unique(values[primary]))
    shaped = levels >= SHAPE_LEVELS and not summary
    if not shaped:
        classic = (power_law(variables, values),) if summary else \
            (power_law(variables, values), linear_law(variables))
        hypotheses = (*classic, *(h for h in hypotheses if preferred(h)))
    limit = np.inf if summary else MAX_LOG_EXPONENT
    batches: list[list[_Batch]] = [[] for _ in y]
    for group, design, extended in _design_groups(hypotheses, values, primary):
        for found, batch in zip(batches, _fit_group([group], design[None], extended[None], y,
                                                    folds, limit), strict=True):
            found.append(batch)
    if shaped and len(variables) > 1 and primary in variables:
        same_pairs: dict[tuple[Hypothesis, ...], list[int]] = {}
        for index, best in enumerate(_best_terms(values, y, variables,
                                                 dict(zip(variables, loggable, strict=True)))):
            pairs = tuple(pair_hypotheses(best, primary, y.shape[1]))
            same_pairs.setdefault(pairs, []).append(index)
        for pairs, rows in same_pairs.items():    # series with the same pairs, fitted at once
            for group, design, extended in _design_groups(pairs, values, primary):
                if group:
                    fitted = _fit_group([group], design[None], extended[None], y[rows], folds)
                    for index, batch in zip(rows, fitted, strict=True):
                        batches[index].append(batch)
    if shaped:
        for found, estimated in zip(batches, _estimated_batches(values, y, variables, primary,
                                                                folds), strict=True):
            found += estimated
    fits = [_chosen(found, series, values, folds, primary, preferred)
            for found, series in zip(batches, y, strict=True)]
    sections = measured_sections(values)     # the series share their points: once for all
    for fit in fits:
        if isinstance(fit, SeriesFit):
            fit.sections = sections
    if shaped and levels == SHAPE_LEVELS:
        for fit, anchors in zip(fits, _classic_fits(values, y, variables, primary, folds),
                                strict=True):
            if isinstance(fit, SeriesFit) and fit.averaged:
                fit.anchors = anchors
    return fits


def _classic_fits(values: dict[str, np.ndarray], y: np.ndarray, variables: tuple[str, ...],
                  primary: str, folds: list[Fold]) -> list[list[tuple[Hypothesis, np.ndarray]]]:
    """Per series (rows of ``y``), the two classic laws fitted to all its points: the
    anchors of a fit chosen from ``SHAPE_LEVELS`` values of the primary variable.

    A table calibrates its intervals on backtests, fits without the largest value; from
    SHAPE_LEVELS values that leaves one fewer, where only the classic laws compete, so the
    backtests measured their errors and not those of a shape chosen among a hundred. The
    interval beyond the data holds both forecasts (SeriesFit.predict). Without it, NPB MG S
    (fit P = 1..8) held 70% of the values at P = 16, 91% with it: its shapes follow a step
    that its decomposition puts into P = 8 (psinv_'s instructions 4.64M, 2.32M, 1.17M, then
    0.69M where 1/P gives 0.58M, and 0.35M at 16), which the classic laws do not.

    A law that misses one of the series' own values by more than MISFIT_NOTED forecasts
    what it cannot bend to, not the series: it is no anchor. NPB MG S's MPI_Allreduce takes
    0.16, 1.2, 14 and 138 us per call at P = 1..8; c + a/P through them misses P = 8 by 60x
    and forecast 2.4 us at P = 16 (measured: 1,140): the interval's lower end fell 400-fold.
    Without such anchors the MPI operations' intervals narrowed (median width over the NPB
    and LAMMPS sets' 136 points 127 -> 111; MG S 386,000 -> 66,000), 381 very wide intervals
    of other series by 11% (median width 69 -> 53), and every set's intervals held as many
    measured values (benchmarks/accuracy.py).
    """
    classic = (power_law(variables, values), linear_law(variables))
    found: list[list[tuple[Hypothesis, np.ndarray]]] = [[] for _ in y]
    for group, design, extended in _design_groups(classic, values, primary):
        batches = _fit_group([group], design[None], extended[None], y, folds)
        for anchors, batch, series in zip(found, batches, y, strict=True):
            follows = _log_misses(batch.fitted, series).max(axis=1) <= np.log(MISFIT_NOTED)
            anchors += [(h, c) for h, c, sane, near in zip(
                batch.hypotheses, batch.coefficients, batch.sane, follows, strict=True)
                if sane and near]
    return found


def _nothing_preferred(_: Hypothesis) -> bool:
    return False


def _chosen(batches: list[_Batch], y: np.ndarray, values: dict[str, np.ndarray],
            folds: list[Fold], primary: str, preferred: Callable[[Hypothesis], bool]
            ) -> SeriesFit | NoPlausibleFit:
    """One series' function (the one-standard-error rule), with its plausible alternatives."""
    weights = np.array([fold.weight for fold in folds])
    try:
        (b, i), *others = _rank(batches, weights, preferred)
    except NoPlausibleFit as error:
        return error
    batches[b] = _refined(batches[b], values, y, primary, folds)
    alternatives = [(batches[ob].hypotheses[oi], batches[ob].coefficients[oi])
                    for ob, oi in others[:ALTERNATIVES]]
    fit = _summarise(batches[b], i, y, values, folds, alternatives, primary)
    fit.averaged = not preferred(fit.hypothesis)
    return fit


@dataclass(frozen=True)
class _Family:
    """Shapes whose exponents are estimated (apmt.varpro): the candidates' axes (their grid is
    the product), the free terms' columns at given rows for given exponents, and the
    hypothesis they make."""

    axes: tuple[np.ndarray, ...]
    columns: varpro.Columns
    hypothesis: Callable[[np.ndarray], Hypothesis]
    bounds: list[tuple[float, float]]

    @property
    def size(self) -> int:
        """Coefficients of its hypotheses, exponents included."""
        return self.hypothesis(np.array([axis[0] for axis in self.axes])).n_coefficients


def _families(values: dict[str, np.ndarray], variables: tuple[str, ...]) -> list[_Family]:
    """d + a*x^c in the first variable to try (P, or the work per rank size/P), RAT's
    d + a*log2(P)^b*P^c, and d + a*x^c + e*w^f with each other plain variable w."""
    first = variables[0]
    x = variable_values(first, values)
    found = [_Family((varpro.EXPONENTS,),
                     lambda e, rows: (x[rows][None, :] ** e[:, :1])[..., None],
                     lambda e: Hypothesis("linear", ((Term(first, "power", e[0]),),), 1),
                     [(-3.0, 3.0)])]
    if first == "p" and np.all(x >= 1):
        found.append(_Family(
            (varpro.EXPONENTS, varpro.LOG_EXPONENTS[1:]),
            lambda e, rows: (x[rows][None, :] ** e[:, :1]
                             * np.log2(x[rows])[None, :] ** e[:, 1:2])[..., None],
            lambda e: Hypothesis("linear", ((Term("p", "power", e[0], e[1]),),), 2),
            [(-3.0, 3.0), (0.0, 3.0)]))
    for other in variables[1:]:
        if derived(other) or np.ptp(variable_values(other, values)) == 0:
            continue
        w = variable_values(other, values)
        found.append(_Family(
            (varpro.SUM_EXPONENTS, varpro.SUM_EXPONENTS),
            lambda e, rows, w=w: np.stack([x[rows][None, :] ** e[:, :1],
                                           w[rows][None, :] ** e[:, 1:2]], axis=2),
            lambda e, other=other: Hypothesis("linear", ((Term(first, "power", e[0]),),
                                                         (Term(other, "power", e[1]),)), 2),
            [(-3.0, 3.0), (-3.0, 3.0)]))
    return found


def _estimated_batches(values: dict[str, np.ndarray], y: np.ndarray,
                       variables: tuple[str, ...], primary: str,
                       folds: list[Fold]) -> list[list[_Batch]]:
    """Per series (rows of ``y``), the estimated shapes as batches of one: exponents
    estimated on all points (grid, then scipy once chosen) for the fit and its intervals, and
    again in every fold for its cross-validated error, so the freedom of the exponents is paid
    for as the others' coefficients are."""
    found: list[list[_Batch]] = [[] for _ in y]
    extended = _extended_values(values, primary)
    for family in _families(values, variables):
        if family.size >= len(np.unique(values[primary])):
            continue
        exponents = varpro.grid_estimates(family.axes, family.columns, y, np.arange(y.shape[1]))
        estimated = np.flatnonzero(np.isfinite(exponents).all(axis=1))
        if not len(estimated):
            continue
        shapes = [[family.hypothesis(np.round(exponents[s], 3))] for s in estimated]
        batches = _fit_group(shapes, np.stack([designs(h, values) for h in shapes]),
                             np.stack([designs(h, extended) for h in shapes]), y[estimated],
                             folds)
        errors = _refitted_errors(family, y[estimated], folds)
        for row, (s, batch) in enumerate(zip(estimated, batches, strict=True)):
            batch.fold_errors = errors[row:row + 1]
            batch.family, batch.exponents = family, exponents[s]
            found[s].append(batch)
    return found


def _refined(batch: _Batch, values: dict[str, np.ndarray], y: np.ndarray, primary: str,
             folds: list[Fold]) -> _Batch:
    """A chosen estimated shape with its exponents refined by scipy (its fold errors stay
    those of the estimates that competed)."""
    family = batch.family
    if family is None:
        return batch
    exponents = varpro.refined_estimate(batch.exponents, family.columns, y, np.arange(len(y)),
                                        family.bounds)
    shape = [family.hypothesis(np.round(exponents, 3))]
    [refined] = _fit_group([shape], designs(shape, values)[None],
                           designs(shape, _extended_values(values, primary))[None], y[None],
                           folds)
    refined.fold_errors, refined.family, refined.exponents = batch.fold_errors, family, exponents
    return refined if refined.sane[0] else batch


def _refitted_errors(family: _Family, y: np.ndarray, folds: list[Fold]) -> np.ndarray:
    """Each fold's error of an estimated shape, per series (rows of ``y``): exponents and
    coefficients from the fold's training points only; a fold whose points cannot determine
    them takes the series' mean error over the others."""
    everything = np.arange(y.shape[1])
    errors = np.full((len(y), len(folds)), np.nan)
    for f, fold in enumerate(folds):
        train = np.setdiff1d(everything, fold.deleted)
        if len(train) <= family.size:
            continue
        exponents = varpro.grid_estimates(family.axes, family.columns, y, train)
        estimated = np.flatnonzero(np.isfinite(exponents).all(axis=1))
        if not len(estimated):
            continue
        terms = family.columns(exponents[estimated], everything)           # (S', n, k - 1)
        design = np.concatenate([np.ones((*terms.shape[:2], 1)), terms], axis=2)
        part = y[estimated]
        with np.errstate(all="ignore"):
            coefficients, _ = _least_squares(design[:, train] / part[:, train, None],
                                             np.ones((len(estimated), len(train))))
            predicted = np.einsum("snk,sk->sn", design[:, fold.scored], coefficients)
            ratio = predicted / part[:, fold.scored]
            error = np.where(ratio > 0, np.abs(np.log(np.abs(ratio))), CAPPED_LOG_ERROR)
        errors[estimated, f] = np.mean(np.minimum(np.nan_to_num(error, nan=CAPPED_LOG_ERROR),
                                                  CAPPED_LOG_ERROR), axis=1)
    return _impute_undetermined(errors)


def _best_terms(values: dict[str, np.ndarray], y: np.ndarray, variables: tuple[str, ...],
                loggable: dict[str, bool]) -> list[dict[str, list[Term]]]:
    """Per series (rows of ``y``, fitted at once) and plain variable, the power terms that
    describe it best where the others are fixed (log factors only where ``loggable``, as for
    the candidates of one variable).

    As Extra-P's multi-parameter modeler does, each variable is modelled on the slices of
    the data in which every other variable is constant, and its terms are ranked by their
    cross-validated error summed over the slices; when the variables move together (a
    message size that grows with P) there are no such slices and all points are used.
    """
    plain = [v for v in variables if not derived(v)]
    best: list[dict[str, list[Term]]] = [{} for _ in y]
    for variable in plain:
        others = [v for v in plain if v != variable]
        keys = np.unique(np.column_stack([values[v] for v in others]), axis=0,
                         return_inverse=True)[1]
        terms = _power_terms(variable, loggable[variable])
        hypotheses = [Hypothesis("linear", ((term,),)) for term in terms]
        total = np.zeros((len(y), len(hypotheses)))
        slices = [np.flatnonzero(keys.ravel() == key) for key in np.unique(keys)]
        slices = [rows for rows in slices if len(np.unique(values[variable][rows])) >= 3]
        for rows in slices or [np.arange(y.shape[1])]:   # no slices: they move together
            part = {k: v[rows] for k, v in values.items()}
            folds = folds_for(part[variable])
            design = designs(hypotheses, part)[None]
            weights = np.array([fold.weight for fold in folds])
            fitted = _fit_group([hypotheses], design, design, y[:, rows], folds)
            total += np.stack([batch.fold_errors @ weights / weights.sum() for batch in fitted])
        for found, errors in zip(best, total, strict=True):
            order = np.argsort(errors, kind="stable")[:PAIR_TERMS]
            ranked = [hypotheses[i].bases[0][0] for i in order]
            simple = [t for t in terms if t.complexity <= 1 and t not in ranked]
            found[variable] = ranked + simple    # the plain shapes always compete (Hockney's)
    return best


def _rank(batches: list[_Batch], weights: np.ndarray,
          preferred: Callable[[Hypothesis], bool]) -> list[tuple[int, int]]:
    """The plausible hypotheses, chosen first: the one-standard-error rule of cross-validation.

    Among hypotheses whose cross-validated error is within one standard error (of the
    paired, per-fold difference) of the lowest, the one with the fewest coefficients and the
    plainest shape wins; a model that turns negative or explodes where users will
    extrapolate is never plausible.
    """
    fold_errors, where = [], []
    for b, batch in enumerate(batches):
        sane = np.flatnonzero(batch.sane)
        fold_errors.append(batch.fold_errors[sane])
        where += [(b, i) for i in sane]
    if not where:
        raise NoPlausibleFit("every shape of the family turns negative or explodes within "
                             "100x the measured range")
    errors = np.concatenate(fold_errors)
    score, within = within_one_se(errors, weights)

    def plainness(j: int) -> tuple:
        hypothesis = batches[where[j][0]].hypotheses[where[j][1]]
        return (not preferred(hypothesis), hypothesis.n_coefficients, hypothesis.complexity,
                score[j])

    return [where[j] for j in sorted(np.flatnonzero(within), key=plainness)]


def within_one_se(errors: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each hypothesis's weighted cross-validated error (rows of ``errors``: per fold) and
    whether it lies within one standard error of the paired, per-fold difference from the
    lowest: the window in which the plainest shape wins."""
    share = weights / weights.sum()
    score = errors @ share
    best = int(np.argmin(score))
    difference = errors - errors[best] - (score - score[best])[:, None]
    paired_se = np.sqrt(difference**2 @ share / len(weights))
    return score, score <= score[best] + ONE_SE * paired_se + 1e-9


_DESIGN_CACHE: dict[tuple, list] = {}


def _design_groups(hypotheses: tuple[Hypothesis, ...], values: dict[str, np.ndarray],
                   primary: str) -> list[tuple[list[Hypothesis], np.ndarray, np.ndarray]]:
    """Hypotheses grouped by form and size, with their designs at the points and where users
    extrapolate (the primary variable up to 100x). Series measured at the same points (all
    call paths of one experiment) share them, so they are computed once. The key holds every
    hypothesis: the pairs depend on each series' values, and two pair sets can share their
    last member and size."""
    key = (hypotheses, primary, *((k, v.tobytes()) for k, v in values.items()))
    if key not in _DESIGN_CACHE:
        if len(_DESIGN_CACHE) > 64:
            _DESIGN_CACHE.clear()
        extended = _extended_values(values, primary)
        groups: dict[tuple[str, int], list[Hypothesis]] = {}
        for hypothesis in hypotheses:
            groups.setdefault((hypothesis.form, hypothesis.n_coefficients), []).append(hypothesis)
        _DESIGN_CACHE[key] = [(group, designs(group, values), designs(group, extended))
                              for group in groups.values()]
    return _DESIGN_CACHE[key]


def _extended_values(values: dict[str, np.ndarray], primary: str) -> dict[str, np.ndarray]:
    """The points with the primary variable at 1x to 100x: where users extrapolate, and where
    a shape must stay positive and finite to be plausible. A variable that moves with the
    primary one (a single value at each of its values, as an MPI operation's bytes per rank
    over P in a strong-scaling study) moves on along its power law in it (_along); the others
    stay where they were measured. Held still, the bytes let a shape pass the check that
    goes negative where they fall with P: the ParRes transpose's MPI_Irecv, fitted at P <= 8
    as 0.24 - 0.46 p^-2 log2(p)^2 - 0.065 s^-1/2, came out at 2e-308 s at P = 16."""
    x = values[primary]
    exponents = {k: 1.0 if k == primary else _along(x, v) for k, v in values.items()}
    return {k: np.concatenate([v * factor ** exponents[k] for factor in EXTRAPOLATION_FACTORS])
            for k, v in values.items()}


def _along(x: np.ndarray, v: np.ndarray) -> float:
    """b of v ~ x^b, the power law of a positive variable v that takes one value at each value
    of x (least squares in logs); 0 where v does not move with x so, or not at all."""
    levels, where = np.unique(x, return_inverse=True)
    if len(levels) < 2 or np.ptp(v) == 0 or np.any(v <= 0) or np.any(levels <= 0) or \
            any(np.ptp(v[where == i]) > 0 for i in range(len(levels))):
        return 0.0
    return float(np.polyfit(np.log(x), np.log(v), 1)[0])


def _log_misses(fitted: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|ln(fitted / measured)| at each point (of one fit, or of several: rows), finite."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.minimum(np.abs(np.log(np.maximum(fitted, TINY) / y)), FLOAT_LOG_LIMIT)


def _summarise(batch: _Batch, index: int, y: np.ndarray, values: dict[str, np.ndarray],
               folds: list[Fold], alternatives: list, primary: str) -> SeriesFit:
    """The chosen fit with its quality: R^2, adjusted R^2, cross-validated error, and sigma.

    The interval's degrees of freedom are those of the runs, not of the points: points at one
    P share that run's noise, so at most (distinct values of the primary variable - 1).
    """
    hypothesis = batch.hypotheses[index]
    weights = np.array([fold.weight for fold in folds])
    k, n = hypothesis.n_coefficients, len(y)
    errors = batch.fold_errors[index]
    fitted = batch.fitted[index]
    total = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum((y - fitted) ** 2) / total if total > 0 else 1.0
    adj_r2 = 1.0 - (1.0 - r2) * (n - 1) / (n - k) if n > k else float("nan")
    sigma = float(np.sqrt(np.sum(weights * errors**2) / weights.sum()))
    domain = {v: (float(np.min(values[v])), float(np.max(values[v]))) for v in values}
    dof = max(1, min(n - k, len(np.unique(values[primary])) - 1))
    misses = _log_misses(fitted, y)
    worst = int(np.argmax(misses))
    return SeriesFit(
        hypothesis=hypothesis, coefficients=batch.coefficients[index],
        inverse_gram=batch.inverse_gram[index], sigma=sigma, dof=dof, r2=float(r2),
        adj_r2=float(adj_r2), loo_error=float(np.expm1(errors @ weights / weights.sum())),
        n_points=n, domain=domain, alternatives=alternatives,
        misfit=float(np.exp(misses[worst])),
        misfit_at={v: float(values[v][worst]) for v in values if domain[v][0] < domain[v][1]},
        fold_bias={fold.label: float(value) for fold, value in
                   zip(folds, batch.fold_signed[index], strict=True) if np.isfinite(value)},
    )
