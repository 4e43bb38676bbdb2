"""Communication models per MPI operation (paper 000, 3.3; Hockney).

Per operation (and MPI library, when a table mixes several) and run, the communication table
is reduced to per-rank means: calls, bytes and time. Then
- point-to-point: time = a * s_tot + b, with s_tot the bytes per rank (Hockney over the total
  volume); waits and tests move no bytes of their own and are fitted over P alone;
- collectives: time per call = a * log P + b * s + c, with s the bytes per call.
The P term is the Hockney log P unless cross-validation shows that another shape of the fit
family predicts the left-out runs better (real collectives switch algorithms with P). The
volume terms need the volume at the target, so calls and bytes are fitted over P and the
parameters too; a user-given ratio scales the volume for larger problem sizes (000, 4.2).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from apmt.fit import Hypothesis, SeriesFit, fit_series
from apmt.series import check_series, per_run

P2P = re.compile(r"(Send|Recv|Sendrecv|Isend|Irecv|Issend|Ibsend|Irsend|Bsend|Rsend|Ssend|"
                 r"Put|Get|Accumulate)(_replace|_init)?$", re.IGNORECASE)
NO_VOLUME = re.compile(r"(Wait|Test|Probe|Iprobe|Barrier|Win_|Comm_|Init|Finalize)",
                       re.IGNORECASE)
MPI_PREFIX = re.compile(r"^p?mpi_", re.IGNORECASE)
COMM_KEYS = ("op", "library")


def kind_of(op: str) -> str:
    """``p2p`` for point-to-point transfers and their completions, else ``collective``.

    C, PMPI and Fortran spellings alike: Fortran symbols are lower case and may end in
    underscores (``mpi_send_``, ``pmpi_wait__``), which would hide the name's ending.
    """
    name = MPI_PREFIX.sub("", op).rstrip("_")
    if P2P.search(name) or re.match(r"(Wait|Test)", name, re.IGNORECASE):
        return "p2p"
    return "collective"


def comm_keys(table: pd.DataFrame) -> tuple[str, ...]:
    return tuple(k for k in COMM_KEYS if k in table.columns)


def comm_points(comm: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Per operation and point: per-rank calls, bytes and time, and the bytes per call."""
    keys = comm_keys(comm)
    reduced = [per_run(comm, params, keys, value).set_index([*keys, "p", *params, "rep"])
               for value in ("calls", "bytes", "time")]
    runs = pd.concat(reduced, axis=1).reset_index()
    grouped = runs.groupby([*keys, "p", *params], as_index=False, sort=True)
    table = grouped.agg(calls=("calls", "mean"), bytes=("bytes", "mean"), time=("time", "mean"),
                        reps=("time", "count"))
    table["size_per_call"] = table["bytes"] / table["calls"]
    return table


def fit_operation(key: tuple, rows: pd.DataFrame, params: list[str], source: str) -> dict:
    """Fit one operation: its volume over P, and its time per the Hockney model."""
    op = key[0]
    kind = kind_of(op)
    check_series(key, rows, source, "p", "time")
    base = {column: rows[column].to_numpy(float) for column in ["p", *params]}
    varying = tuple(param for param in params if rows[param].nunique() > 1)
    fits = {"calls": _fit_positive(rows, "calls", base, varying)}
    volume = "bytes" if kind == "p2p" else "size_per_call"
    has_volume = (not NO_VOLUME.search(op) and rows[volume].notna().all()
                  and (rows[volume] > 0).all())
    if has_volume:
        fits["volume"] = _fit_positive(rows, volume, base, varying)
    target = rows["time"] if kind == "p2p" else rows["time"] / rows["calls"]
    values = dict(base)
    variables = ["p", *varying]
    unit = 1.0
    if has_volume and rows[volume].nunique() > 1:
        unit = volume_unit(rows[volume].to_numpy(float))
        values["s"] = rows[volume].to_numpy(float) / unit
        variables.append("s")
    fits["time"] = fit_series(values, target.to_numpy(float), tuple(variables),
                              preferred=_hockney_shape)
    return {"op": op, "key": list(key), "kind": kind, "volume": volume if has_volume else None,
            "uses_volume": "s" in values, "volume_unit": unit, "fits": fits}


def volume_unit(volume: np.ndarray) -> float:
    """The power of ten nearest the largest volume, the unit of s in the time fit.

    In bytes (1e6 and more) s makes the least squares ill-conditioned; the round-off then
    exceeds the cross-validation's tie margin, and a shape that only follows s's trend in P
    (``p * s^-1``, which falls as the volume grows) beats Hockney's ``a*s + b``.
    """
    return float(10.0 ** np.round(np.log10(np.max(volume))))


def _hockney_shape(hypothesis: Hypothesis) -> bool:
    """Hockney's terms only: log2(P) and the volume s, each to the first power."""
    terms = [term for basis in hypothesis.bases for term in basis]
    return hypothesis.form == "linear" and bool(terms) and all(
        (t.variable == "p" and (t.exponent, t.log_exponent) == (0, 1))
        or (t.variable == "s" and (t.exponent, t.log_exponent) == (1, 0)) for t in terms)


def _fit_positive(rows: pd.DataFrame, column: str, base: dict, varying: tuple) -> SeriesFit:
    return fit_series(base, rows[column].to_numpy(float), ("p", *varying))


def predict_operation(operation: dict, values: dict[str, np.ndarray],
                      volume_ratio: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-rank time of one operation at the points, with its 90% interval.

    ``volume_ratio`` scales the bytes (for a larger problem size, as in paper 000, 4.2).
    """
    fits = operation["fits"]
    inputs = dict(values)
    if operation["uses_volume"]:
        unit = operation.get("volume_unit", 1.0)   # model files before the unit: bytes
        inputs["s"] = fits["volume"].predict(values)[0] * volume_ratio / unit
    time, low, high = fits["time"].predict(inputs)
    if operation["kind"] == "p2p":
        return time, low, high
    calls, calls_low, calls_high = fits["calls"].predict(values)
    return time * calls, low * calls_low, high * calls_high


def describe(operation: dict) -> str:
    """The fitted time model as a formula, for reports."""
    fit = operation["fits"]["time"]
    function = fit.function
    per = "" if operation["kind"] == "p2p" else "per call "
    name = "/".join(str(part) for part in operation["key"])  # with the library, if several
    uses_s = any(term.variable == "s" for basis in fit.hypothesis.bases for term in basis)
    unit = operation.get("volume_unit", 1.0)
    in_units = f" (s in units of {unit:g} bytes)" if uses_s else ""
    return f"{name} ({operation['kind']}): time {per}= {function}{in_units}"


def operation_to_dict(operation: dict) -> dict:
    return {**operation, "fits": {k: f.to_dict() for k, f in operation["fits"].items()}}


def operation_from_dict(data: dict) -> dict:
    return {**data, "fits": {k: SeriesFit.from_dict(f) for k, f in data["fits"].items()}}
