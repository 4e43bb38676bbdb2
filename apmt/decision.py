"""A refinement round's decision (apmt.refine.plan_round makes it; ``decision.json`` holds it;
the workflow reads it to know which P the next round runs). It imports nothing heavy: the
workflow reads decisions while it plans its jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields


@dataclass
class Decision:
    """A refinement round's decision (``decision.json``): what the next round does (action:
    none, stop, more_p or lower_frequency) and the numbers that made it: the validation's
    error against the tolerance, the runs asked for (each with its P, role and why), the
    candidates ranked by uncertainty, the budget. Optional entries are in its JSON form only
    when set: why it stopped (exhausted: rounds, runs or candidates), why no lower-frequency
    rerun (frequency_skipped), the study's own P (base_p), the round's validation, and the
    outcome of the rerun the previous round asked for (frequency_solution)."""

    round: int
    action: str
    part: str | None
    tolerance: float
    error: float | None
    worst_point: dict | None
    measured_p: list[int]
    budget: dict
    reason: str = ""
    runs: list[dict] = field(default_factory=list)
    frequency_ghz: float | None = None
    frequency_method: str | None = None
    keeps_model: bool = False
    candidates: list[dict] = field(default_factory=list)
    exhausted: str | None = None
    frequency_skipped: str | None = None
    base_p: list[int] | None = None
    validation: dict | None = None
    frequency_solution: dict | None = None

    @property
    def added_p(self) -> list[int]:
        """The P the decision adds (its runs, when it asks for more P)."""
        return [run["p"] for run in self.runs] if self.action == "more_p" else []

    @property
    def frequency_run(self) -> dict | None:
        """The rerun at a lower frequency it asks for, if any."""
        return self.runs[0] if self.action == "lower_frequency" else None

    @property
    def solution_accepted(self) -> bool:
        """Whether the model takes the frequency solution this round judged."""
        return bool((self.frequency_solution or {}).get("accepted"))

    def to_dict(self) -> dict:
        return {entry.name: getattr(self, entry.name) for entry in fields(self)
                if entry.name not in DECISION_OPTIONAL or getattr(self, entry.name) is not None}

    @staticmethod
    def from_dict(data: Mapping) -> Decision:
        return Decision(**data)


DECISION_OPTIONAL = ("exhausted", "frequency_skipped", "base_p", "validation",
                     "frequency_solution")
