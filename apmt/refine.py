"""Refinement of a model whose validation error exceeds the tolerance (paper 000, 3.4).

One round is a decision on the validation result (``apmt.evaluate.decide``), as data:
- communication error (or one in the time outside kernels and MPI, ``others``): profile at
  more P, where the model is least certain (the relative
  width of its 90% interval) instead of at fixed places; of the two runs the paper asks for,
  the largest candidate validates (so the next round's ``--holdout p=max`` holds it out) and
  the most uncertain of the others refits;
- computation error: rerun one P at a lower CPU frequency and solve
  ``CPI = CPI_core + BF_mem * T_mem`` per kernel (Eq. 5). Where this machine cannot change
  the frequency, the decision says so and the model keeps its first parameters;
- every round is bounded by a budget of rounds and runs, and its decision holds the numbers
  that made it.

A run here is one profiling job at one P (with the study's repetitions and parameter points),
as the paper counts "two more application profiling runs".
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from apmt.accepted import AcceptedP
from apmt.collect.cpufreq import cpu_freq_option
from apmt.counters import FREQUENCY, LEVELS, memory_cycles
from apmt.decision import Decision
from apmt.errors import ApmtError
from apmt.model import Model
from apmt.predict import predicted_parts
from apmt.series import points
from apmt.tables import TIME_METRIC

BEYOND = 4.0                 # default candidates reach this factor beyond the largest P
LOWER_FREQUENCY_STEP = 2 / 3  # the paper's 3.0 -> 2.0 GHz: memory gets 1.5x faster in cycles
BF_MEM_RANGE = (0.0, 1.5)    # a plausible non-overlapped share of memory time
PART_METRICS = {None: TIME_METRIC, "computation": "computation_time",
                "communication": "comm_time", "others": "others_time"}
TIE_DECIMALS = 4             # relative widths equal to 0.01 percentage points are ties
FREQUENCY_INPUTS = ("instructions", "cycles", "l1_hits", "l2_hits", "llc_hits", "llc_misses")


# ------------------------------------------------------------------------- choosing new P

def default_candidates(measured_p: list[float], beyond: float = BEYOND,
                       accepted: AcceptedP | None = None) -> list[int]:
    """The P the application accepts from the smallest measured P to ``beyond`` times the
    largest, without the measured ones; for an application that takes any P, powers of two
    and the midpoints between them (3 * 2^k)."""
    low, high = min(measured_p), max(measured_p) * beyond
    if accepted is not None and accepted.form != "any":
        return sorted(set(accepted.between(low, high)) - {int(p) for p in measured_p})
    found = set()
    power = 1
    while power <= high:
        found.update(v for v in (power, 3 * power // 2) if low <= v <= high and v >= 1)
        power *= 2
    return sorted(found - {int(p) for p in measured_p})


def rank_by_uncertainty(p: np.ndarray, bounds: tuple[np.ndarray, ...]) -> pd.DataFrame:
    """Candidates ranked by the relative width of the 90% interval, widest first (ties:
    the larger P first).

    Columns: p, predicted, lower, upper (seconds per rank), uncertainty ((upper - lower) /
    predicted), rank (1 = least certain).
    """
    predicted, lower, upper = (np.asarray(b, float) for b in bounds)
    table = pd.DataFrame({"p": np.asarray(p, float), "predicted": predicted, "lower": lower,
                          "upper": upper, "uncertainty": relative_width(bounds)})
    # widths equal to 4 decimals are ties (leverage round-off); the larger P wins a tie: it
    # says more about the extrapolation
    table["tied"] = table["uncertainty"].round(TIE_DECIMALS)
    table = table.sort_values(["tied", "p"], ascending=[False, False], na_position="last",
                              ignore_index=True).drop(columns="tied")
    table["rank"] = np.arange(1, len(table) + 1)
    return table


def relative_width(bounds: tuple[np.ndarray, ...]) -> np.ndarray:
    """(upper - lower) / predicted: the 90% interval's width relative to the prediction."""
    predicted, lower, upper = (np.asarray(b, float) for b in bounds)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(predicted > 0, (upper - lower) / predicted, np.nan)


