"""The model (apmt.model) at points: every series, and the application's time and its parts
assembled by Eq. 2, each with its 90% interval and how far it can be trusted (apmt.trust).

The output of ``predict`` is the ``predictions`` table documented in apmt.tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pandas as pd

from apmt import trust
from apmt.comm import Operation
from apmt.counters import LEVELS, memory_cycles
from apmt.display import seconds
from apmt.fit import Z_INTERVAL, SeriesFit
from apmt.kernels import OTHERS
from apmt.model import NO_TIME, PARTS, UNACCOUNTED, LeftOut, Model
from apmt.series import point_values
from apmt.tables import APP_KERNEL, TIME_METRIC
from apmt.trust import MAJOR_SHARE, MAX_FACTOR, UNSUPPORTED, judge, merged_domain

Bounds = tuple[np.ndarray, np.ndarray, np.ndarray]
Term = tuple[str, str, Operation | None, Bounds]


def predict(model: Model, targets: pd.DataFrame,
            volume_ratios: dict[str, float] | None = None) -> pd.DataFrame:
    """Predictions of every series and of the application at the target points, each with
    how far it can be trusted (apmt.trust); a series the model could not fit has a row too,
    without a number, saying why."""
    params = model.params
    values = point_values(targets, params)
    frames = []
    whole = whole_time(model, values)
    for entry in model.series:
        own = entry.fit.predict(values)
        bounds = within(own, whole) if part_time(entry.kernel, entry.metric,
                                                 model.app_kernel) else own
        # the rows of kernel <app> are the assembled ones; a measured <app>'s own fit is beside
        metric = f"fitted_{entry.metric}" if entry.kernel == APP_KERNEL else entry.metric
        judged = judge(entry.fit.domain, values, *bounds, used=entry.fit.variables,
                       beyond=trust.distance(entry.fit.measured_range(values), values))
        reasons = _saying_trend(judged[1], entry.fit, values, entry.metric)
        frames.append(_rows(targets, params, entry.kernel, metric, bounds,
                            (judged[0], _saying_bounded(reasons, own, bounds))))
    nan = np.full(len(values["p"]), np.nan)
    for entry in model.left_out:
        kernel, metric = _left_out_row(entry)
        frames.append(_rows(targets, params, kernel, metric, (nan, nan, nan),
                            ([UNSUPPORTED] * len(nan), [entry.not_modelled] * len(nan))))
    frames += _application_rows(model, targets, values, volume_ratios)
    frames += _memory_rows(model, targets, values)
    return pd.concat(frames, ignore_index=True)


def part_time(kernel: str, metric: str, app_kernel: str | None = APP_KERNEL) -> bool:
    """Whether a series is the time of a part of the application, which the application's
    time bounds (within): any kernel's time but the application's own (``app_kernel``, and
    the measured ``<app>``)."""
    return metric == TIME_METRIC and kernel not in (app_kernel, APP_KERNEL)


def within(part: Bounds, whole: Bounds | None) -> Bounds:
    """A part's prediction and interval ends, each no greater than the whole's (a kernel's
    or an MPI operation's time per rank against the application's time, measured as the
    runs' wall time and fitted on its own). Why: a part never exceeds its whole, so each
    quantile of it is at most the whole's same quantile (the median, the interval's ends).
    Fitted on its own, an MPI operation's time, called a few times a run on crowded cores,
    can grow without bound: ParRes Nstream's MPI_Reduce from P <= 8 had an upper end of
    2.3e5 s at P = 32, in a run of 2.5 s. ``whole``: None where the model has no measured
    application time (nothing to bound by)."""
    if whole is None:
        return part
    return tuple(np.where(np.isnan(limit), end, np.minimum(end, limit))
                 for end, limit in zip(part, whole, strict=True))


def outgrowing(model: Model, values: dict[str, np.ndarray], whole: Bounds | None = None
               ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The terms of Eq. 2 whose own forecast is more than the application's own, each as
    (source, at which points, its own forecast): within bounds them there, and one of the
    two forecasts is wrong (the part grows faster than the whole's fit allows, or the whole
    grows faster than its fit sees: the ParRes Sparse's gather, 2.40 s on its own at P = 32
    where the whole's fit said 1.80 s and 6.1 s was measured). ``whole``: whole_time at the
    points, where the caller has it."""
    whole = whole if whole is not None else whole_time(model, values)
    if whole is None:
        return []
    found = []
    for source, _, _, bounds in _parts(model, values, None, True):
        with np.errstate(invalid="ignore"):
            over = bounds[0] > whole[0]
        if over.any():
            found.append((source, over, bounds[0]))
    return found


