"""Communication models per MPI operation (paper 000, 3.3; Hockney).

Per operation (and MPI library, when a table mixes several) and run, the communication table
is reduced to per-rank means: calls, bytes and time. Then
- point-to-point: time = a * s_tot + b, with s_tot the bytes per rank (Hockney over the total
  volume), or LogGP's L + n * max(g, o + (s - 1) G) over the calls n and the bytes per call s
  (apmt.loggp) where its cross-validated error beats Hockney's by more than one standard
  error (the rule that chooses the fits' shapes, preferring the simpler Hockney); waits and
  tests move no bytes of their own and are fitted over P alone;
- collectives: time per call = a * log P + b * s + c, with s the bytes per call.
The P term is the Hockney log P unless cross-validation shows that another shape of the fit
family predicts the left-out runs better (real collectives switch algorithms with P). The
volume terms need the volume at the target, so calls and bytes are fitted over P and the
parameters too; a user-given ratio scales the volume for larger problem sizes (000, 4.2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from apmt import loggp
from apmt.fit import SHAPE_LEVELS, Hypothesis, SeriesFit, folds_for, within_one_se
from apmt.fit_table import SeriesData, TableFit, fit_table
from apmt.series import (
    MIN_DISTINCT_P,
    UnfittableSeries,
    check_series,
    log_spread,
    per_run,
    series_name,
    with_logs,
)

P2P = re.compile(r"(Send|Recv|Sendrecv|Isend|Irecv|Issend|Ibsend|Irsend|Bsend|Rsend|Ssend|"
                 r"Put|Get|Accumulate|Fetch_and_op|Compare_and_swap)(_replace|_init)?$",
                 re.IGNORECASE)
# calls that complete or start point-to-point transfers, and one-sided ones' synchronisation
# but for the window's collective MPI_Win_fence (and its creation and freeing)
P2P_COMPLETION = re.compile(r"(Wait|Test|Probe|Iprobe|Start"
                            r"|Win_(lock|unlock|flush|sync|post|start|complete|wait|test))",
                            re.IGNORECASE)
# calls that move no bytes of their own; MPI_Init by its prefix, as the persistent requests'
# names end in _init (MPI_Send_init: the tracer counts their transfers under it); MPI_Start[all]
# only where the tracer did not know the requests started
NO_VOLUME = re.compile(r"(Wait|Test|Probe|Iprobe|Start|Barrier|Win_|Comm_|(\bP?MPI_|^)Init"
                       r"|Finalize)", re.IGNORECASE)
MPI_PREFIX = re.compile(r"^p?mpi_", re.IGNORECASE)
F08_SUFFIX = re.compile(r"_f08$", re.IGNORECASE)
COMM_KEYS = ("op", "library")
ROLES = ("calls", "volume", "time")


def kind_of(op: str) -> str:
    """``p2p`` for point-to-point transfers and their completions, else ``collective``.

    C, PMPI and Fortran spellings alike: Fortran symbols are lower case and may end in
    underscores (``mpi_send_``, ``pmpi_wait__``) and, from the mpi_f08 module, in ``_f08``
    (``mpi_send_f08_``), which would hide the name's ending. Probes wait for a
    point-to-point message, as waits and tests complete one; MPI_Start[all] start persistent
    ones (the tracer counts those under their init's name, MPI_Send_init, and under
    MPI_Start[all] only requests it did not see made, MPI-4's persistent collectives). One-sided
    transfers (MPI_Put, MPI_Rget, MPI_Fetch_and_op, ...) are point-to-point, and so are the
    window synchronisations that complete them with some targets (MPI_Win_lock, _unlock,
    _flush, _post, _start, _complete, _wait, ...); MPI_Win_fence, over the window's whole
    group, is a collective, as are the neighborhood collectives.
    """
    name = F08_SUFFIX.sub("", MPI_PREFIX.sub("", op).rstrip("_"))
    if P2P.search(name) or P2P_COMPLETION.match(name):
        return "p2p"
    return "collective"


def comm_keys(table: pd.DataFrame) -> tuple[str, ...]:
    return tuple(k for k in COMM_KEYS if k in table.columns)


def comm_points(comm: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Per operation and point: per-rank calls, bytes and time, the time's spread over the
    runs (apmt.series.log_spread) and the bytes per call."""
    keys = comm_keys(comm)
    reduced = [per_run(comm, params, keys, value).set_index([*keys, "p", *params, "rep"])
               for value in ("calls", "bytes", "time")]
    runs = with_logs(pd.concat(reduced, axis=1).reset_index(), "time")
    grouped = runs.groupby([*keys, "p", *params], as_index=False, sort=True)
    table = grouped.agg(calls=("calls", "mean"), bytes=("bytes", "mean"), time=("time", "mean"),
                        reps=("time", "count"))
    table["time_spread"] = log_spread(grouped)
    table["size_per_call"] = table["bytes"] / table["calls"]
    return table


def operation_series(key: tuple, rows: pd.DataFrame, params: list[str], source: str
                     ) -> tuple[dict, dict[str, SeriesData]]:
    """One operation's description and the series its model fits: calls and the volume
    over P (and the parameters), and its time per the Hockney model (apmt.fit_table fits
    each role over all operations of a table)."""
    op = key[0]
    kind = kind_of(op)
    check_series(key, rows, source, "p", "time", params)
    base = {column: rows[column].to_numpy(float) for column in ["p", *params]}
    varying = tuple(param for param in params if rows[param].nunique() > 1)
    series = {"calls": SeriesData(base, rows["calls"].to_numpy(float), ("p", *varying))}
    volume = "bytes" if kind == "p2p" else "size_per_call"
    has_volume = (not NO_VOLUME.search(op) and rows[volume].notna().all()
                  and (rows[volume] > 0).all())
    if has_volume:
        series["volume"] = SeriesData(base, rows[volume].to_numpy(float), ("p", *varying))
    target = rows["time"] if kind == "p2p" else rows["time"] / rows["calls"]
    values = dict(base)
    variables = ["p", *varying]
    unit = 1.0
    if has_volume and rows[volume].nunique() > 1:
        unit = volume_unit(rows[volume].to_numpy(float))
        values["s"] = rows[volume].to_numpy(float) / unit
        variables.append("s")
    series["time"] = SeriesData(values, target.to_numpy(float), tuple(variables),
                                preferred=hockney_shape, spread=rows["time_spread"].to_numpy(float))
    return ({"op": op, "key": list(key), "kind": kind, "volume": volume if has_volume else None,
             "uses_volume": "s" in values, "volume_unit": unit,
             "alone": bool((rows["p"] == 1).any())}, series)


def fit_operations(comm: pd.DataFrame, params: list[str], source: str
                   ) -> tuple[list[Operation], list[tuple[str, str]], list[str]]:
    """The operations' models, those left out with why, and the notes of their tables.

    Left out are the operations that took time at fewer than 3 P (a single process does not
    communicate; a call may be too rare to time), and those whose calls, volume or times no
    shape of the family follows without turning negative or exploding where users
    extrapolate (erratic waits, e.g. on oversubscribed cores). Each role (calls, volume,
    time) is fitted as one table over the operations (apmt.fit_table: regime, calibration).
    """
    table = comm_points(comm, params)
    table = table[table["time"] > 0]
    keys = list(comm_keys(comm))
    operations, left_out = {}, []
    for key, rows in table.groupby(keys if len(keys) > 1 else keys[0], sort=True):
        key = tuple(np.atleast_1d(key))
        name = series_name(key)
        if rows["p"].nunique() < MIN_DISTINCT_P:
            left_out.append((name, f"time > 0 at fewer than {MIN_DISTINCT_P} P"))
            continue
        try:
            operations[name] = operation_series(key, rows, params, source)
        except UnfittableSeries as error:
            left_out.append((name, f"the series {error.reason}"))
    fits: dict[str, dict[str, SeriesFit]] = {name: {} for name in operations}
    notes = []
    for role in ROLES:
        fitted = fit_table({name: series[role] for name, (_, series) in operations.items()
                            if role in series})
        if role == "time":
            notes += _without_volume_where_needed(fitted, operations)
        for name, fit in fitted.fits.items():
            fits[name][role] = fit
        for name, reason in fitted.left_out.items():
            left_out.append((name, f"no plausible fit of its {role} ({reason})"))
        notes += [f"MPI operations' {role}: {note}" for note in fitted.notes]
    complete = [compete(Operation(**meta, fits=fits[name]), series)
                for name, (meta, series) in operations.items() if set(fits[name]) == set(series)]
    return complete, sorted(set(left_out)), notes + competition_notes(complete)


def _without_volume_where_needed(fitted: TableFit, operations: dict[str, tuple[dict, dict]]
                                 ) -> list[str]:
    """The time fits, where no shape over P and the bytes is plausible, over P (and the
    parameters) alone, as a wait's: the bytes follow P in a study of one problem size, and
    a shape over both must stay positive where they move on together. NPB IS W's MPI_Send
    sends 4 (P - 1) / P bytes per rank, 2 to 3.5 at P = 2..8, while its time fell from 16 to
    3 us: every shape over both turns negative where the bytes grow on. Such an operation no
    longer uses its volume (the meta's ``uses_volume``). ``fitted`` takes their fits; the
    notes returned say which, and how their own table calibrated them."""
    redo = {name: operations[name][1]["time"] for name in fitted.left_out
            if "s" in operations[name][1]["time"].variables}
    if not redo:
        return []
    alone = fit_table({name: replace(series, values={k: v for k, v in series.values.items()
                                                     if k != "s"},
                                     variables=tuple(v for v in series.variables if v != "s"))
                       for name, series in redo.items()})
    for name, fit in alone.fits.items():
        fitted.fits[name] = fit
        del fitted.left_out[name]
        operations[name][0]["uses_volume"] = False
    if not alone.fits:
        return []
    return [f"MPI operations' time: {len(alone.fits)} fitted over P alone, as no shape over P "
            f"and their bytes stays positive where both move on: "
            f"{', '.join(sorted(alone.fits))}",
            *(f"MPI operations' time over P alone: {note}" for note in alone.notes)]


def compete(operation: Operation, series: dict[str, SeriesData]) -> Operation:
    """A point-to-point operation's time by LogGP (apmt.loggp) instead of its Hockney fit
    when LogGP's cross-validated error (the same folds, on the same points: those from the
    regime's start) lies more than one paired standard error below Hockney's, the rule
    that chose the fit's shape, with Hockney as the simpler. As there, fewer than
    SHAPE_LEVELS values of P cannot tell shapes apart: LogGP does not compete then. Both
    errors are the folds' |mean ln(prediction / measured)|. The operation records the
    competition either way."""
    if operation.kind != "p2p" or "volume" not in series:
        return operation
    hockney = operation.fits["time"]
    base = series["calls"].values
    points = loggp.Points(base, series["calls"].y, series["volume"].y, series["time"].y)
    points = points.where(base["p"] >= hockney.domain["p"][0])
    if len(np.unique(points.values["p"])) < SHAPE_LEVELS:
        return operation
    result = loggp.series_fit(points, hockney)
    if result is None:
        return operation
    fit, shape = result
    folds = [fold for fold in folds_for(points.values["p"])
             if fold.label in fit.fold_bias and fold.label in hockney.fold_bias]
    if not folds:
        return operation
    errors = np.abs([[model.fold_bias[fold.label] for fold in folds] for model in (hockney, fit)])
    score, within = within_one_se(errors, np.array([fold.weight for fold in folds]))
    operation.loggp = {"shape": {"kink": shape.kink, "calls_vary": shape.calls_vary},
                       "parameters": loggp.parameters(shape, fit.coefficients),
                       "meaning": loggp.MEANING, "function": fit.function,
                       "cv_error": float(np.expm1(score[1])),
                       "hockney_cv_error": float(np.expm1(score[0])),
                       "hockney_function": hockney.function}
    if not within[0]:
        operation.time_model = "loggp"
        operation.fits["time"] = fit
    return operation


def competition_notes(operations: list[Operation]) -> list[str]:
    """One note saying which point-to-point operations took LogGP and which their fitted
    function, and whether that function is Hockney's shape (it is preferred, not imposed)."""
    competed = [operation for operation in operations if operation.loggp is not None]
    if not competed:
        return []
    described = ", ".join(
        f"{operation.name}: {operation.time_taken} ({operation.loggp['cv_error']:.1%} LogGP, "
        f"{operation.loggp['hockney_cv_error']:.1%} fitted)" for operation in competed)
    return ["MPI point-to-point time, LogGP against the fitted function, Hockney's shape where "
            "the data did not choose another (cross-validated error; LogGP taken only beyond "
            f"one standard error): {described}"]


def volume_unit(volume: np.ndarray) -> float:
    """The power of ten nearest the largest volume, the unit of s in the time fit.

    In bytes (1e6 and more) s makes the least squares ill-conditioned; the round-off then
    exceeds the cross-validation's tie margin, and a shape that only follows s's trend in P
    (``p * s^-1``, which falls as the volume grows) beats Hockney's ``a*s + b``.
    """
    return float(10.0 ** np.round(np.log10(np.max(volume))))


def hockney_shape(hypothesis: Hypothesis) -> bool:
    """Hockney's terms only: log2(P) and the volume s, each to the first power."""
    terms = [term for basis in hypothesis.bases for term in basis]
    return hypothesis.form == "linear" and bool(terms) and all(
        (t.variable == "p" and (t.exponent, t.log_exponent) == (0, 1))
        or (t.variable == "s" and (t.exponent, t.log_exponent) == (1, 0)) for t in terms)


@dataclass
class Operation:
    """One MPI operation's model (per operation and library): its kind, whether its time
    depends on the volume (bytes per rank for p2p, per call for collectives, in units of
    ``volume_unit``), and the fits of its roles (calls, volume, time)."""

    op: str
    key: list
    kind: str
    volume: str | None
    uses_volume: bool
    volume_unit: float
    fits: dict[str, SeriesFit]
    # whether a single process's run measured time in it; if not, its time at P = 1 is 0
    # (a single process has no peer), not its fits' extrapolation below their range
    alone: bool = True
    # which model the time fit is, ``hockney`` (the fit family's, Hockney's shape preferred)
    # or ``loggp`` (apmt.loggp, over the predicted calls and bytes); and LogGP's competition
    # for a point-to-point operation: its shape, parameters with their meaning, and both
    # cross-validated errors (None: it did not compete, as in files from before it)
    time_model: str = "hockney"
    loggp: dict | None = None

    @property
    def name(self) -> str:
        """The operation and, when a table mixes libraries, its library, joined by '/'."""
        return "/".join(str(part) for part in self.key)

    def predict(self, values: dict[str, np.ndarray], volume_ratio: float = 1.0,
                measured: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-rank time of the operation at the points, with its 90% interval (holding the
        scatter of the runs where ``measured``: apmt.fit.SeriesFit.predict).

        ``volume_ratio`` scales the bytes (for a larger problem size, as in paper 000, 4.2).
        At P = 1 an operation no single process's run spent time in takes none.
        """
        inputs = dict(values)
        if self.time_model == "loggp":
            calls = self.fits["calls"].predict(values)[0]
            bytes_ = self.fits["volume"].predict(values)[0] * volume_ratio
            inputs = loggp.inputs(loggp.Shape(**self.loggp["shape"]), inputs, calls, bytes_)
        elif self.uses_volume:
            inputs["s"] = self.fits["volume"].predict(values)[0] * volume_ratio / self.volume_unit
        bounds = self.fits["time"].predict(inputs, measured)
        if self.kind != "p2p":
            calls = self.fits["calls"].predict(values)
            bounds = tuple(a * b for a, b in zip(bounds, calls, strict=True))
        silent = (np.asarray(values["p"], float) == 1) & (not self.alone)
        return tuple(np.where(silent, 0.0, side) for side in bounds)

    def describe(self) -> str:
        """The fitted time model as a formula, for reports."""
        fit = self.fits["time"]
        per = "" if self.kind == "p2p" else "per call "
        uses_s = any(term.variable == "s" for basis in fit.hypothesis.bases for term in basis)
        in_units = f" (s in units of {self.volume_unit:g} bytes)" if uses_s else ""
        return f"{self.name} ({self.kind}): time {per}= {fit.function}{in_units}" + \
            self._competition()

    def _competition(self) -> str:
        """Which the time took, LogGP or its fitted function (named Hockney only where it has
        Hockney's shape), with LogGP's parameters."""
        if self.loggp is None:
            return ""
        known = {name: value for name, value in self.loggp["parameters"].items()
                 if value is not None and name != "intercept"}
        named = ", ".join(f"{name} = {value:.3g}" for name, value in known.items())
        errors = (f"cross-validated error {self.loggp['cv_error']:.1%} against the fitted "
                  f"function's {self.loggp['hockney_cv_error']:.1%}")
        if self.time_model == "loggp":
            return (f"; LogGP L + calls * max(g, o + (s - 1) G) with {named}; excess = "
                    f"max(bytes - calls * kink_bytes, 0); {errors}")
        return f"; {self.time_taken} taken over LogGP ({named}; {errors})"

    @property
    def time_taken(self) -> str:
        """What the time follows, in words: LogGP, Hockney's shape (a per-message cost plus
        the volume over a bandwidth), or another shape the data chose, for which the name
        Hockney would be wrong (20 of 29 point-to-point operations of the profiled sets at
        P <= 8, on crowded cores: LAMMPS' MPI_Send took 0.171 - 0.3813 * p^-1 * s^-1)."""
        if self.time_model == "loggp":
            return "LogGP"
        return "Hockney" if hockney_shape(self.fits["time"].hypothesis) else \
            "a fitted function that is not Hockney's shape"

    def to_dict(self) -> dict:
        return {**{name: getattr(self, name) for name in OPERATION_FIELDS}, "alone": self.alone,
                "time_model": self.time_model, "loggp": self.loggp,
                "fits": {role: fit.to_dict() for role, fit in self.fits.items()}}

    @staticmethod
    def from_dict(data: dict) -> Operation:
        return Operation(**{name: data[name] for name in OPERATION_FIELDS},
                         fits={role: SeriesFit.from_dict(fit)
                               for role, fit in data["fits"].items()},
                         alone=data.get("alone", True),
                         time_model=data.get("time_model", "hockney"), loggp=data.get("loggp"))


OPERATION_FIELDS = ("op", "key", "kind", "volume", "uses_volume", "volume_unit")