def part_bounds(model: Model, values: dict[str, np.ndarray],
                part: str | None) -> tuple[tuple[np.ndarray, ...], str]:
    """The prediction and 90% interval of the part to refine (as apmt.evaluate.validate
    composes it), or of the application time when the model has nothing of that part."""
    parts = predicted_parts(model, values)
    name = PART_METRICS.get(part)
    if name is None:
        raise ApmtError(f"validation: field 'part' is {part!r}, not computation, "
                        "communication or others")
    if not np.any(np.nan_to_num(parts[name][0]) > 0):
        return parts[TIME_METRIC], f"application time (the model has no {part} term)"
    return parts[name], part or "application time"


def point_values_at(model: Model, p: list[float], params_point: Mapping[str, float]
                    ) -> dict[str, np.ndarray]:
    """Values for SeriesFit.predict: the candidate P and the other parameters held fixed."""
    missing = [name for name in model.params if name not in params_point]
    if missing:
        raise ApmtError(f"refinement: parameter {missing[0]!r} of the model has no value "
                        f"at the candidate points (given: {dict(params_point)})")
    p = np.asarray(p, float)
    return {"p": p, **{name: np.full(len(p), float(params_point[name]))
                       for name in model.params}}


def choose_p(model: Model, measured_p: list[float], candidates: list[float] | None,
             params_point: Mapping[str, float], count: int = 2, *, part: str | None = None,
             max_p: float | None = None, accepted: AcceptedP | None = None) -> list[dict]:
    """The next P to profile, chosen where the model is least certain.

    ``candidates`` are the P one may run (None or empty: ``default_candidates``); measured,
    those above ``max_p`` and those the application does not accept are dropped. With
    ``count`` >= 2 the largest candidate validates (it tests the extrapolation the user asked
    for, and ``--holdout p=max`` finds it) and the ``count - 1`` most uncertain of the others
    refit; with 1, or when no candidate lies beyond the measured P (a later round: the
    largest measured is held out and validates), the most uncertain refit.
    Each chosen run: p, role (refit | validate), uncertainty, predicted, lower, upper, rank,
    reason.
    """
    ranking, what = candidate_ranking(model, measured_p, candidates, params_point, part, max_p,
                                      accepted)
    if ranking.empty or count < 1:
        return []
    validate = []
    if count >= 2 and len(ranking) >= 2 and ranking["p"].max() > max(measured_p):
        largest = ranking.loc[ranking["p"].idxmax()]
        validate.append(_choice(largest, "validate", (
            f"the largest candidate, P={largest['p']:g}: it tests the extrapolation ({what}: "
            f"90% interval {largest['uncertainty']:.1%} of the prediction, rank "
            f"{int(largest['rank'])})")))
        ranking = ranking[ranking["p"] != largest["p"]]
    chosen = [_least_certain(row, what, measured_p, bool(validate))
              for _, row in ranking.head(count - len(validate)).iterrows()]
    return chosen + validate


def _least_certain(row: pd.Series, what: str, measured_p: list[float], validating: bool) -> dict:
    """A run where the model is least certain: it refits, unless it lies beyond every
    measured P and no other run validates; then the next round's ``--holdout p=max`` holds it
    out, and the decision says so."""
    reason = (f"the model of the {what} is least certain at P={row['p']:g} (90% interval "
              f"{row['uncertainty']:.1%} of the prediction, rank {int(row['rank'])} of the "
              "candidates)")
    if not validating and row["p"] > max(measured_p):
        return _choice(row, "validate", f"{reason}; beyond the measured P, the next round "
                                        "holds it out to validate the refitted model")
    return _choice(row, "refit", reason)


def candidate_ranking(model: Model, measured_p: list[float], candidates: list[float] | None,
                      params_point: Mapping[str, float], part: str | None = None,
                      max_p: float | None = None, accepted: AcceptedP | None = None
                      ) -> tuple[pd.DataFrame, str]:
    """Every candidate P with its prediction, interval and rank (see rank_by_uncertainty)."""
    measured = {float(p) for p in measured_p}
    accepted = accepted or AcceptedP()
    pool = candidates or default_candidates(list(measured), accepted=accepted)
    pool = sorted({float(p) for p in pool if accepted.admits(int(p))} - measured)
    if max_p is not None:
        pool = [p for p in pool if p <= max_p]
    if not pool:
        return rank_by_uncertainty(np.array([]), (np.array([]),) * 3), part or "application"
    bounds, what = part_bounds(model, point_values_at(model, pool, params_point), part)
    return rank_by_uncertainty(np.array(pool), bounds), what