def _saying_trend(reasons: list[str], fit: SeriesFit, values: dict[str, np.ndarray],
                  metric: str) -> list[str]:
    """The reasons, where a series' latest trend forecasts it (apmt.fit.SeriesFit.latest),
    with what its function gave: the trend won one backtest, and the interval holds both; or
    where what ``ahead_by`` says does (a time through its instruction count)."""
    taken = fit.trend_at(values)
    if not taken.any():
        return reasons
    function = fit.without_trend().predict(values)[0]
    said = seconds if metric == TIME_METRIC else (lambda value: f"{value:.3g}")
    if fit.ahead_by:
        return _added(reasons, taken, lambda i: f"forecast by {fit.ahead_by}; its own "
                      f"function: {said(function[i])})")
    return _added(reasons, taken, lambda i: "forecast by its latest trend (the power law "
                  "through its two largest measured values; its function, which predicted the "
                  f"largest of them less well: {said(function[i])})")


def _saying_bounded(reasons: list[str], own: Bounds, bounds: Bounds) -> list[str]:
    """The reasons, where the application's time bounded a row (within), with what the
    part's own fit gave: the bound replaces a number no run can reach, and hides none."""
    with np.errstate(invalid="ignore"):
        bounded = np.any([mine > end for mine, end in zip(own, bounds, strict=True)], axis=0)
    return _added(reasons, bounded, lambda i: "at most the application's time (its own fit: "
                  f"{seconds(own[0][i])}, up to {seconds(own[2][i])})")


def _added(reasons: list[str], where: np.ndarray, clause: Callable[[int], str]) -> list[str]:
    """The reasons, each at a point ``where`` is true followed by that point's clause."""
    return [f"{reason}; {clause(i)}" if where[i] else reason for i, reason in enumerate(reasons)]


def whole_time(model: Model, values: dict[str, np.ndarray]) -> Bounds | None:
    """The application's time at the points by its own fit (the runs' wall time, or the
    root region's), which bounds every part of it (within); None where it was not measured."""
    fit = model.fit_of(model.app_kernel, TIME_METRIC)
    return fit.predict(values) if fit is not None else None


def _left_out_row(entry: LeftOut) -> tuple[str, str]:
    """The kernel and metric a left-out series (or operation's time) has in the table."""
    if entry.operation is not None:
        return entry.operation, TIME_METRIC
    return entry.kernel, entry.metric


def _application_rows(model: Model, targets: pd.DataFrame, values: dict,
                      volume_ratios: dict[str, float] | None) -> list[pd.DataFrame]:
    """The application's time and its parts, judged on the measured range of the whole model
    (the time as application_trust says)."""
    domain = merged_domain(model.domains())
    beyond = trust.nearest(model.measured_ranges(values), values)
    terms = list(contributions(model, values, volume_ratios))
    parts = assemble(model, values, volume_ratios, terms)
    frames = [_rows(targets, model.params, APP_KERNEL, TIME_METRIC, parts[TIME_METRIC],
                    application_trust(model, values, volume_ratios, terms, beyond))]
    if not model.predicts_time():       # no time, no parts of it: not zeros
        nan = np.full(len(values["p"]), np.nan)
        return frames + [_rows(targets, model.params, APP_KERNEL, part, (nan, nan, nan),
                               ([UNSUPPORTED] * len(nan), [NO_TIME] * len(nan)))
                         for part in PARTS]
    used = model.variables()
    return frames + [_rows(targets, model.params, APP_KERNEL, part, parts[part],
                           judge(domain, values, *parts[part], used=used, beyond=beyond))
                     for part in PARTS]


