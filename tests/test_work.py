"""The work per rank as an expression (apmt.work): parsed, never run; a study's field and
``--work`` are checked in one line; the fits use it in place of size/p."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.errors import ApmtError
from apmt.model import build_model, load_model
from apmt.series import fit_plan
from apmt.study import check_study
from apmt.work import evaluate_work, parse_work, work_names

DATA = Path(__file__).resolve().parents[1] / "data"

NAMES = ["p", "size", "ne"]


def test_an_expression_is_evaluated_on_arrays() -> None:
    text = parse_work("6*ne**2/p + log2(p) - -1", NAMES, "here")
    assert text == "6 * ne ** 2 / p + log2(p) - -1"
    values = {"ne": np.array([32.0, 256.0]), "p": np.array([6.0, 1536.0])}
    expected = 6 * values["ne"] ** 2 / values["p"] + np.log2(values["p"]) + 1
    assert np.allclose(evaluate_work(text, values), expected)
    assert work_names(text) == {"ne", "p"}


def test_spelling_does_not_make_another_variable() -> None:
    assert parse_work("size**3/p", NAMES, "here") == parse_work(" size ** 3 / (p) ", NAMES,
                                                                 "here")


@pytest.mark.parametrize(("text", "part"), [
    ("__import__('os').system('true')", "__import__"),
    ("size.real", "'size.real'"),
    ("size**3 / q", "the name 'q'"),
    ("lambda: 1", "'lambda: 1'"),
    ("size if p else 1", "'size if p else 1'"),
    ("[size]", "'[size]'"),
    ("'size'", "the constant 'size'"),
    ("exp(size)", "'exp(size)'"),
    ("log(size, 2)", "'log(size, 2)'"),
    ("size // p", "'size // p'"),
    ("True * p", "the constant True"),
])
def test_anything_outside_the_whitelist_is_one_line_naming_it(text: str, part: str) -> None:
    with pytest.raises(ApmtError) as error:
        parse_work(text, NAMES, "study.yaml: field 'work'")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"study.yaml: field 'work': {text!r}")
    assert part in message and "is not allowed" in message


@pytest.mark.parametrize("text", ["", "  ", "size**3 /", "size**3 / p)", 3])
def test_a_text_that_is_no_expression_is_refused(text: object) -> None:
    with pytest.raises(ApmtError, match=r"^here: .* is not an expression"):
        parse_work(text, NAMES, "here")


def test_overflow_is_infinite_not_an_exception() -> None:
    assert np.isinf(evaluate_work("10 ** 10 ** 10", {}))


def test_a_study_checks_its_work_against_its_parameters(tmp_path: Path) -> None:
    fields = {"command": "app", "p": [1, 2], "params": {"ne": [32]}}
    study = check_study({**fields, "work": "6*ne**2/p", "scaling": "weak"}, tmp_path / "s.yaml")
    assert (study.work, study.scaling) == ("6 * ne ** 2 / p", "weak")
    assert check_study(fields, tmp_path / "s.yaml").work is None
    with pytest.raises(ApmtError, match=r"s\.yaml: field 'work': 'size\*\*3 / p': the name "
                                        r"'size' is not allowed"):
        check_study({**fields, "work": "size**3 / p"}, tmp_path / "s.yaml")
    with pytest.raises(ApmtError, match=r"field 'scaling': 'sideways' is not strong or weak"):
        check_study({**fields, "scaling": "sideways"}, tmp_path / "s.yaml")


def test_the_work_takes_the_place_of_size_per_p() -> None:
    rows = pd.DataFrame({"p": [1, 2, 4, 1, 2, 4], "size": [0.6] * 3 + [0.8] * 3})
    assert fit_plan(rows, ["size"]) == ("p", ("p", "size", "size/p"))
    assert fit_plan(rows, ["size"], work="size ** 3 / p") == \
        ("p", ("p", "size", "size ** 3 / p"))
    one_size = rows[rows["size"] == 0.6]
    assert fit_plan(one_size, ["size"], work="size ** 3 / p") == ("p", ("size ** 3 / p",))
    # a work that does not move (weak scaling: per rank already) is no variable
    assert fit_plan(one_size, ["size"], work="size ** 3") == ("p", ("p",))


def test_fit_with_a_bad_work_is_one_line(tmp_path: Path, cli) -> None:
    table = tmp_path / "m.csv"
    table.write_text("kernel,metric,p,n,value\n" + "".join(
        f"solve,time,{p},{n},{n / p}\n" for p in (1, 2, 4, 8) for n in (10, 20)))
    run = cli("fit", table, "--work", "n / p + os", "-o", tmp_path / "model.json")
    assert run.code == 2
    assert run.err.strip() == (f"apmt: error: {table}: --work: 'n / p + os': the name 'os' is "
                               "not allowed (allowed: numbers, the names n, p, + - * / **, "
                               "parentheses and the functions log, log2, log10, sqrt, cbrt)")
    assert not (tmp_path / "model.json").exists()


def test_the_model_records_the_work_and_predicts_another_size_with_it(
        measured_data: Path, tmp_path: Path, cli) -> None:
    """Fitted on LAMMPS at size 0.8 (P <= 8), the pair kernel at size 1.0 and P = 4 is the
    time measured there (data/lammps/lj-size1.0-p1-8: 0.370 s), not size/p's 36% less."""
    table = pd.read_csv(measured_data / "lammps/lj-size0.8-p1-32/measurements.csv")
    train = tmp_path / "m.csv"
    table[table["p"] <= 8].to_csv(train, index=False)
    model_file = tmp_path / "model.json"
    assert cli("fit", train, "--work", "size**3/p", "-o", model_file).code == 0
    saved = json.loads(model_file.read_text())
    assert saved["work"] == "size ** 3 / p"
    predictions = tmp_path / "predictions.csv"
    assert cli("predict", model_file, "--at", "p=4,size=1", "-o", predictions).code == 0
    rows = pd.read_csv(predictions)
    pair = rows[(rows["kernel"] == "LAMMPS_NS::PairLJCut::compute") & (rows["metric"] == "time")]
    target = pd.read_csv(measured_data / "lammps/lj-size1.0-p1-8/measurements.csv")
    measured = target[(target["kernel"] == "LAMMPS_NS::PairLJCut::compute")
                      & (target["metric"] == "time") & (target["p"] == 4)]["value"].mean()
    assert abs(pair["predicted"].iloc[0] / measured - 1) < 0.05
    del saved["work"]                      # a model file from before the field
    model_file.write_text(json.dumps(saved))
    assert load_model(model_file).work is None


def test_weak_scaling_keeps_the_work_per_rank_of_the_expression():
    """LAMMPS' work size**3 / p: weak scaling grows size as the cube root of P (not as P),
    so the atoms per rank stay as at the largest measured run."""
    from apmt.diagnose.scaling import scale_values
    from apmt.work import constant_work

    factors = constant_work("size ** 3 / p", {"p": np.array([8.0, 64.0]),
                                              "size": np.array([1.0, 1.0])}, ["size"], 1 / 8)
    assert factors == pytest.approx([1.0, 2.0])
    assert constant_work("p * 2", {"p": np.array([2.0]), "size": np.array([1.0])},
                         ["size"], 1.0) is None
    table = pd.read_csv(DATA / "lammps" / "p1-32" / "measurements.csv")
    model = build_model(table[table["p"] <= 8], ["size"], source="lammps",
                        work="size**3 / p", scaling="weak")
    values, setting = scale_values(model, table[table["p"] <= 8], [8, 64, 512], "weak")
    assert values["size"] == pytest.approx([0.6, 1.2, 2.4])
    assert "size**3 / p" in setting.replace(" ** ", "**")