def _choice(row: pd.Series, role: str, reason: str) -> dict:
    numbers = {k: float(row[k]) for k in ("uncertainty", "predicted", "lower", "upper")}
    return {"p": int(row["p"]), "role": role, **numbers, "rank": int(row["rank"]),
            "reason": reason}


# --------------------------------------------------------------------------- one round

def plan_round(validation: dict, model: Model | None, measured_p: list[float],
               round_index: int, budget: Mapping[str, int], settings: Mapping,
               frequency_control: dict, *, runs_used: int = 0) -> Decision:
    """The decision of refinement round ``round_index`` (0 = the first).
    ``model`` (of all the round's runs) places the new runs: it is needed only when the
    validation asks to refine.

    budget: max_rounds, max_runs (refinement runs over all rounds); ``runs_used`` counts the
    runs earlier rounds asked for (see runs_asked). settings (all optional; empty or null
    means the default): candidates (P list), max_p, accepts_p (the P the application
    accepts, apmt.accepted), lower_frequency_ghz, frequency_p, frequency_done (the
    round whose decision was lower_frequency: no second rerun).
    ``frequency_control`` is what frequency_control() says about the machine that will run
    the profiling job.
    """
    rounds_left = int(budget["max_rounds"]) - round_index
    runs_left = int(budget["max_runs"]) - runs_used
    decision = Decision(
        round=round_index, action="none", part=validation.get("part"),
        tolerance=validation["tolerance"], error=validation["error"],
        worst_point=validation.get("worst_point"),
        measured_p=sorted(int(p) for p in measured_p),
        budget={"max_rounds": int(budget["max_rounds"]), "max_runs": int(budget["max_runs"]),
                "rounds_used": round_index, "runs_used": runs_used})
    error = "no validation (too few P)" if validation["error"] is None else \
        f"error {validation['error']:.1%} vs tolerance {validation['tolerance']:.0%}"
    if not validation["refine"]:
        return replace(decision, reason=f"{error}: the model is within tolerance")
    exhausted = "rounds" if rounds_left <= 0 else "runs" if runs_left <= 0 else None
    if exhausted:
        return replace(decision, action="stop", exhausted=exhausted,
                       reason=f"{error}, but the budget of {exhausted} is used up "
                              f"({round_index} of {budget['max_rounds']} rounds, {runs_used} "
                              f"of {budget['max_runs']} runs)")
    if validation["part"] == "computation":
        return _plan_frequency(decision, validation, model, measured_p, settings,
                               frequency_control, error, runs_left)
    return _plan_more_p(decision, validation, model, measured_p, settings, runs_left, error)


def _plan_more_p(decision: Decision, validation: dict, model: Model, measured_p: list[float],
                 settings: Mapping, runs_left: int, error: str) -> Decision:
    point = {k: v for k, v in (validation.get("worst_point") or {}).items() if k != "p"}
    candidates, max_p = settings.get("candidates") or None, settings.get("max_p") or None
    accepted = settings.get("accepts_p") or AcceptedP()
    ranking, what = candidate_ranking(model, measured_p, candidates, point,
                                      validation["part"], max_p, accepted)
    runs = choose_p(model, measured_p, candidates, point, min(2, runs_left),
                    part=validation["part"], max_p=max_p, accepted=accepted)
    decision = replace(decision, candidates=_records(ranking))
    part = validation["part"] or "the model"
    if not runs:
        return replace(decision, action="stop", exhausted="candidates",
                       reason=f"{error} in {part}, but no P is left to run (measured "
                              f"{decision.measured_p}, max_p {max_p}, the application "
                              f"accepts {accepted.text})")
    chosen = ", ".join(f"P={r['p']} to {r['role']} ({r['uncertainty']:.1%})" for r in runs)
    return replace(decision, action="more_p", runs=runs,
                   reason=f"{error}, from {part}: profile {chosen}; uncertainty is the "
                          f"relative 90% interval of the {what} at each candidate")


