"""Bad input through the command line: one clear error line, exit code 2, no output file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apmt.model import load_model

HEADER = "kernel,metric,p,value\n"


@pytest.fixture
def fails(cli):
    """Run the command line and check that it failed cleanly, naming what is wrong."""

    def check(args: list[object], output: Path, *fragments: str) -> str:
        run = cli(*args)
        assert run.code == 2, run.out
        lines = run.err.splitlines()
        assert len(lines) == 1, run.err
        assert lines[0].startswith("apmt: error: "), lines[0]
        for fragment in fragments:
            assert fragment in lines[0], (fragment, lines[0])
        assert not output.exists()
        assert not list(output.parent.glob(f".{output.name}*")), "temporary file left"
        return lines[0]

    return check


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def good_rows(ps: tuple[int, ...] = (4, 8, 16, 32, 64)) -> str:
    return "".join(f"solve,time,{p},{1.0 + 100.0 / p}\n" for p in ps)


def fit_args(table: Path, output: Path, *extra: object) -> list[object]:
    return ["fit", table, *extra, "-o", output]


def test_binary_garbage(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "garbage.csv", bytes(range(128, 256)) * 16)
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "not a readable", "byte 0x80")


def test_unbalanced_quotes(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "quotes.csv", HEADER + 'solve,time,4,1.0\n"solve,time,8,2.0\n'
                  + good_rows((16, 32)))
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "EOF inside string", "row")


def test_row_with_a_field_too_many(tmp_path: Path, fails) -> None:
    """pandas would take the first column as an index and shift every column by one."""
    table = write(tmp_path / "fields.csv", HEADER + "solve,time,4,1.0,7\n" + good_rows((8, 16)))
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "row 2 has 5 fields", "4 columns")


def test_text_column_is_not_a_parameter(tmp_path: Path, fails) -> None:
    rows = "".join(f"{line.rstrip()},red\n" for line in good_rows().splitlines())
    table = write(tmp_path / "color.csv", HEADER.rstrip() + ",color\n" + rows)
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "row 2", "'color'", "'red'",
          "not a number")


def test_unknown_column_beside_named_parameters(tmp_path: Path, fails) -> None:
    rows = "".join(f"{line.rstrip()},100,red\n" for line in good_rows().splitlines())
    table = write(tmp_path / "color.csv", HEADER.rstrip() + ",n,color\n" + rows)
    output = tmp_path / "model.json"
    fails(fit_args(table, output, "--param", "n"), output, str(table),
          "unknown column 'color'")


def test_series_with_two_distinct_p(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "few.csv", HEADER + good_rows((4, 8, 8, 4)))
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "series 'solve/time'",
          "2 distinct p (4, 8)")


@pytest.mark.parametrize(("value", "problem"), [
    ("NaN", "value is NaN"), ("", "value is NaN"), ("-2.5", "negative value -2.5"),
    ("0", "zero time 0.0"),
])
def test_bad_value(tmp_path: Path, fails, value: str, problem: str) -> None:
    table = write(tmp_path / "bad.csv", HEADER + good_rows((4,)) + f"solve,time,8,{value}\n"
                  + good_rows((16, 32)))
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "row 3", "'solve'/'time' at p=8",
          problem)


def test_mixed_units(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "units.csv", "kernel,metric,p,value,unit\nsolve,time,4,1.0,s\n"
                  "solve,time,8,600,ms\nsolve,time,16,0.4,s\n")
    output = tmp_path / "model.json"
    fails(fit_args(table, output), output, str(table), "row 3", "'time'", "'ms'", "'s'",
          "mixed units")


def test_one_unit_is_converted(tmp_path: Path, cli) -> None:
    table = write(tmp_path / "ms.csv", "kernel,metric,p,value,unit\n" + "".join(
        f"solve,time,{p},{1000 + 8000 / p},ms\n" for p in (4, 8, 16, 32)))
    run = cli("fit", table, "-o", tmp_path / "model.json")
    assert run.code == 0, run.err
    run = cli("predict", tmp_path / "model.json", "--at", "p=8", "-o", tmp_path / "p.csv")
    solve = pd.read_csv(tmp_path / "p.csv").query("kernel == 'solve'")
    assert solve["predicted"].iloc[0] == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize(("text", "problem"), [
    ("PARAMETER p\nPOINTS 4 8 16\nDATA 1 2\n", "line 3: DATA before any REGION"),
    ("PARAMETER p\nPOINTS 4 8 16\nREGION a\nDATA 1 2\nDATA 1 x2\nDATA 3 3\n",
     "line 5: 'x2' is not a number"),
    ("PARAMETER p\nPOINTS 4 8 16\nREGION a\nDATA 1\nDATA 2\nDATA 3\nDATA 4\n",
     "line 7: region 'a' has more DATA lines than the 3 POINTS"),
])
def test_malformed_extrap_text(tmp_path: Path, fails, text: str, problem: str) -> None:
    source = write(tmp_path / "bad.txt", text)
    output = tmp_path / "table.csv"
    fails(["import", "extrap-text", source, "-o", output], output, str(source), problem)
    assert not Path(f"{output}.provenance.json").exists()


@pytest.mark.parametrize("command", [
    ["fit", "{missing}.csv"], ["evaluate", "{missing}.csv"],
    ["import", "extrap-text", "{missing}.txt"], ["import", "cube", "{missing}"],
    ["import", "collectives", "{missing}.csv"], ["predict", "{missing}.json", "--at", "p=4"],
])
def test_non_existent_file(tmp_path: Path, fails, command: list[str]) -> None:
    missing = tmp_path / "no-such-file"
    output = tmp_path / "out.csv"
    args = [part.format(missing=missing) for part in command]
    fails([*args, "-o", output], output, str(missing))


def test_output_where_a_file_is_in_the_way(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "ok.csv", HEADER + good_rows())
    blocker = write(tmp_path / "blocker", "")
    output = blocker / "model.json"
    message = fails(fit_args(table, output), tmp_path / "model.json", str(blocker))
    assert "Traceback" not in message


@pytest.fixture
def sized_model(tmp_path: Path, cli) -> Path:
    """A small model over p and a size, fitted from synthetic runs."""
    rows = [{"kernel": "solve", "metric": "time", "p": p, "size": size,
             "value": 0.5 + 1e-3 * size / p} for p in (4, 8, 16, 32) for size in (1e3, 2e3, 4e3)]
    table = tmp_path / "sized.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    model = tmp_path / "model.json"
    assert cli("fit", table, "-o", model).code == 0
    return model


@pytest.mark.parametrize(("point", "problem"), [
    ("p=64", "missing parameter 'size'"), ("size=100", "missing parameter 'p'"),
    ("p=64,size=100,colour=2", "unknown name 'colour'"),
    ("p=64,size=big", "size='big' is not a number"),
    ("p=6.5,size=100", "p='6.5' is not a whole number"),
    ("p=64,size=-1", "size='-1' is not a positive number"),
    ("p=64,p=32,size=1", "'p' given twice"),
])
def test_predict_with_a_bad_point(sized_model: Path, fails, point: str, problem: str) -> None:
    output = sized_model.parent / "predictions.csv"
    fails(["predict", sized_model, "--at", "p=8,size=1000", "--at", point, "-o", output],
          output, f"--at {point!r}", problem)


def test_damaged_model_file(sized_model: Path, fails) -> None:
    text = sized_model.read_text().replace('"series"', '"serie"', 1)
    damaged = write(sized_model.parent / "damaged.json", text)
    output = sized_model.parent / "predictions.csv"
    fails(["predict", damaged, "--at", "p=8,size=1000", "-o", output], output, str(damaged),
          "not a valid apmt model")


def test_duplicate_points_are_repetitions(tmp_path: Path, cli) -> None:
    """The same point twice is a second run of it, not an error."""
    table = write(tmp_path / "twice.csv", HEADER + good_rows() + good_rows())
    model = tmp_path / "model.json"
    run = cli("fit", table, "-o", model)
    assert run.code == 0, run.err
    assert run.err == ""
    fitted = load_model(model)
    assert fitted.provenance["max_repetitions"] == 2
    [series] = fitted.series
    assert series.fit.n_points == 5
    predicted, _, _ = series.fit.predict({"p": np.array([16.0])})
    assert predicted[0] == pytest.approx(1.0 + 100.0 / 16, rel=0.01)


def test_duplicate_runs_with_ranks_are_not_summed(tmp_path: Path, cli) -> None:
    """Two runs listed one after the other, each with a row per rank: means over ranks."""
    rows = [{"kernel": "solve", "metric": "time", "p": p, "rank": rank, "value": 2.0 + rank % 2}
            for _ in range(2) for p in (2, 4, 8, 16) for rank in range(p)]
    table = tmp_path / "ranks.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    model = tmp_path / "model.json"
    assert cli("fit", table, "-o", model).code == 0
    fitted = load_model(model)
    assert fitted.provenance["max_repetitions"] == 2
    predicted, _, _ = fitted.series[0].fit.predict({"p": np.array([8.0])})
    assert predicted[0] == pytest.approx(2.5, rel=0.01)


def test_unknown_machine(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "ok.csv", HEADER + good_rows())
    output = tmp_path / "model.json"
    fails(fit_args(table, output, "--machine", "no-such-machine"), output, "no-such-machine",
          "no such machine file")


def test_per_rank_param_that_is_not_a_parameter(tmp_path: Path, fails) -> None:
    table = write(tmp_path / "ok.csv", HEADER + good_rows())
    output = tmp_path / "model.json"
    fails(fit_args(table, output, "--per-rank-param", "n"), output, str(table),
          "--per-rank-param 'n' is not a parameter column")
