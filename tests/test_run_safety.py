"""What a profiling run may not do behind the user's back: run a shell on the command
template, lose a rank's file silently, or leave ranks running after an interrupt.

The runs are real: mpirun starting ``echo`` or a small MPI program from tests/mpi_programs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from apmt.collect.runner import run_study
from apmt.collect.study import load_study
from apmt.errors import ApmtError

REPO = Path(__file__).resolve().parents[1]
HAVE_MPI = bool(shutil.which("mpicc") and shutil.which("mpirun"))
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpicc and mpirun (Open MPI)")


def study_file(folder: Path, name: str = "s", **fields: object) -> Path:
    data = {"name": name, "command": "true {n}", "p": [1], "params": {"n": [1]},
            "backend": "none", "trace_mpi": False, **fields}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ------------------------------------------------------------------ commands without a shell

@needs_mpi
@pytest.mark.parametrize("command", ["echo hello|touch FILE", "echo x$(touch FILE)",
                                     "echo 'a;touch FILE' x`touch FILE`"])
def test_the_template_runs_without_a_shell(tmp_path: Path, command: str) -> None:
    """Shell syntax inside a word is the program's text: nothing creates FILE, and echo
    prints the words as they were typed."""
    study = load_study(study_file(tmp_path, command=command, p=[1, 2], params={}))
    records = run_study(study, tmp_path / "results", [])
    assert [r.status for r in records] == ["ok", "ok"], [r.line() for r in records]
    for record in records:
        assert not (record.run_dir / "FILE").exists()
        assert not list(tmp_path.rglob("FILE"))
        printed = (record.run_dir / "stdout.log").read_text().splitlines()
        words = command.split(" ", 1)[1].replace("'", "")
        assert printed == [words] * record.p, printed


@needs_mpi
def test_placeholders_fill_one_word_each(tmp_path: Path) -> None:
    """A folder with a space stays one argument; ``< FILE`` is the standard input."""
    folder = tmp_path / "a b"
    folder.mkdir()
    (folder / "in.txt").write_text("from stdin\n")
    study = load_study(study_file(folder, command="sh -c 'cat; echo \"$1\"' x {run_dir} "
                                  "< {run_dir}/in.txt", p=[1], params={},
                                  setup=["in.txt"]))
    # sh is the application here (a program like any other), given its words as they are
    record = run_study(study, folder / "results", [])[0]
    assert record.status == "ok", record.line()
    assert (record.run_dir / "stdout.log").read_text().splitlines() == [
        "from stdin", str(record.run_dir)]


@pytest.mark.parametrize(("command", "fragment"), [
    ("app {n:>400000000}", "{n:>400000000}"),
    ("app {p!r}", "{p!r}"),
    ("app {p:05d}", "{p:05d}"),
    ("app {n} | tee out", "'|'"),
    ("app {n} ; rm x", "';'"),
    ("app < in.txt extra", "'<'"),
    ("< in.txt app", "'<'"),
])
def test_bad_templates_are_one_line(tmp_path: Path, command: str, fragment: str) -> None:
    path = study_file(tmp_path, command=command)
    with pytest.raises(ApmtError) as caught:
        load_study(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: field 'command'"), message
    assert fragment in message and len(message) < 300, message