def application_trust(model: Model, values: dict[str, np.ndarray],
                      volume_ratios: dict[str, float] | None = None,
                      terms: list[Term] | None = None,
                      beyond: tuple[np.ndarray, list[str]] | None = None
                      ) -> tuple[list[str], list[str]]:
    """How far the application time at the points can be trusted (apmt.trust), on the measured
    range of the whole model and by its own interval (which holds its parts' uncertainty);
    also unsupported where a part that carries a tenth of it or more lies beyond the range
    its own fit checked (MAX_FACTOR of its own measured range: an MPI call measured at fewer
    P than the rest), naming the largest such part. ``terms`` as for assemble; ``beyond``:
    apmt.trust.nearest of the model's measured ranges at the points, where known."""
    terms = terms if terms is not None else list(contributions(model, values, volume_ratios))
    time = assemble(model, values, volume_ratios, terms)[TIME_METRIC]
    beyond = beyond if beyond is not None else \
        trust.nearest(model.measured_ranges(values), values)
    levels, reasons = judge(merged_domain(model.domains()), values, *time,
                            used=model.variables(), beyond=beyond)
    if not model.predicts_time():
        return levels, [NO_TIME] * len(reasons)
    total = time[0]
    largest = np.zeros(len(total))     # the largest unsupported part named so far
    far = beyond[0] > MAX_FACTOR
    for source, _, operation, bounds in terms:
        factor, (_, part_reasons) = _judge_part(model, source, operation, values, bounds)
        for i in np.flatnonzero((factor > MAX_FACTOR) & ~far):
            if bounds[0][i] >= max(MAJOR_SHARE * total[i], largest[i]):
                levels[i], largest[i] = UNSUPPORTED, bounds[0][i]
                reasons[i] = (f"{bounds[0][i] / total[i]:.0%} of it is {source}, whose "
                              f"prediction is unsupported: {part_reasons[i]}")
    return levels, reasons


def _judge_part(model: Model, source: str, operation: Operation | None,
                values: dict[str, np.ndarray], bounds: Bounds
                ) -> tuple[np.ndarray, tuple[list[str], list[str]]]:
    """How far beyond its measured range (apmt.trust.distance) each point lies for one term
    of Eq. 2 (a kernel's fit, or an MPI operation's), and the term's trust there."""
    fit = operation.fits["time"] if operation is not None else \
        model.fit_of(source, model.kernel_metric(source))
    domain, ranges = (fit.domain, fit.measured_range(values)) if fit is not None else ({}, {})
    beyond = trust.distance(ranges, values)
    return beyond[0], judge(domain, values, *bounds, beyond=beyond)


def _memory_rows(model: Model, targets: pd.DataFrame, values: dict) -> list[pd.DataFrame]:
    """Per counter-mode kernel: T_mem (Eq. 3) and, where a path gave it, BF_mem, the share
    of it not overlapped."""
    if model.mode != "counters":
        return []
    frames = []
    nan = np.full(len(values["p"]), np.nan)
    for kernel, entry in model.cpi.items():
        if model.kernel_metric(kernel) == TIME_METRIC:
            continue
        total = memory_time(model, kernel, values)
        if total is None:
            continue
        stalls = model.fit_of(kernel, "stall_cycles")
        judged = _judge_part(model, kernel, None, values, (total, nan, nan))[1]
        frames.append(_rows(targets, model.params, kernel, "mem_total_time", (total, nan, nan),
                            judged))
        if entry.bf_mem is not None or stalls is not None:
            blocking = np.full(len(values["p"]), float(entry.bf_mem)) \
                if entry.bf_mem is not None else \
                stalls.predict(values)[0] / model.machine.hertz / total
            frames.append(_rows(targets, model.params, kernel, "bf_mem", (blocking, nan, nan),
                                judged))
    return frames


def _rows(targets: pd.DataFrame, params: list[str], kernel: str, metric: str,
          bounds: tuple[np.ndarray, ...], judged: tuple[list[str], list[str]]) -> pd.DataFrame:
    frame = targets[["p", *params]].reset_index(drop=True).copy()
    frame.insert(0, "metric", metric)
    frame.insert(0, "kernel", kernel)
    predicted, lower, upper = bounds
    return frame.assign(predicted=predicted, lower=lower, upper=upper, trust=judged[0],
                        trust_reason=judged[1])


