"""A refinement round as a step of the package (``apmt refine round``), and the record of all
rounds (``apmt refine finish``): validate the round's model on its held-out runs (with the
lower-frequency solution when the model takes it), then let apmt.refine decide the next runs
from the model of all the round's runs, which is built only when the round refines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from apmt import layout
from apmt.collect.cpufreq import frequency_control
from apmt.decision import Decision
from apmt.evaluate import validate
from apmt.machine import load_machine
from apmt.model import build_model
from apmt.refine import (
    SOLUTION_COLUMNS,
    apply_frequency_solution,
    judge_frequency,
    plan_round,
    runs_asked,
    with_frequency_outcome,
)
from apmt.tables import read_json, read_table


@dataclass
class Round:
    """What a round found: the evaluation rows of its held-out runs, the validation, the
    decision (with its validation), and the frequency solution (a header only without a
    lower-frequency rerun)."""

    rows: pd.DataFrame
    validation: dict
    decision: Decision
    solution: pd.DataFrame


def frequency_outcome(frequency_table: Path | None) -> tuple[pd.DataFrame, dict | None]:
    """The lower-frequency rerun's solution of Eq. 5 per kernel and whether the model takes
    it (apmt.refine.judge_frequency), from its table and the table's sidecar; without a
    rerun an empty solution and no outcome."""
    if frequency_table is None:
        return pd.DataFrame(columns=SOLUTION_COLUMNS), None
    table = read_table(frequency_table, "measurements")
    record = read_json(layout.sidecar(frequency_table))
    return judge_frequency(table, record, load_machine)


def refinement_round(table: pd.DataFrame, params: list[str], *, source: str,
                     comm: pd.DataFrame | None, model_options: Mapping, holdout: str,
                     tolerance: float, round_index: int, budget: Mapping[str, int],
                     settings: Mapping, previous: list[Decision], base_p: list[int],
                     frequency: tuple[pd.DataFrame, dict | None],
                     solution_file: str | None = None) -> Round:
    """Validate the round's model and decide the next runs.

    ``settings``: candidates, max_p, accepts_p, lower_frequency_ghz (apmt.refine.plan_round);
    ``previous``: the earlier rounds' decisions (their runs count against the budget, and a
    lower-frequency rerun is made once); ``frequency``: frequency_outcome's solution and
    outcome of the rerun the previous round asked for.
    """
    solution, outcome = frequency
    refined = (lambda model: apply_frequency_solution(model, solution)) \
        if outcome is not None and outcome["accepted"] else None
    rows, validation = validate(table, params, holdout, tolerance, source, comm,
                                refine_model=refined, **model_options)
    model = build_model(table, params, source=source, comm=comm, **model_options) \
        if validation["refine"] else None
    done = next((d.round for d in previous if d.action == "lower_frequency"), None)
    decision = plan_round(validation, model, sorted(table["p"].unique()), round_index, budget,
                          {**settings, "frequency_done": done}, frequency_control(),
                          runs_used=runs_asked(previous))
    decision = replace(decision, base_p=base_p, validation=validation)
    if outcome is not None:
        decision = with_frequency_outcome(decision, outcome, str(solution_file))
    return Round(rows, validation, decision, solution)


def refinement_record(decisions: list[Decision], tables_from: Path) -> dict:
    """One record of every round (refinement.json): the decisions, the final round, where
    the study's tables come from and the outcome in words."""
    last = decisions[-1] if decisions else None
    return {
        "rounds": [decision.to_dict() for decision in decisions],
        "final_round": len(decisions) - 1 if decisions else 0,
        "tables_from": str(tables_from),
        "outcome": ("refinement off: no holdout, a budget of 0, or an imported study"
                    if last is None else f"round {last.round}: {last.action}: {last.reason}"),
    }