def _plan_frequency(decision: Decision, validation: dict, model: Model,
                    measured_p: list[float], settings: Mapping, control: dict, error: str,
                    runs_left: int) -> Decision:
    done = settings.get("frequency_done")
    why_not = ("the model has no CPI (no cycles and instructions were measured)"
               if not model.cpi else
               f"the lower-frequency rerun was made in round {done}" if done is not None else
               None if control.get("can_set") else
               f"this machine cannot change the CPU frequency ({control.get('reason')})")
    if why_not:
        # the frequency rerun is impossible (or made); more P are the lever left: the
        # kernels' fits get points where they are least certain, as for communication
        more = _plan_more_p(decision, validation, model, measured_p, settings, runs_left,
                            error)
        return replace(more, keeps_model=done is None, frequency_skipped=why_not,
                       reason=f"{error}, from computation; no lower-frequency rerun: {why_not}"
                              + (", so the CPI parameters stay as they are. " if done is None
                                 else ". ")
                              + (f"Instead: {more.reason}" if more.action == "more_p"
                                 else more.reason))
    ghz = lower_frequency(control, settings.get("lower_frequency_ghz"))
    worst = (validation.get("worst_point") or {}).get("p")
    p = int(settings.get("frequency_p") or worst or max(measured_p))
    run = {"p": p, "role": "lower_frequency", "frequency_ghz": ghz,
           "reason": f"rerun P={p} (the worst point's P unless settings name frequency_p) at "
                     f"{ghz:g} GHz instead of {control.get('max_ghz')} GHz"}
    if control.get("method") == "slurm":
        run["slurm_option"] = cpu_freq_option(ghz)
    return replace(decision, action="lower_frequency", runs=[run], frequency_ghz=ghz,
                   frequency_method=control.get("method"),
                   reason=f"{error}, from computation: {run['reason']}, then solve CPI = "
                          "CPI_core + BF_mem * T_mem per kernel (paper 000, Eq. 5)")


def _records(ranking: pd.DataFrame) -> list[dict]:
    return [{"p": int(r.p), "uncertainty": float(r.uncertainty), "predicted": float(r.predicted),
             "rank": int(r.rank)} for r in ranking.itertuples()]


def runs_asked(decisions: list[Decision]) -> int:
    """Runs the earlier rounds' decisions asked for: ``runs_used`` of the next round."""
    return sum(len(decision.runs) for decision in decisions)


# ------------------------------------------------------------ the rerun's frequency

def lower_frequency(control: dict, requested: float | None = None) -> float:
    """The frequency of the refinement run: ``requested``, or the available one nearest 2/3
    of the highest (the paper's 3 -> 2 GHz), at least the lowest."""
    low, high = control["min_ghz"], control["max_ghz"]
    if requested is not None:
        if not low <= requested < high:
            raise ApmtError(f"settings: field 'lower_frequency_ghz' is {requested!r}; this "
                            f"machine sets {low:g} to {high:g} GHz (below the highest)")
        return float(requested)
    wanted = max(low, high * LOWER_FREQUENCY_STEP)
    listed = [f for f in control["frequencies_ghz"] if f < high]
    return float(min(listed, key=lambda f: abs(f - wanted))) if listed else round(wanted, 3)


# ------------------------------------------------------------ CPI_core and BF_mem (Eq. 5)

def frequency_points(measurements: pd.DataFrame, machine: dict) -> pd.DataFrame:
    """Per kernel, P and frequency: CPI and T_mem, the input of solve_frequency.

    ``measurements`` is a measurements table (apmt.tables) with a column ``frequency_ghz``
    (the run's clock) and the counters instructions, cycles, l1_hits, l2_hits, llc_hits and
    llc_misses. T_mem is memory latency in cycles per instruction, Eq. 3 divided by the
    instructions: caches are clocked with the core, so their latencies in cycles are the
    machine file's at any frequency; memory's latency is fixed in ns, so its cycles scale with
    the frequency. Columns: kernel, p, frequency_ghz, cpi, t_mem.
    """
    if "frequency_ghz" not in measurements.columns:
        raise ApmtError("frequency runs: missing column 'frequency_ghz' (the clock of each run)")
    means = points(measurements, ["frequency_ghz"])
    wide = means.pivot_table(index=["kernel", "p", "frequency_ghz"], columns="metric",
                             values="value").reset_index()
    missing = [name for name in FREQUENCY_INPUTS if name not in wide.columns]
    if missing:
        raise ApmtError(f"frequency runs: no {missing[0]!r} counter (Eq. 5 needs "
                        f"{', '.join(FREQUENCY_INPUTS)})")
    cycles = memory_cycles(wide, machine, tuple(LEVELS), wide["frequency_ghz"])
    wide["cpi"] = wide["cycles"] / wide["instructions"]
    wide["t_mem"] = cycles / wide["instructions"]
    return wide[["kernel", "p", "frequency_ghz", "cpi", "t_mem"]].dropna()