def assemble(model: Model, values: dict[str, np.ndarray],
             volume_ratios: dict[str, float] | None = None,
             terms: list[Term] | None = None) -> dict[str, Bounds]:
    """T_app and its parts at the points; each as (predicted, lower, upper).

    The terms' errors are correlated (their series come from the same runs, and what
    surprises one beyond the measured range often surprises all): the distances from a
    prediction to its interval's ends add as those of correlated errors, with the model's
    pooled correlation (in quadrature when it is 0, linearly when 1). The application's time
    is the sum of the parts; the fit of the application kernel when one is named, or when no
    kernel's time is modelled (a table of counters per function beside the measured wall
    time); else (no time at all) not a number. ``terms``: contributions() at these points,
    when the caller has them already.

    Each part's interval holds the scatter of its own runs (apmt.fit.SeriesFit.scatter);
    the sum's holds the measured application time's instead, where it is measured: from run
    to run a rank's waiting moves between MPI calls and its computation, and the parts'
    scatters cancel in the whole (LAMMPS at P = 1..4: MPI_Send's runs differ by a factor of
    2.9, the application's by 1.1; summed as the parts', the interval at P = 8 spanned a
    factor of 10.2, with the application's 7.2).
    """
    parts = {part: _Sum(len(values["p"]), model.rho) for part in PARTS}
    terms = list(terms if terms is not None else contributions(model, values, volume_ratios))
    for _, part, _, bounds in terms:
        parts[part].add(bounds)
    app_fit = model.fit_of(model.app_kernel, TIME_METRIC)
    computing = model.computes()
    if app_fit is not None and (model.app_kernel != APP_KERNEL or not computing):
        app = app_fit.predict(values)
    elif not computing:     # no time per kernel (a counters-only table): no application time
        app = tuple(np.full(len(values["p"]), np.nan) for _ in range(3))
    elif _reconciles(model):   # the reconciled terms' sum, between the two forecasts' ends
        center = np.sum([bounds[0] for *_, bounds in terms], axis=0)
        raw = _total(model, values, volume_ratios, None, app_fit, eq2_terms)
        app = _log_mean_ends(center, raw, app_fit.predict(values))
    else:
        app = _total(model, values, volume_ratios, terms, app_fit, contributions)
    return {TIME_METRIC: app, **{name: part.bounds() for name, part in parts.items()}}


def _log_mean_ends(center: np.ndarray, summed: Bounds, whole: Bounds) -> Bounds:
    """The interval of the reconciled time: the geometric means of the two forecasts' ends,
    Eq. 2's sum's and the whole's fit's, as for the mean of two logs whose errors move
    together (independent ones would narrow it). Held out on the 33 points of
    _reconciled, it held 97% of the measured times at a median width of 5.8; the
    reconciled terms' sum, 94% at 9.7; the whole's fit alone, 76% at 2.5."""
    with np.errstate(invalid="ignore", over="ignore"):
        lower = np.sqrt(np.maximum(summed[1], 0.0) * np.maximum(whole[1], 0.0))
        upper = np.sqrt(summed[2] * whole[2])
    known = np.isfinite(lower) & np.isfinite(upper) & (lower <= center) & (center <= upper)
    return center, np.where(known, lower, summed[1]), np.where(known, upper, summed[2])


def _total(model: Model, values: dict[str, np.ndarray], volume_ratios: dict[str, float] | None,
           terms: list[Term] | None, app_fit: SeriesFit | None,
           terms_of: Callable[..., Iterable[Term]]) -> Bounds:
    """The sum of the terms: with the measured application time's scatter where it has one,
    its parts' intervals without their own (see assemble). ``terms_of`` gives the terms
    (contributions, or eq2_terms for the sum before reconciling); ``terms``: its terms at the
    points with their own scatter, where the caller has them."""
    total = _Sum(len(values["p"]), model.rho)
    scatter = app_fit.scatter if app_fit is not None else 0.0
    if scatter > 0 or terms is None:
        terms = list(terms_of(model, values, volume_ratios, measured=scatter <= 0))
    for _, _, _, bounds in terms:
        total.add(bounds)
    return _with_spread(total.bounds(), scatter) if scatter > 0 else total.bounds()


def predicted_parts(model: Model, values: dict[str, np.ndarray]) -> dict[str, Bounds]:
    """The application time and its parts as apmt.model.measured_parts measures them, each
    as (predicted, lower, upper): computation_time is every computing kernel's term (memory
    included), others_time the time outside kernels and MPI (not a number when the model
    has no term for it)."""
    terms = list(contributions(model, values))
    computing, outside = _Sum(len(values["p"]), model.rho), _Sum(len(values["p"]), model.rho)
    for source, part, _, bounds in terms:
        if part != "comm_time":
            (outside if source == UNACCOUNTED else computing).add(bounds)
    unmodelled = tuple(np.full(len(values["p"]), np.nan) for _ in range(3))
    assembled = assemble(model, values, terms=terms)
    return {"time": assembled[TIME_METRIC], "computation_time": computing.bounds(),
            "comm_time": assembled["comm_time"],
            "others_time": outside.bounds() if model.fit_of(UNACCOUNTED, TIME_METRIC)
            is not None else unmodelled}


