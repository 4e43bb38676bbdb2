"""Numbers as users read them: the fit's clamp prints as 0, and no table breaks a number."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apmt.cli import describe_app_rows
from apmt.diagnose.render import cell_text, to_html, to_text
from apmt.diagnose.section import Finding, Section
from apmt.display import figure_name, number, pieces, seconds, short_name, short_names, wrap_words
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


def test_a_table_wraps_its_headers_before_its_cells() -> None:
    """miniWeather's kernel ranking (its functions, their figures at P = 6 and 256): at 100
    columns every name fits whole once the numeric columns are as narrow as their numbers,
    their headers over two lines; narrowing the widest column first had cut each name in
    three (``compute_`` / ``tendencies_`` / ``x``), a line more per row."""
    names = ["__ieee754_pow_fma", "compute_tendencies_x", "compute_tendencies_z",
             "set_halo_values_x", "semi_discrete_step", "pow"]
    table = pd.DataFrame({
        "kernel": names, "class": ["key"] * 3 + ["non-scalable", "key", "key"],
        "rank_first": [1, 3, 2, 6, 5, 4],
        "time_first": [0.1622, 0.06074, 0.06443, 0.003721, 0.0108, 0.01258],
        "rank_last": [1, 2, 3, 4, 5, 6],
        "time_last": [0.004447, 0.00314, 0.002152, 0.002023, 0.0009785, 0.0004351],
        "share_last": [0.0004724, 0.0003336, 0.0002286, 0.0002149, 0.000104, 4.623e-05],
        "top_from": ["6", "6", "6", "-", "-", "-"], "flagged": [False] * 6})
    lines = to_text([Section("Kernel ranking across scales", table=table)], 100).splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    assert rule == 3 and all(len(line) <= 100 for line in lines)   # title, 2 header lines
    assert [line.split()[0] for line in lines[rule + 1:]] == names  # a line per kernel
    assert lines[rule - 2].split()[:4] == ["kernel", "class", "rank_", "time_"]


def test_cells_break_after_underscores_not_inside_numbers() -> None:
    assert pieces("rank_first 1.582e-05") == ["rank_", "first", "1.582e-05"]
    assert wrap_words(LONG_KERNEL, 20) == ["a_kernel_name_of_a_", "batch_study_that_",
                                           "goes_on_and_on_and_", "on_forever"]
    assert wrap_words("time 1.582e-05 s", 10) == ["time", "1.582e-05", "s"]
    assert wrap_words("  fits as is", 40) == ["  fits as is"]


def test_cxx_names_keep_their_scope_and_function_not_their_template_arguments(
        measured_data: Path) -> None:
    """miniXyce's and HPCG's profiles name std::map's and std::unordered_map's members by
    their whole instantiation (up to 374 characters); a table cell or a figure shows the scope
    and the member, and names that would then read alike stay whole."""
    kernels = set()
    for app in ("minixyce", "hpcg"):
        kernels |= set(pd.read_csv(measured_data / app / "measurements.csv")["kernel"])
    erase = next(k for k in kernels if k.startswith("std::_Rb_tree<") and
                 k.endswith("::_M_erase"))
    index = next(k for k in kernels if k.startswith("std::__detail::_Map_base<"))
    assert len(erase) > 150 and len(index) > 300
    assert short_name(erase) == "std::_Rb_tree<…>::_M_erase"
    assert short_name(index) == "std::__detail::_Map_base<…>::operator[]"
    assert short_name("mX_DAE_utils::evaluate_b") == "mX_DAE_utils::evaluate_b"
    streamed = ("std::operator>><char, std::char_traits<char>, std::allocator<char> >"
                "(std::basic_istream<char, std::char_traits<char> >&, std::basic_string<char>&)")
    assert short_name(streamed) == "std::operator>><…>(…)"
    assert short_name("unbalanced<int, std::pair<int, int>::first_type_" + "x" * 40) == \
        "unbalanced<int, std::pair<int, int>::first_type_" + "x" * 40
    alike = [f"solver<{t}, std::vector<{t}, std::allocator<{t}> > >::run" for t in
             ("int", "double")]
    assert short_names([*alike, erase]) == {**{name: name for name in alike},
                                            erase: "std::_Rb_tree<…>::_M_erase"}
    assert figure_name("mX_vector_utils::distributed_vector::distributed_vector", 30) == \
        "mX_vector_util…tributed_vector"


@given(st.text(alphabet="ab:<>(), ", max_size=200), st.integers(10, 80))
def test_a_shortened_name_is_never_longer_and_a_label_fits(name: str, width: int) -> None:
    assert len(short_name(name, width)) <= len(name)
    assert len(figure_name(name, width)) <= max(width, 0)
    assert short_name(name, width) == name or len(name) > width


def test_a_diagnosis_table_names_a_cxx_member_briefly_and_keeps_it_whole_in_html() -> None:
    member = ("std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<std::pair<int "
              "const, int> >, std::less<int>, std::allocator<std::pair<int const, int> > "
              ">::_M_erase")
    table = pd.DataFrame({"kernel": [member, "main"], "share": [0.04, 0.02]})
    section = Section("Ranking", [], table)
    text = to_text([section])
    assert "std::_Rb_tree<…>::_M_erase" in text and "_Select1st" not in text
    assert len(text.splitlines()) == len(to_text([Section("Ranking", [], table.assign(
        kernel=["short", "main"]))]).splitlines())
    page = to_html([section])
    assert f'title="{html.escape(member)}"' in page and ">std::_Rb_tree&lt;…&gt;::_M_erase<" in page
