"""Numbers as users read them: the fit's clamp prints as 0, and no table breaks a number."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from apmt.cli import describe_app_rows
from apmt.diagnose.render import cell_text, to_html, to_text
from apmt.diagnose.section import Finding, Section
from apmt.display import number, pieces, seconds, wrap_words
from apmt.fit import TINY
from apmt.tables import APP_KERNEL, TIME_METRIC

LONG_KERNEL = "a_kernel_name_of_a_batch_study_that_goes_on_and_on_and_on_forever"


def test_the_clamp_and_tiny_times_print_as_zero_or_below_a_nanosecond() -> None:
    assert number(TINY) == "0" and number(-TINY) == "0" and number(TINY * 1e50) == "0"
    assert seconds(TINY) == "0 s" and seconds(0.0) == "0 s"
    assert seconds(5e-10) == "< 1e-9 s" and seconds(-5e-10) == "> -1e-9 s"
    assert seconds(0.01234) == "0.0123 s" and seconds(2.5, 4) == "2.5 s"
    assert number(1.58249e-5) == "1.582e-05" and number(12.0, 3) == "12"
    assert number(float("nan")) == "-" and seconds(None, missing="not seen") == "not seen"
    assert cell_text(TINY) == "0" and cell_text(np.float64(0.5)) == "0.5"


def test_the_clamp_never_reaches_the_diagnosis_or_predict() -> None:
    table = pd.DataFrame({"kernel": ["solve"], "time_first": [TINY], "time_last": [0.25]})
    section = Section("Ranking", [Finding("info", f"solve takes {seconds(TINY)}")], table)
    for shown in (to_text([section]), to_html([section])):
        assert "e-308" not in shown and "2.225" not in shown
    assert "solve takes 0 s" in to_text([section])
    rows = pd.DataFrame([{"kernel": APP_KERNEL, "metric": TIME_METRIC, "p": 64.0,
                          "predicted": TINY, "lower": TINY, "upper": 3e-10,
                          "trust": "extrapolated", "trust_reason": ""}])
    assert describe_app_rows(rows, []) == ("p=64: application time 0 s (90% interval 0 s .. "
                                           "< 1e-9 s; extrapolated)")


@pytest.fixture
def long_table() -> pd.DataFrame:
    """A kernel ranking as wide as a real one: a long name, eight times, a remark."""
    rng = np.random.default_rng(15)
    table = pd.DataFrame({f"time_p{2 ** i}": rng.uniform(1e-7, 1e-4, 5) for i in range(8)})
    table.insert(0, "kernel", [f"{LONG_KERNEL}_{i}" for i in range(5)])
    table["remark"] = "grows from 1.582e-05 s, see rank_first"
    table.iloc[0, 1] = TINY
    return table


@pytest.mark.parametrize("width", [40, 70, 100, 104, 105, 120, 160])
def test_a_long_table_never_breaks_a_number(long_table: pd.DataFrame, width: int) -> None:
    text = to_text([Section("Kernel ranking across scales", table=long_table)], width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    words = set(text.split())
    numbers = [cell_text(v) for column in long_table.columns[1:-1] for v in long_table[column]]
    assert "0" in numbers and all(n in words for n in numbers), "a number was broken"
    assert "1.582e-05" in words and "e-308" not in text
    # side by side the table needs eight numbers of 9 characters, the remark's 1.582e-05, 6
    # characters of kernel name and nine gaps of 2: 105; narrower, a line per value
    if width < 105:
        assert "time_p1: 0" in lines and "time_p128: " + numbers[-1] in lines
    else:
        assert any(line.startswith("kernel ") for line in lines)


def test_cells_break_after_underscores_not_inside_numbers() -> None:
    assert pieces("rank_first 1.582e-05") == ["rank_", "first", "1.582e-05"]
    assert wrap_words(LONG_KERNEL, 20) == ["a_kernel_name_of_a_", "batch_study_that_",
                                           "goes_on_and_on_and_", "on_forever"]
    assert wrap_words("time 1.582e-05 s", 10) == ["time", "1.582e-05", "s"]
    assert wrap_words("  fits as is", 40) == ["  fits as is"]