def solve_frequency(runs: pd.DataFrame) -> pd.DataFrame:
    """Per kernel, least squares of CPI = CPI_core + BF_mem * T_mem over its runs.

    ``runs`` has columns kernel, frequency_ghz, cpi, t_mem (see frequency_points). Returns,
    per kernel: frequencies (distinct clocks), cpi_core (intercept), bf_mem (slope),
    residual (root mean square of the CPI residuals over the mean CPI; 0 with two runs),
    sane (BF_mem within [0, 1.5] and CPI_core > 0), note (why not sane, or why not solved).
    """
    missing = [c for c in ("kernel", "frequency_ghz", "cpi", "t_mem") if c not in runs.columns]
    if missing:
        raise ApmtError(f"frequency runs: missing column {missing[0]!r}")
    rows = [_solve_kernel(kernel, group) for kernel, group in runs.groupby("kernel", sort=True)]
    columns = ["kernel", "frequencies", "cpi_core", "bf_mem", "residual", "sane", "note"]
    return pd.DataFrame(rows, columns=columns)


def _solve_kernel(kernel: str, runs: pd.DataFrame) -> dict:
    frequencies = int(runs["frequency_ghz"].nunique())
    t_mem, cpi = runs["t_mem"].to_numpy(float), runs["cpi"].to_numpy(float)
    result = {"kernel": kernel, "frequencies": frequencies, "cpi_core": np.nan,
              "bf_mem": np.nan, "residual": np.nan, "sane": False}
    spread = np.ptp(t_mem) if len(t_mem) else 0.0
    if frequencies < 2 or spread <= 1e-9 * max(np.abs(t_mem).max(initial=0.0), 1e-300):
        why = "fewer than 2 frequencies" if frequencies < 2 else \
            "T_mem does not change with the frequency (no memory accesses)"
        return {**result, "note": f"not solved: {why}"}
    design = np.column_stack([np.ones_like(t_mem), t_mem])
    (core, blocking), *_ = np.linalg.lstsq(design, cpi, rcond=None)
    residual = float(np.sqrt(np.mean((design @ [core, blocking] - cpi) ** 2)) / cpi.mean())
    problems = [text for bad, text in (
        (not BF_MEM_RANGE[0] <= blocking <= BF_MEM_RANGE[1],
         f"BF_mem {blocking:.3g} outside [{BF_MEM_RANGE[0]:g}, {BF_MEM_RANGE[1]:g}]"),
        (core <= 0, f"CPI_core {core:.3g} is not positive")) if bad]
    return {**result, "cpi_core": float(core), "bf_mem": float(blocking), "residual": residual,
            "sane": not problems, "note": "; ".join(problems) or "solved"}


def apply_frequency_solution(model: Model, solution: pd.DataFrame) -> dict:
    """A copy of the model whose kernels take the solved CPI_core (as their ``cpi``) and
    BF_mem; kernels without a sane solution keep their first parameters, and the notes say
    which. ``model.cpi[kernel].bf_mem`` replaces the stall-cycle term only once
    apmt.model reads it (see the refinement's report)."""
    if not model.cpi:
        raise ApmtError("refinement: the model has no CPI per kernel (time-only): nothing "
                        "to apply the frequency solution to")
    refined = copy.deepcopy(model)
    applied, kept = [], []
    for row in solution.itertuples():
        entry = refined.cpi.get(row.kernel)
        if entry is None:
            continue
        if not row.sane:
            kept.append(f"{row.kernel} ({row.note})")
            continue
        entry.refined = {"method": "lower frequency (paper 000, Eq. 5)",
                         "cpi_before": entry.cpi, "residual": row.residual}
        entry.cpi, entry.bf_mem, entry.path = row.cpi_core, row.bf_mem, FREQUENCY
        entry.why = f"solved from {row.frequencies} clocks, residual {row.residual:.2g}"
        entry.cpi_core_interval = entry.bf_mem_interval = None
        applied.append(f"{row.kernel}: CPI_core {row.cpi_core:.3g}, BF_mem {row.bf_mem:.3g}")
    refined.notes = [*refined.notes,
                     *(["refined at a lower frequency: " + "; ".join(applied)] if applied
                       else []),
                     *(["kept the first CPI of " + "; ".join(kept)] if kept else [])]
    return refined