def contributions(model: Model, values: dict[str, np.ndarray],
                  volume_ratios: dict[str, float] | None = None,
                  measured: bool = True) -> list[Term]:
    """Every term of Eq. 2 at the points, as (source, part, operation, bounds): the source is
    a kernel or an MPI operation's name, the part one of PARTS, the operation the
    communication model's (None for a kernel), the bounds (predicted, lower, upper), holding
    the scatter of the series' runs where ``measured``; reconciled with the measured
    application time's own fit where the model has one (_reconciled). assemble sums them
    per part; the diagnosis shows them one by one."""
    terms = list(eq2_terms(model, values, volume_ratios, measured))
    return _reconciled(model, values, terms)


def _reconciles(model: Model) -> bool:
    """Whether the model sums kernels beside a fit of the runs' measured wall time."""
    return model.app_kernel == APP_KERNEL and model.computes() and \
        model.fit_of(APP_KERNEL, TIME_METRIC) is not None


def _reconciled(model: Model, values: dict[str, np.ndarray], terms: list[Term]
                ) -> list[Term]:
    """The terms changed so that they sum to the geometric mean of their sum and the measured
    application time's own fit, where the model sums kernels and has that fit (the
    workflow's ``<app>``, each run's wall time): where the terms sum to more, each is
    scaled down alike (the parts keep their shares); where to less, the time the whole
    shows beyond its parts is one more <unaccounted> term (waits no part measured, as in a
    model without MPI traces), and no kernel's time grows for it.

    Two forecasts of one time from the same runs: Eq. 2's sum carries what each part does
    at scale, the whole's fit how the time the runs took grows; each fails where the other
    holds. A part whose shape explodes beyond the data (MPI times measured on crowded
    cores) takes the sum with it; the whole's single curve cannot see a part that starts to
    dominate. Held out at P = 16 and 32 from P <= 8 or 9 (33 points: NPB's 21 classes,
    LAMMPS' three inputs, HPCCG, miniFE, CloverLeaf; benchmarks/accuracy.py), the sum erred by
    27.0% (median; p90 105%, worst 429%), the whole's fit by 27.1% (p90 49%), their geometric
    mean by 20.9% (p90 48%, worst 80%). The weights are equal, not estimated: one-step
    backtests chose the worse of the two on 12 of the 29 points where they could choose."""
    if not _reconciles(model) or not terms:
        return terms
    app_fit = model.fit_of(model.app_kernel, TIME_METRIC)
    total = np.sum([term[3][0] for term in terms], axis=0)
    whole = app_fit.predict(values)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        target = np.sqrt(total * whole[0])
        known = np.isfinite(target) & (target > 0) & (total > 0)
        factor = np.where(known & (target < total), target / total, 1.0)
        gap = np.where(known & (target > total), target - total, 0.0)
        relative = [np.nan_to_num(end / whole[0], nan=1.0) for end in whole]
    changed = [(source, part, operation, tuple(b * factor for b in bounds))
               for source, part, operation, bounds in terms]
    if np.any(gap > 0):
        changed.append((UNACCOUNTED, "others_time", None, tuple(gap * r for r in relative)))
    return changed


def eq2_terms(model: Model, values: dict[str, np.ndarray],
              volume_ratios: dict[str, float] | None = None,
              measured: bool = True) -> Iterator[Term]:
    """Eq. 2's terms as the parts' fits give them (contributions, before reconciling), each
    no greater than the application's own fit says the whole is (within)."""
    whole = whole_time(model, values)
    for source, part, operation, bounds in _parts(model, values, volume_ratios, measured):
        yield source, part, operation, within(bounds, whole)


def _parts(model: Model, values: dict[str, np.ndarray],
           volume_ratios: dict[str, float] | None, measured: bool) -> Iterator[Term]:
    """Eq. 2's terms as the parts' own fits give them."""
    for entry, kind in model.summed_series():
        kernel = entry.kernel
        if kind == "communication":     # the MPI library's own code: its time, or in counter
            for bounds in _kernel_time(model, kernel, values, measured).values():   # mode
                yield kernel, "comm_time", None, bounds     # its instructions at its CPI
        elif kernel in (OTHERS, UNACCOUNTED):
            yield kernel, "others_time", None, entry.fit.predict(values, measured)
        else:
            for part, bounds in _kernel_time(model, kernel, values, measured).items():
                yield kernel, part, None, bounds
    for operation in model.communication:
        bounds = operation.predict(values, _ratio(volume_ratios or {}, operation), measured)
        yield (operation.name, "comm_time", operation,
               tuple(b * model.bf_comm for b in bounds))


