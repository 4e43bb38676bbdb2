"""Every reader of outside input against mutated copies of the real files the project carries
(benchmarks/fuzz.py, a few hundred inputs per reader here), and the damaged inputs issue 17
named one by one: each ends in one line naming the file and value, never in a traceback, a
hang or garbage taken for data."""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from conftest import load_benchmark

from apmt.collect.backends.cachegrind import Cachegrind
from apmt.errors import ApmtError
from apmt.ingest import import_profiles
from apmt.machine import load_machine
from apmt.study import load_study
from apmt.tables import read_table

REPOSITORY = Path(__file__).resolve().parents[1]
DATA = REPOSITORY / "data"
FIXTURES = Path(__file__).parent / "fixtures"


fuzz = load_benchmark("fuzz")
# inputs per reader: a few hundred; fewer where one input takes long (a 440 kB cachegrind file)
INPUTS = {"cachegrind output": 40, "machine": 150, "event file": 150, "perf output": 150}


@pytest.mark.filterwarnings("ignore:Detected invalid checksum")   # pycubexr, damaged tars
@pytest.mark.parametrize("reader", list(fuzz.readers()))
def test_mutated_inputs_end_in_one_line_or_good_data(reader: str) -> None:
    outcomes = fuzz.fuzz(reader, INPUTS.get(reader, 200), base_seed=1717, time_limit=10)
    counts = Counter(outcome.kind for outcome in outcomes)
    bad = [f"{o.kind}: {o.detail} [{o.how}]" for o in outcomes if o.kind in fuzz.BAD]
    assert not bad, "\n".join(bad[:10])
    assert counts["rejected"] > len(outcomes) // 4, counts    # the mutations do damage
    rejected = [o.detail for o in outcomes if o.kind == "rejected"]
    assert all("Traceback" not in line and "\n" not in line for line in rejected)


def test_the_mutations_reach_what_they_claim() -> None:
    rng = fuzz.random.Random(3)
    seed = (DATA / "relearn" / "relearn_data.txt").read_bytes()
    assert fuzz.MUTATIONS["truncate"](seed, rng) != seed
    numbers = {fuzz.MUTATIONS["number"](seed, fuzz.random.Random(i)) for i in range(50)}
    assert any(b"nan" in n.lower() or b"inf" in n for n in numbers)
    assert any(b"9" * 400 in n for n in numbers)
    utf16 = fuzz.MUTATIONS["encoding"](seed, fuzz.random.Random(0))
    assert utf16 != seed


def test_the_harness_counts_a_traceback_a_hang_and_garbage(monkeypatch) -> None:
    """The suite above would pass on a harness that counted nothing: check it counts."""
    reader = fuzz.readers()["extrap-text"]
    for read, kind in ((lambda path, seed: 1 / 0, "uncaught"),
                       (lambda path, seed: [0 for _ in iter(int, 1)], "hang"),
                       (lambda path, seed: "garbage", "garbage"),
                       (lambda path, seed: (_ for _ in ()).throw(ApmtError("x: bad")),
                        "unnamed")):
        broken = fuzz.Reader(reader.seeds, read, lambda result: result if result else "")
        monkeypatch.setattr(fuzz, "readers", lambda broken=broken: {"x": broken})
        assert fuzz.fuzz("x", 1, time_limit=0.5)[0].kind == kind


# ---------------------------------------------------------------- the cases, by hand


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message and message
    return message