# ------------------------------------------------------- the rerun's outcome (next round)

SOLUTION_COLUMNS = ["kernel", "frequencies", "cpi_core", "bf_mem", "residual", "sane", "note"]
KEPT = "the model keeps its first parameters"


def judge_frequency(measurements: pd.DataFrame, record: Mapping,
                    load: Callable[[str], dict]) -> tuple[pd.DataFrame, dict]:
    """Solve Eq. 5 per kernel from the rerun's table and decide whether the model takes the
    solution: only where the frequency really changed and some kernel's solution is sane.

    ``record`` is the table's sidecar (apmt.collect.frequency.extract_frequency): changed,
    reasons, base_ghz, lowered_ghz, requested_ghz, machine_file; ``load`` reads the machine
    file (its latencies give T_mem). Returns the solution (SOLUTION_COLUMNS) and the outcome
    for the decision: accepted, frequency_changed, the clocks, kernels, reason.
    """
    outcome = {"accepted": False, "frequency_changed": bool(record.get("changed")),
               "frequency_reasons": list(record.get("reasons") or []),
               **{key: record.get(key) for key in ("requested_ghz", "base_ghz", "lowered_ghz")},
               "kernels": []}
    solution, unsolved = _solve_or_why(measurements, record, load)
    outcome["kernels"], outcome["not_solved"] = solution.to_dict("records"), unsolved
    sane = solution[solution["sane"].astype(bool)] if not solution.empty else solution
    if not outcome["frequency_changed"]:
        why = "; ".join(outcome["frequency_reasons"]) or "no run says it changed"
        reason = f"the machine did not change its frequency: {KEPT} ({why})"
    elif unsolved:
        reason = f"Eq. 5 was not solved ({unsolved}): {KEPT}"
    elif sane.empty:
        reason = f"no kernel's solution is sane ({_notes(solution)}): {KEPT}"
    else:
        outcome["accepted"] = True
        reason = (f"clock {outcome['base_ghz']:.3g} -> {outcome['lowered_ghz']:.3g} GHz; the "
                  f"model takes CPI_core and BF_mem of {len(sane)} of {len(solution)} kernels ("
                  + "; ".join(f"{r.kernel}: CPI_core {r.cpi_core:.3g}, BF_mem {r.bf_mem:.3g}"
                              for r in sane.itertuples()) + ")")
    return solution, {**outcome, "reason": reason}


def with_frequency_outcome(decision: Decision, outcome: dict, solution_file: str) -> Decision:
    """A round's decision that follows a lower-frequency rerun: the rerun's solution and
    outcome (judge_frequency), whether the model keeps its first parameters, and which ones
    the validation used."""
    validated = ("validated with it" if outcome["accepted"]
                 else "validated with the first parameters")
    return replace(decision, frequency_solution={"file": solution_file, **outcome},
                   keeps_model=not outcome["accepted"],
                   reason=f"lower-frequency rerun: {outcome['reason']}; {validated}. "
                          f"{decision.reason}")


def _solve_or_why(measurements: pd.DataFrame, record: Mapping,
                  load: Callable[[str], dict]) -> tuple[pd.DataFrame, str | None]:
    """The solution, or an empty one and why Eq. 5 could not be solved."""
    empty = pd.DataFrame(columns=SOLUTION_COLUMNS)
    if not record.get("machine_file"):
        return empty, "the study names no machine file, whose latencies T_mem needs"
    try:
        return solve_frequency(frequency_points(measurements, load(record["machine_file"]))), \
            None
    except ApmtError as error:
        return empty, str(error)


def _notes(solution: pd.DataFrame) -> str:
    return "; ".join(f"{r.kernel}: {r.note}" for r in solution.itertuples())