def _ratio(ratios: dict[str, float], operation: Operation) -> float:
    """The volume ratio of an operation: its own, its pattern's (p2p, collective), or all's."""
    for pattern in (operation.op, operation.kind, "all"):
        if pattern in ratios:
            return ratios[pattern]
    return 1.0


class _Sum:
    """A sum of predictions whose errors have a common correlation rho: each side's distance
    to the interval's end is sqrt((1 - rho) * sum w^2 + rho * (sum w)^2). A sum of times
    is not negative: a distance below longer than the sum ends the interval at 0 (NPB BT
    S's application time at P = 16 had -0.058 s)."""

    def __init__(self, n: int, rho: float = 0.0) -> None:
        self.rho = rho
        self.value = np.zeros(n)
        self.linear = {side: np.zeros(n) for side in ("below", "above")}
        self.squares = {side: np.zeros(n) for side in ("below", "above")}

    def add(self, bounds: tuple[np.ndarray, ...]) -> None:
        predicted, lower, upper = bounds
        self.value = self.value + predicted
        with np.errstate(over="ignore", invalid="ignore"):   # inf parts: no finite sum
            for side, distance in (("below", predicted - lower), ("above", upper - predicted)):
                self.linear[side] = self.linear[side] + distance
                self.squares[side] = self.squares[side] + distance**2

    def _distance(self, side: str) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):   # a part's interval beyond floats
            return np.sqrt((1.0 - self.rho) * self.squares[side]
                           + self.rho * self.linear[side] ** 2)

    def bounds(self) -> Bounds:
        with np.errstate(invalid="ignore"):         # an infinite sum has no finite ends
            return (self.value, np.maximum(self.value - self._distance("below"), 0.0),
                    self.value + self._distance("above"))


def _kernel_time(model: Model, kernel: str, values: dict, measured: bool = True
                 ) -> dict[str, Bounds]:
    """Computation and non-overlapped memory time of one kernel at the points. In counter
    mode the computation's interval holds the instructions' and the CPI's spread over runs
    (they are independent: one from the fit in P, one from the runs' scatter)."""
    if model.kernel_metric(kernel) == TIME_METRIC:
        return {"comp_time": model.fit_of(kernel, TIME_METRIC).predict(values, measured)}
    frequency = model.machine.hertz
    instructions = model.fit_of(kernel, "instructions").predict(values, measured)
    entry = model.cpi[kernel]
    result = {"comp_time": _with_spread(tuple(b * entry.cpi / frequency for b in instructions),
                                        (entry.cpi_sd or 0.0) / entry.cpi)}
    total = memory_time(model, kernel, values) if entry.bf_mem is not None else None
    stalls = model.fit_of(kernel, "stall_cycles")
    if total is not None:
        # BF_mem (a lower-frequency rerun's or split across runs) * T_mem, with the
        # instructions' relative bounds
        result["mem_time"] = tuple(entry.bf_mem * total * b / instructions[0]
                                   for b in instructions)
    elif stalls is not None:
        result["mem_time"] = tuple(b / frequency for b in stalls.predict(values, measured))
    return result


def _with_spread(bounds: Bounds, relative_sd: float) -> Bounds:
    """Bounds widened by an independent relative spread (its 90% part), in quadrature."""
    predicted, lower, upper = bounds
    with np.errstate(invalid="ignore", over="ignore"):   # no finite prediction: none of it
        extra = predicted * Z_INTERVAL * relative_sd
        return (predicted, np.maximum(predicted - np.hypot(predicted - lower, extra), 0.0),
                predicted + np.hypot(upper - predicted, extra))


def memory_time(model: Model, kernel: str, values: dict) -> np.ndarray | None:
    """T_mem of Eq. 3 from the fitted hit counts of the levels the kernel's split sums (else
    those the model's counters measure, all four unless it says) and the machine's
    latencies, in seconds."""
    levels = model.cpi[kernel].levels if kernel in model.cpi and model.cpi[kernel].levels \
        is not None else tuple(model.counters.get("levels", LEVELS))
    fits = {metric: model.fit_of(kernel, metric) for metric in levels}
    if not fits or any(fit is None for fit in fits.values()):
        return None
    counts = pd.DataFrame({metric: fit.predict(values)[0] for metric, fit in fits.items()})
    return memory_cycles(counts, model.machine, tuple(levels)).to_numpy(float) / model.machine.hertz