def measurements(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "m.csv"
    path.write_text("kernel,metric,p,value\n" + rows)
    return path


@pytest.mark.parametrize(("rows", "expected"), [
    ("solve,time,0,1.0\n", "column 'p': 0 is not a whole number from 1 to 2147483647"),
    ("solve,time,1e20,1.0\n", "column 'p': 1e+20 is not a whole number from 1"),
    ("solve,time,inf,1.0\n", "column 'p': inf is not a whole number"),
    ("solve,time,4,1e308\n", "column 'value': 1e+308 is not a finite number of at most"),
    ("solve,time,4,inf\n", "column 'value': inf is not a finite number"),
    (f"solve,time,4,{'9' * 400}\n", "column 'value': 999999999"),
    ("solve,time,4,true\nsolve,time,8,false\n", "column 'value': True is not a number"),
])
def test_absurd_numbers_in_a_table_are_named(tmp_path: Path, rows: str, expected: str) -> None:
    with pytest.raises(ApmtError) as error:
        read_table(measurements(tmp_path, rows))
    assert "row 2" in one_line(error) and expected in one_line(error), one_line(error)
    assert "zero time" not in one_line(error) and "negative p" not in one_line(error)


@pytest.mark.parametrize(("column", "value", "expected"), [
    ("size", "-3", "parameter 'size' is -3.0"), ("size", "nan", "parameter 'size' is nan"),
    ("size", "inf", "column 'size': inf is not a finite number"),
    ("rank", "nan", "column 'rank' is empty"), ("rank", "-1", "column 'rank': -1"),
    ("rank", "4", "rank 4 is not below p"),
])
def test_bad_parameters_and_ranks_are_named(tmp_path: Path, column: str, value: str,
                                            expected: str) -> None:
    path = tmp_path / "m.csv"
    path.write_text(f"kernel,metric,p,{column},value\nsolve,time,4,1,1.0\n"
                    f"solve,time,4,{value},2.0\n")
    with pytest.raises(ApmtError) as error:
        read_table(path)
    assert "row 3" in one_line(error) and expected in one_line(error), one_line(error)


def test_a_directory_given_to_import_is_called_a_directory(tmp_path: Path, cli) -> None:
    for fmt in ("extrap-text", "collectives", "caliper"):
        run = cli("import", fmt, tmp_path, "-o", tmp_path / "out.csv")
        assert run.code == 2
        assert f"{tmp_path}: is a directory, not a file" in run.err, run.err


@pytest.mark.parametrize(("field", "value"), [("frequency_ghz", ".nan"), ("l1", ".inf"),
                                              ("frequency_ghz", "1e400"), ("llc", "true")])
def test_machine_file_with_nan_or_infinity_is_refused(tmp_path: Path, field: str,
                                                      value: str) -> None:
    text = (REPOSITORY / "apmt" / "data" / "machines" / "haswell-e5-2698v3.yaml").read_text()
    lines = [f"{line.split(':')[0]}: {value}" if line.strip().startswith(f"{field}:")
             else line for line in text.splitlines()]
    path = tmp_path / "machine.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ApmtError) as error:
        load_machine(path)
    assert str(path) in one_line(error) and field in one_line(error)
    assert "must be a number" in one_line(error)


def test_a_binary_machine_file_names_the_byte_and_line(tmp_path: Path) -> None:
    path = tmp_path / "machine.yaml"
    path.write_bytes(b"name: x\nfrequency_ghz: 2\xff\n")
    with pytest.raises(ApmtError) as error:
        load_machine(path)
    assert one_line(error) == (f"{path}: line 2: byte 0xff is not UTF-8 text (a binary file, "
                               "or another encoding?)")


def test_a_caliper_node_that_is_its_own_parent_is_refused(tmp_path: Path) -> None:
    """caliperreader would follow the node's parent for ever."""
    text = (DATA / "lulesh_caliper_opal" / "27_cores.cali").read_text()
    node = "__rec=node,id=101,attr=15,data=regionprofile"
    assert node + "\n" in text
    path = tmp_path / "27_cores.cali"
    path.write_text(text.replace(node, node + ",parent=101"))
    with pytest.raises(ApmtError) as error:
        import_profiles("caliper", [path])
    assert "node '101' is its own parent" in one_line(error) and str(path) in one_line(error)


def test_a_caliper_value_of_null_is_named(tmp_path: Path) -> None:
    text = (DATA / "lulesh_caliper_opal" / "27_cores.cali").read_text()
    path = tmp_path / "27_cores.cali"
    record = "ref=36=101,attr=86=89=92=96=94=99,data=0.000218=0.004587=0.001465=0.039554=27="
    assert record + "0.039554\n" in text                  # a region's sum over the ranks
    path.write_text(text.replace(record + "0.039554\n", record + "null\n"))
    with pytest.raises(ApmtError) as error:
        import_profiles("caliper", [path])
    assert "is 'null', not a finite number" in one_line(error)


def test_a_cube_profile_claiming_2_to_62_blocks_is_refused_before_decompressing(
        tmp_path: Path) -> None:
    source = DATA / "scorep_counters" / "mm_cubeset" / "mm.x1y1z1.r1" / "profile.cubex"
    with tarfile.open(source) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    damaged = 0
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member, content in members:
            if content.startswith(b"ZCUBEX.DATA"):
                content = content[:11] + (2 ** 62).to_bytes(8, "little") + content[19:]
                damaged += 1
            tar.addfile(member, io.BytesIO(content))
    assert damaged
    run = tmp_path / "mm.x1y1z1.r1"
    run.mkdir()
    (run / "profile.cubex").write_bytes(out.getvalue())
    with pytest.raises(ApmtError) as error:
        import_profiles("cube", [run])
    assert "4611686018427387904 compressed blocks claimed" in one_line(error)


@pytest.mark.parametrize(("line", "expected"), [
    ("repetitions: 1000000000000", "'repetitions': 1000000000000 is not a whole number from 1"),
    ("p: [1, 2, 1180591620717411303424]", "is not a process count from 1 to 2147483647"),
    ("params: {size: [.inf]}", "'params.size': inf is not a positive number"),
    ("timeout_s: .nan", "'timeout_s': nan is not a number"),
])
def test_a_study_with_absurd_numbers_is_refused(tmp_path: Path, line: str,
                                                expected: str) -> None:
    path = tmp_path / "study.yaml"
    key = line.split(":")[0]
    body = {"p": "p: [1, 2]", "repetitions": "repetitions: 2", "params": "params: {size: [1]}",
            "timeout_s": "timeout_s: 60"}
    body[key] = line
    path.write_text("command: app {size}\n" + "\n".join(body.values()) + "\n")
    with pytest.raises(ApmtError) as error:
        load_study(path)
    assert expected in one_line(error), one_line(error)


def test_a_study_of_too_many_runs_is_counted_not_listed(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    sizes = ", ".join(str(n) for n in range(1, 501))
    path.write_text(f"command: app {{size}}\np: [1, 2, 4, 8]\nparams: {{size: [{sizes}]}}\n"
                    "repetitions: 100\n")
    with pytest.raises(ApmtError) as error:
        load_study(path)
    assert "2000 points x 100 repetitions make 200000 runs, more than 100000" in one_line(error)


def test_a_byte_0xff_in_a_cachegrind_file_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    text = gzip.decompress((FIXTURES / "cachegrind" / "cachegrind.0.out.gz").read_bytes())
    (run / "cachegrind.0.out").write_bytes(text[:1000] + b"\xff" + text[1000:])
    with pytest.raises(ApmtError) as error:
        Cachegrind(load_machine("haswell-e5-2698v3")).parse(run)
    assert "cachegrind.0.out: line" in one_line(error) and "byte 0xff" in one_line(error)
    (run / "cachegrind.0.out").write_bytes(text.replace(b"\n0 ", b"\n0 \xc2\xb2", 1))
    with pytest.raises(ApmtError) as error:          # '²' passes str.isdigit, not int
        Cachegrind(load_machine("haswell-e5-2698v3")).parse(run)
    assert "expected up to" in one_line(error)


def test_a_cut_run_record_is_called_damaged(tmp_path: Path) -> None:
    from apmt.collect.extract import _app_rows
    from apmt.study import Run
    run = tmp_path / "p2_r1"
    shutil.copytree(FIXTURES / "run-record", run)
    text = (run / "run.json").read_text()
    (run / "run.json").write_text(text[:len(text) // 2])
    with pytest.raises(ApmtError) as error:
        _app_rows(Run(2, {}, 1), run)
    assert "run.json: damaged: not valid JSON" in one_line(error)
    (run / "run.json").write_text(text.replace('"wall_time_s": 0.', '"wall_time_s": -0.'))
    with pytest.raises(ApmtError) as error:
        _app_rows(Run(2, {}, 1), run)
    assert "field 'wall_time_s' is -0.41" in one_line(error)


def test_diagnose_of_a_missing_folder_says_so(tmp_path: Path, cli) -> None:
    run = cli("diagnose", tmp_path / "results" / "lammps", "--results", tmp_path / "r")
    assert run.code == 2
    assert run.err.strip() == (f"apmt: error: {tmp_path / 'results' / 'lammps'}: no such "
                               "study folder, nor a program")
