"""The P an application accepts (a study's accepts_p): parsed, checked, and obeyed by
refinement."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from apmt.accepted import AcceptedP, parse_accepted
from apmt.errors import ApmtError
from apmt.ingest import import_profiles
from apmt.model import build_model
from apmt.refine import choose_p, default_candidates, plan_round
from apmt.study import load_study

HERE = Path("study.yaml")


@given(st.integers(1, 10**7))
def test_forms_admit_exactly_their_numbers(p: int) -> None:
    assert AcceptedP("powers_of_two").admits(p) == (2 ** round(math.log2(p)) == p)
    assert AcceptedP("squares").admits(p) == (math.isqrt(p) ** 2 == p)
    assert AcceptedP("cubes").admits(p) == any(k**3 == p for k in range(1, 216))
    assert AcceptedP("any", max_p=100).admits(p) == (p <= 100)


def test_between_lists_the_accepted_p_in_a_range() -> None:
    assert AcceptedP("squares", max_p=50).between(2, 100) == [4, 9, 16, 25, 36, 49]
    assert AcceptedP("cubes").between(1, 64) == [1, 8, 27, 64]
    assert AcceptedP("powers_of_two").between(3, 40) == [4, 8, 16, 32]
    assert AcceptedP("list", (6, 24, 54)).between(10, 60) == [24, 54]


@pytest.mark.parametrize(("value", "expected"), [
    (None, AcceptedP()), ("squares", AcceptedP("squares")),
    ([8, 2, 4], AcceptedP("list", (2, 4, 8))),
    ({"form": "cubes", "max": 512}, AcceptedP("cubes", max_p=512)),
    ({"values": [4, 16], "max": 8}, AcceptedP("list", (4, 16), 8)),
])
def test_the_field_parses(value: object, expected: AcceptedP) -> None:
    assert parse_accepted(value, HERE) == expected


@pytest.mark.parametrize("value", [
    "square", [], [0], [2.5], [True], {"form": "squares", "values": [4]}, {"max": 8},
    {"form": "squares", "max": -1}, {"form": "squares", "step": 2}, 4, float("nan")])
def test_bad_values_get_one_line_naming_the_field(value: object) -> None:
    with pytest.raises(ApmtError) as error:
        parse_accepted(value, HERE)
    assert str(error.value).startswith("study.yaml: field 'accepts_p'")
    assert "\n" not in str(error.value)


def test_a_study_whose_own_p_the_application_refuses_is_refused(tmp_path: Path) -> None:
    study = {"name": "bt", "command": "bt.S.x", "p": [4, 6, 9], "accepts_p": "squares"}
    path = tmp_path / "bt.yaml"
    path.write_text(yaml.safe_dump(study))
    with pytest.raises(ApmtError, match=r"field 'p': P=6 is not what the application accepts "
                                        r"\(accepts_p: squares\)"):
        load_study(path)
    path.write_text(yaml.safe_dump({**study, "p": [4, 9, 16]}))
    assert load_study(path).accepts_p == AcceptedP("squares")


def test_every_shipped_study_says_what_it_accepts() -> None:
    shipped = sorted(Path(__file__).parents[1].glob("config/studies/*.yaml"))
    accepted = {path.stem: load_study(path).accepts_p.form for path in shipped}
    assert accepted["npb-bt"] == accepted["npb-sp"] == "squares"
    assert accepted["npb-cg"] == accepted["npb-lu"] == "powers_of_two"
    assert len(accepted) >= 10 and all("accepts_p" in path.read_text() for path in shipped)


@pytest.fixture(scope="module")
def lulesh_model(measured_data: Path) -> dict:
    """LULESH (real Caliper profiles) at P = 27..216: it accepts only cubes."""
    table, _ = import_profiles("caliper", sorted(measured_data.glob("lulesh_caliper_opal/*.cali")))
    return build_model(table[table["p"] < 343], [], source="lulesh", app_kernel="main")


def test_refinement_proposes_only_accepted_p(lulesh_model: dict) -> None:
    measured = [27, 64, 125, 216]
    cubes = AcceptedP("cubes")
    assert default_candidates(measured, accepted=cubes) == [343, 512, 729]
    assert 96 in default_candidates(measured)        # powers of two and midpoints otherwise
    runs = choose_p(lulesh_model, measured, None, {}, count=2, accepted=cubes)
    assert {run["p"] for run in runs} <= {343, 512, 729} and len(runs) == 2
    explicit = choose_p(lulesh_model, measured, [100, 343, 400], {}, count=2, accepted=cubes)
    assert [run["p"] for run in explicit] == [343]


def test_with_nothing_accepted_left_the_round_stops_and_says_why(lulesh_model: dict) -> None:
    validation = {"tolerance": 0.1, "worst_point": {"p": 216.0}, "error": 0.3, "refine": True,
                  "part": "communication", "gap_seconds": {}, "reason": "test"}
    decision = plan_round(validation, lulesh_model, [27, 64, 125, 216], 0,
                          {"max_rounds": 2, "max_runs": 2},
                          {"accepts_p": AcceptedP("cubes", max_p=216)}, {"can_set": False})
    assert decision.action == "stop"
    assert "the application accepts cubes up to 216" in decision.reason
