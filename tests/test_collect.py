"""Measurement: study files, launcher commands, real MPI runs, resume, and the tables.

The runs are real: a small MPI C program (compiled here with mpicc) and LAMMPS, launched with
mpirun. "Prints nothing" is a failure by default (an MPI code that prints nothing usually
did not start or read no input); a study of a silent application sets ``expect_output:
false``. A test double stands in for a counter backend where the test is about the runner
(passes, the ``{rank}`` contract); the real registry and PMPI library are used where they
exist, and those tests say why they skip otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from apmt.collect import rank_exec
from apmt.collect.extract import extract
from apmt.collect.launch import (
    Launcher,
    flavour_of,
    launch_command,
    rank_command,
    slurm_cpus,
)
from apmt.collect.runner import (
    DONE,
    check_runnable,
    make_backends,
    plan,
    run_study,
)
from apmt.errors import ApmtError
from apmt.study import Run, app_command, app_words, load_study, process_grid
from apmt.tables import APP_KERNEL, read_table

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "config" / "studies"
HAVE_MPI = bool(shutil.which("mpicc") and shutil.which("mpirun"))
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpicc and mpirun (Open MPI)")

# mode 1: work and print; 2: exit 1; 3: hang past the time limit; 4: print nothing
APP_SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) double work(long n) {
    volatile double sum = 0;
    for (long i = 0; i < n; i++) sum += i * 0.5;
    return sum;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, mode = argc > 1 ? atoi(argv[1]) : 1;
    long n = argc > 2 ? atol(argv[2]) : 20000000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double local = work(rank == 0 ? n : n / 4), total = 0, token = rank;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (size > 1)
        MPI_Sendrecv_replace(&token, 1, MPI_DOUBLE, (rank + 1) % size, 0,
                             (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (mode == 3) sleep(60);
    if (mode == 2 && rank == 0) fprintf(stderr, "failing on purpose\n");
    if (mode != 4 && rank == 0) printf("total %g\n", total);
    MPI_Finalize();
    return mode == 2 ? 1 : 0;
}
"""


# -------------------------------------------------------------------------------- helpers

@pytest.fixture(scope="module")
def mpi_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test application, built with mpicc."""
    if not HAVE_MPI:
        pytest.skip("needs mpicc and mpirun (Open MPI)")
    folder = tmp_path_factory.mktemp("app")
    (folder / "app.c").write_text(APP_SOURCE)
    subprocess.run(["mpicc", "-O1", "-g", "-o", "app", "app.c"], cwd=folder, check=True)
    return folder / "app"


def study_file(folder: Path, name: str = "s", **fields: object) -> Path:
    """A study file with sensible small defaults, any field overridden."""
    data = {"name": name, "command": "true {n}", "p": [1], "params": {"n": [1]},
            "backend": "none", "trace_mpi": False, **fields}
    data = {key: value for key, value in data.items() if value is not None}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def pmpi_or_none():
    """The real PMPI module, or None while it is not written yet."""
    if importlib.util.find_spec("apmt.collect.pmpi") is None:
        return None
    from apmt.collect import pmpi
    return pmpi


def real_backend(name: str):
    """One pass of a real backend from the registry, or skip saying why."""
    if importlib.util.find_spec("apmt.collect.backends.registry") is None:
        pytest.skip("apmt.collect.backends.registry is not written yet")
    from apmt.collect.backends import registry
    try:
        backends = registry.make_backend(name, None, None)
        for backend in backends:
            backend.check()
    except ApmtError as error:
        pytest.skip(f"backend {name} not usable here: {error}")
    return backends


class FakeBackend:
    """A test double of a counter backend: each rank writes a file named by ``{rank}``
    (the contract of rank_prefix; sh is the double's tool, as valgrind is cachegrind's) and
    parse() turns the files into rows."""

    def __init__(self, name: str = "fake", metric: str = "instructions",
                 simulated: bool = False) -> None:
        self.name, self.metric, self.simulated = name, metric, simulated

    def check(self) -> None:
        pass

    def rank_prefix(self, run_dir: Path) -> list[str]:
        return ["sh", "-c", 'echo 7 > "$0"; exec "$@"', f"{run_dir}/{self.metric}.{{rank}}.txt"]

    def parse(self, run_dir: Path) -> pd.DataFrame:
        rows = [{"kernel": "work", "metric": self.metric, "rank": int(f.name.split(".")[1]),
                 "value": float(f.read_text())}
                for f in sorted(run_dir.glob(f"{self.metric}.*.txt"))]
        return pd.DataFrame(rows)

    def provenance(self) -> dict:
        return {"tool": "fake", "events": [self.metric]}


# ---------------------------------------------------------------------------- study files

BAD_STUDIES = [
    ({"colour": "red"}, ["'colour'", "unknown field"]),
    ({"command": None}, ["'command'", "missing"]),
    ({"params": {"n": [1, 1.0]}}, ["'params'", "'p1_n1_r1'", "twice"]),
    ({"name": "-bad"}, ["'name'", "'-bad'"]),
    ({"command": "app -n {nn}"}, ["'command'", "{nn}", "unknown placeholder"]),
    ({"command": "app {n} > out.txt"}, ["'command'", "'>'"]),
    ({"command": "app a\0b"}, ["'command'", "NUL character"]),
    ({"env": {"X": "a\0b"}}, ["'env.X'", "NUL character"]),
    ({"p": [0, 2]}, ["'p'", "0"]),
    ({"p": "4"}, ["'p'", "'4'"]),
    ({"params": {"n": [-1]}}, ["'params.n'", "-1"]),
    ({"params": {"rank": [1]}, "command": "true"}, ["'rank'", "parameter"]),
    ({"repetitions": 0}, ["'repetitions'", "0"]),
    ({"launcher": "aprun"}, ["'launcher'", "'aprun'"]),
    ({"backend": "papi"}, ["'backend'", "'papi'"]),
    ({"timeout_s": -5}, ["'timeout_s'", "-5"]),
    ({"per_rank_params": ["m"]}, ["'per_rank_params'", "'m'"]),
    ({"points": [{"n": 1}]}, ["'params' and 'points'"]),
    ({"env": {"OMP_NUM_THREADS": "{threads}"}}, ["'env.OMP_NUM_THREADS'", "{threads}"]),
    ({"labels": {"cls": {"n": {2: "S"}}}}, ["'labels.cls.n'", "no label for n = 1"]),
    ({"labels": {"cls": {"m": {1: "S"}}}}, ["'labels.cls'", "'m' is not a parameter"]),
    ({"labels": {"n": {"n": {1: "S"}}}}, ["'labels.n'", "the name is taken"]),
    ({"labels": {"cls": {"n": {1: "S x"}}}}, ["'labels.cls.n.1'", "'S x'", "not a label"]),
    ({"labels": {"cls": ["S"]}}, ["'labels.cls'", "one parameter"]),
    ({"command": "app {n/q}"}, ["'command'", "{n/q}", "or an expression of p"]),
    ({"command": "app {n/(p-1)}"}, ["'command'", "{n/(p-1)}", "no finite value at P=1"]),
]


def test_a_label_names_a_parameters_value_in_the_command(tmp_path: Path) -> None:
    """NPB's class as a parameter: the model sees the problem size, the command the letter."""
    study = load_study(study_file(tmp_path, command="true cg.{cls}.x {n}", p=[1, 4],
                                  params={"n": [1400, 7000]},
                                  labels={"cls": {"n": {1400: "S", 7000: "W", 14000: "A"}}}))
    commands = {(run.p, run.params["n"]): app_command(study, run, tmp_path)
                for run in study.runs()}
    assert commands[(4, 1400)] == "true cg.S.x 1400" and commands[(1, 7000)] == "true cg.W.x 7000"
    assert {run.name for run in study.runs()} == {"p1_n1400_r1", "p1_n7000_r1", "p4_n1400_r1",
                                                  "p4_n7000_r1"}


@pytest.mark.parametrize(("fields", "fragments"), BAD_STUDIES,
                         ids=[next(iter(f)) for f, _ in BAD_STUDIES])
def test_bad_study_is_one_line_naming_field_and_value(tmp_path: Path, fields: dict,
                                                      fragments: list[str]) -> None:
    path = study_file(tmp_path, **fields)
    with pytest.raises(ApmtError) as caught:
        load_study(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_bad_environment_is_caught_before_any_run(tmp_path: Path, cli,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Launcher not installed, program or setup file not found, results folder unwritable:
    exit 2, one line, and no run folder made."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cases = [
        (study_file(tmp_path, "noprogram", command="no-such-program-x {n}"), tmp_path / "r2",
         ["'command'", "'no-such-program-x'", "not found"]),
        (study_file(tmp_path, "nosetup", setup=["missing.in"]), tmp_path / "r3",
         ["'setup'", str(tmp_path / "missing.in"), "not a file"]),
        (study_file(tmp_path, "unwritable"), blocker / "results", [str(blocker / "results"),
                                                                  "not writable"]),
    ]
    (tmp_path / "empty").mkdir()
    cases.append((study_file(tmp_path, "nolauncher", launcher="srun"), tmp_path / "r1",
                  ["'srun'", "not installed"]))  # last: with a PATH that holds no srun
    for path, results, fragments in cases:
        if "srun" in fragments[0]:
            monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        run = cli("profile", path, "--results", results)
        assert run.code == 2, (run.out, run.err)
        lines = run.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("apmt: error: "), run.err
        for fragment in fragments:
            assert fragment in lines[0], (fragment, lines[0])
        assert not (results / "raw").exists()


def test_unknown_backend_on_the_command_line(tmp_path: Path, cli) -> None:
    run = cli("profile", study_file(tmp_path), "--backend", "vtune", "--results", tmp_path)
    assert run.code == 2 and "'vtune'" in run.err and len(run.err.splitlines()) == 1


def test_unknown_event_is_refused_by_the_registry(tmp_path: Path) -> None:
    if importlib.util.find_spec("apmt.collect.backends.registry") is None:
        pytest.skip("apmt.collect.backends.registry is not written yet")
    study = load_study(study_file(tmp_path, backend="perf-events",
                                  metrics=["no_such_metric"]))
    with pytest.raises(ApmtError, match="no_such_metric"):
        make_backends(study)


def test_expansion_product_names_and_placeholders(tmp_path: Path) -> None:
    study = load_study(study_file(tmp_path, command="app -np {p} -s {size} -k {k} {run_dir}",
                                  p=[2, 4], params={"size": [1, 2.5], "k": [3]},
                                  repetitions=2))
    runs = study.runs()
    assert len(runs) == 2 * 2 * 2
    assert [r.name for r in runs[:3]] == ["p2_size1_k3_r1", "p2_size2.5_k3_r1",
                                         "p4_size1_k3_r1"]
    assert runs[4].name == "p2_size1_k3_r2"  # repetitions outermost: interleaved rounds
    line = app_command(study, runs[1], Path("/x/a b"))
    assert line == "app -np 2 -s 2.5 -k 3 '/x/a b'"  # whole numbers without .0, paths quoted
    assert app_words(study, runs[1], Path("/x/a b"))[0][-1] == "/x/a b"   # one word


@given(st.integers(1, 5000))
def test_the_process_grid_is_p_and_as_even_as_p_allows(p: int) -> None:
    """{px} {py} {pz}: three sides whose product is P, largest first, and no other split of
    P into three has a smaller spread between its largest and smallest side."""
    grid = process_grid(p)
    assert grid[0] * grid[1] * grid[2] == p and grid == tuple(sorted(grid, reverse=True))
    others = [(a, b, p // (a * b)) for a in range(1, p + 1) if p % a == 0
              for b in range(1, p // a + 1) if (p // a) % b == 0]
    assert grid[0] - grid[2] == min(max(other) - min(other) for other in others)


def test_the_grid_placeholders_fill_the_command(tmp_path: Path) -> None:
    study = load_study(study_file(tmp_path, command="app -i {px} -j {py} -k {pz} -n {p}",
                                  p=[12, 432], params=None))
    assert [app_command(study, run, tmp_path) for run in study.runs()] == [
        "app -i 3 -j 2 -k 2 -n 12", "app -i 9 -j 8 -k 6 -n 432"]
    with pytest.raises(ApmtError, match="parameter 'px' is not a usable name"):
        load_study(study_file(tmp_path, params={"px": [1]}))


def test_an_expression_fills_the_work_per_rank(tmp_path: Path) -> None:
    """A code that takes its work per rank (HPGMG's boxes per rank) in a strong-scaling
    study: {boxes/p} is the total over P, whole numbers without .0, a fraction as it is; the
    grid's sides count too; a literal brace stays one."""
    study = load_study(study_file(tmp_path, command="app {boxes/p} {2*px} {{x}}",
                                  p=[1, 2, 3, 4], params={"boxes": [64]}))
    assert [app_command(study, run, tmp_path) for run in study.runs()] == [
        "app 64 2 '{x}'", "app 32 4 '{x}'", "app 21.333333333333332 6 '{x}'", "app 16 4 '{x}'"]


SHARE_SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {   /* its work per rank on the command line, as HPGMG's */
    MPI_Init(&argc, &argv);
    int size, rank, mine = atoi(argv[1]), total;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%d boxes\n", total);
    MPI_Finalize();
    return 0;
}
"""


@needs_mpi
def test_a_code_that_takes_its_work_per_rank_runs_strong_scaling(tmp_path: Path) -> None:
    """Real MPI runs of a program that takes its boxes per rank: {boxes/p} keeps the total
    at every P, a strong-scaling study of a code that counts per rank."""
    (tmp_path / "share.c").write_text(SHARE_SOURCE)
    subprocess.run(["mpicc", "-O1", "-o", "share", "share.c"], cwd=tmp_path, check=True)
    study = load_study(study_file(tmp_path, command=f"{tmp_path / 'share'} {{boxes/p}}",
                                  p=[1, 2, 4], params={"boxes": [64]}))
    runs = run_study(study, tmp_path / "res", [])
    assert [run.status for run in runs] == ["ok"] * 3
    printed = [(tmp_path / "res" / "raw" / "s" / run.name / "stdout.log").read_text()
               for run in study.runs()]
    assert printed == ["64 boxes\n"] * 3


GRID_SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size, rank, dims[3], periods[3] = {0, 0, 0};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 3; i++) dims[i] = atoi(argv[i + 1]);
    if (dims[0] * dims[1] * dims[2] != size) {   /* as CoMD refuses a wrong grid */
        if (rank == 0) fprintf(stderr, "grid %dx%dx%d is not %d ranks\n", dims[0], dims[1],
                               dims[2], size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &grid);
    if (rank == 0) printf("grid %dx%dx%d\n", dims[0], dims[1], dims[2]);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
"""


@needs_mpi
def test_a_code_that_takes_its_grid_runs_at_every_p(tmp_path: Path) -> None:
    """Real MPI runs of a program that, as CoMD does, refuses a process grid whose product
    is not its number of ranks: {px} {py} {pz} make it run at P = 1, 3, 4 and 6."""
    (tmp_path / "grid.c").write_text(GRID_SOURCE)
    subprocess.run(["mpicc", "-O1", "-o", "grid", "grid.c"], cwd=tmp_path, check=True)
    study = load_study(study_file(tmp_path, command=f"{tmp_path / 'grid'} {{px}} {{py}} {{pz}}",
                                  p=[1, 3, 4, 6], params=None))
    runs = run_study(study, tmp_path / "res", [])
    assert [run.status for run in runs] == ["ok"] * 4
    printed = [(tmp_path / "res" / "raw" / "s" / run.name / "stdout.log").read_text()
               for run in study.runs()]
    assert printed == ["grid 1x1x1\n", "grid 3x1x1\n", "grid 2x2x1\n", "grid 3x2x1\n"]


def test_points_with_and_without_p(tmp_path: Path) -> None:
    study = load_study(study_file(tmp_path, params=None, p=[6, 24], command="true {n} {m}",
                                  points=[{"n": 4, "m": 1}, {"p": 96, "m": 2, "n": 8}]))
    assert [(r.p, r.params) for r in study.runs()] == [
        (6, {"n": 4.0, "m": 1.0}), (24, {"n": 4.0, "m": 1.0}), (96, {"n": 8.0, "m": 2.0})]
    assert study.runs()[2].name == "p96_n8_m2_r1"


def test_shipped_studies_load() -> None:
    """Every shipped study is valid; the papers' P rules hold (square P for BT/SP,
    6*n^2 for HOMME, powers of two for the other NPB kernels)."""
    studies = {path.stem: load_study(path) for path in sorted(STUDIES.glob("*.yaml"))}
    assert {"lammps-lj", "homme", "cice", "npb-bt", "npb-sp", "npb-cg"} <= set(studies)
    lammps = studies["lammps-lj"]
    assert lammps.p == (1, 2, 3, 4) and lammps.repetitions == 2 and lammps.backend == "auto"
    assert studies["homme"].p == (6, 24, 54, 96, 150)
    assert studies["homme"].volume_ratios == {"p2p": 8.0, "MPI_Bcast": 1.0,
                                              "MPI_Allreduce": 16.0}
    for name in ("npb-bt", "npb-sp"):
        assert all(round(p ** 0.5) ** 2 == p for p in studies[name].p)
    for name in ("npb-cg", "npb-mg", "npb-ft", "npb-lu", "npb-ep"):
        assert all(p & (p - 1) == 0 for p in studies[name].p), name
    for name in ("npb-bt", "npb-sp", "npb-cg", "npb-mg", "npb-ft", "npb-lu", "npb-ep"):
        study = studies[name]          # the class is a parameter: a size, and its letter
        run = study.runs()[0]
        bench = name.split("-")[1]
        assert app_command(study, run, Path(".")).endswith(f"/{bench}.C.x"), name
        (param, letters), = study.labels.values()
        size_of = {letter: size for size, letter in letters.items()}
        sizes = [size_of[letter] for letter in "SWABCDE"]   # growing with the class
        assert sizes == sorted(set(sizes)) and list(run.params) == [param], name
    for study in studies.values():     # NPB: one file for mpirun here and srun under Slurm
        if study.name != "lammps-lj":
            assert study.launcher == ("auto" if study.name.startswith("npb") else "srun")
            assert study.srun_mpi == "pmix"


# ------------------------------------------------------------------------------ launchers

OPENMPI = Launcher("mpirun", "openmpi", "mpirun (Open MPI) 4.1.4")


@pytest.mark.parametrize(("p", "root", "expected"), [
    (2, False, ["mpirun", "-np", "2"]),
    (2, True, ["mpirun", "--allow-run-as-root", "-np", "2"]),
    (3, False, ["mpirun", "--oversubscribe", "-np", "3"]),
    (4, True, ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4"]),
])
def test_open_mpi_root_and_oversubscription(p: int, root: bool, expected: list[str]) -> None:
    assert launch_command(OPENMPI, p, ["app"], cpus=2, as_root=root) == [*expected, "app"]


def test_mpich_and_srun_commands() -> None:
    hydra = Launcher("mpiexec", flavour_of("mpiexec", "HYDRA build details:\n Version: 4.0"),
                     "HYDRA build details:", ("-bind-to", "core"))
    assert launch_command(hydra, 8, ["app"], cpus=2, as_root=True) == [
        "mpiexec", "-n", "8", "-bind-to", "core", "app"]
    srun = Launcher("srun", flavour_of("srun", "slurm 22.05.8"), "slurm 22.05.8",
                    srun_mpi="pmix")
    assert launch_command(srun, 4, ["app"], cpus=2, as_root=True) == [
        "srun", "-n", "4", "--overcommit", "--mpi=pmix", "app"]
    assert launch_command(srun, 2, ["app"], cpus=2, as_root=False) == [
        "srun", "-n", "2", "--mpi=pmix", "app"]
    assert flavour_of("mpirun", "mpirun (Open MPI) 4.1.4") == "openmpi"


def test_slurm_allocation_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_CPUS_PER_NODE", "2(x3),1")
    assert slurm_cpus() == 7


RANK_PREFIX = ["env", "FROM_PREFIX=rank{rank}"]
RANK_PROGRAM = ["sh", "-c", 'echo "$FROM_PREFIX $APMT_RANK $GREETING $0 $$"; cat', "{rank}"]


def start_rank(tmp_path: Path, environ: dict[str, str], prefix: list[str], app: list[str],
               stdin: str | None) -> subprocess.CompletedProcess:
    """One rank started as a launcher starts it: apmt's exec shim, in the run folder."""
    command = rank_command(tmp_path, prefix, app, stdin, {"GREETING": "hello world"})
    clean = {k: v for k, v in os.environ.items() if k not in rank_exec.RANK_VARIABLES}
    return subprocess.run(command, env={**clean, **environ}, cwd=tmp_path,
                          capture_output=True, text=True, check=False)


def test_the_rank_start_finds_the_rank_and_sets_variables(tmp_path: Path) -> None:
    """Each launcher's rank variable (none: rank 0), the variables set, ``{rank}`` filled
    in the backend's words and not in the application's, the standard input, and the
    process id in rank.<rank>.pid: the application's own (exec), as it prints it."""
    (tmp_path / "in.txt").write_text("from stdin\n")
    for variable, rank in [("OMPI_COMM_WORLD_RANK", "3"), ("PMI_RANK", "5"),
                           ("SLURM_PROCID", "7"), ("PMIX_RANK", "9"), (None, "0")]:
        done = start_rank(tmp_path, {variable: rank} if variable else {}, RANK_PREFIX,
                          RANK_PROGRAM, "in.txt")
        assert done.returncode == 0, done.stderr
        first, second = done.stdout.splitlines()
        assert first.rsplit(" ", 1)[0] == f"rank{rank} {rank} hello world {{rank}}"
        assert (tmp_path / f"rank.{rank}.pid").read_text() == f"{first.rsplit(' ', 1)[1]}\n"
        assert second == "from stdin"


def test_the_rank_start_hands_on_no_ignored_signal(tmp_path: Path) -> None:
    """Python ignores SIGPIPE and SIGXFSZ and an ignored signal stays ignored across exec:
    the shim gives them back their default, so the application gets what a shell gives."""
    done = start_rank(tmp_path, {}, [], ["grep", "^SigIgn:", "/proc/self/status"], None)
    assert done.returncode == 0, done.stderr
    ignored = int(done.stdout.split()[1], 16)
    for signum in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (signum - 1)), (signum, done.stdout)


def test_a_rank_that_cannot_start_says_why_in_one_line(tmp_path: Path) -> None:
    """Exit statuses as a shell gives them: 127 for a program not found, 126 for one that
    cannot run; 1 for a standard input that is not there."""
    (tmp_path / "plain.txt").write_text("not a program\n")
    cases = [(["no-such-program"], "in.txt", 127, "no-such-program: cannot run"),
             ([str(tmp_path / "plain.txt")], "in.txt", 126, "plain.txt: cannot run"),
             (["true"], "gone.txt", 1, "gone.txt: cannot open as standard input")]
    (tmp_path / "in.txt").write_text("")
    for app, stdin, status, fragment in cases:
        done = start_rank(tmp_path, {"PMI_RANK": "2"}, [], app, stdin)
        assert done.returncode == status, done.stderr
        assert done.stderr.startswith("apmt rank 2: ") and fragment in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


@needs_mpi
def test_dry_run_prints_commands_and_runs_nothing(tmp_path: Path, cli) -> None:
    path = study_file(tmp_path, p=[1, 3], params={"n": [5]}, command="true {n}")
    run = cli("profile", path, "--results", tmp_path / "res", "--dry-run")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert len(lines) == 2 and "-np 1 " in lines[0] and "--oversubscribe -np 3 " in lines[1]
    assert "true 5" in lines[1]
    assert not (tmp_path / "res").exists()


# ----------------------------------------------------------------------------- real runs

@pytest.fixture(scope="module")
def good_study(mpi_app: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The test application at P = 1 and 3 (3 oversubscribes 2 cores), 2 repetitions,
    backend none, traced with PMPI when the library exists; run once for several tests."""
    folder = tmp_path_factory.mktemp("good")
    traced = pmpi_or_none() is not None
    path = study_file(folder, "good", command=f"{mpi_app} 1 {{n}}", p=[1, 3],
                      params={"n": [2000000]}, repetitions=2, trace_mpi=traced)
    study = load_study(path)
    results = folder / "results"
    start = time.monotonic()
    records = run_study(study, results, [])
    return {"study": study, "results": results, "records": records, "traced": traced,
            "seconds": time.monotonic() - start}


def test_runs_record_what_ran(good_study: dict) -> None:
    records = good_study["records"]
    assert [r.status for r in records] == ["ok"] * 4
    assert [r.run for r in records] == ["p1_n2000000_r1", "p3_n2000000_r1", "p1_n2000000_r2",
                                        "p3_n2000000_r2"]
    cores = len(os.sched_getaffinity(0))
    assert [r.oversubscribed for r in records] == [False, cores < 3, False, cores < 3]
    info = json.loads((records[1].run_dir / "run.json").read_text())
    assert info["p"] == 3 and info["rep"] == 1 and info["params"] == {"n": 2000000.0}
    assert info["exit_status"] == 0 and not info["timed_out"] and info["wall_time_s"] > 0
    assert info["versions"]["mpi"] != "unknown" and len(info["versions"]["application"]
                                                        ["sha256"]) == 64
    assert info["cpu_mhz"] == "unknown" or info["cpu_mhz"] > 0
    assert info["host"] and info["command"]["app"].endswith("app 1 2000000")
    assert "total" in (records[1].run_dir / "stdout.log").read_text()
    assert (records[1].run_dir / DONE).exists()


def test_resume_skips_finished_runs(good_study: dict) -> None:
    study, results = good_study["study"], good_study["results"]
    stamps = {r.run: (r.run_dir / "run.json").stat().st_mtime_ns
              for r in good_study["records"]}
    start = time.monotonic()
    again = run_study(study, results, [])
    assert [r.status for r in again] == ["skipped"] * 4
    assert time.monotonic() - start < 0.5 * good_study["seconds"]
    assert {r.run: (r.run_dir / "run.json").stat().st_mtime_ns for r in again} == stamps


def test_interrupted_run_is_moved_aside_and_redone(good_study: dict) -> None:
    study, results = good_study["study"], good_study["results"]
    victim = good_study["records"][0].run_dir
    (victim / DONE).unlink()  # as if the run had been interrupted
    (victim / "marker").write_text("old")
    again = run_study(study, results, [])
    assert [r.status for r in again] == ["ok", "skipped", "skipped", "skipped"]
    aside = list(victim.parent.glob(f"{victim.name}.failed-*"))
    assert len(aside) == 1 and (aside[0] / "marker").read_text() == "old"
    assert (victim / DONE).exists() and not (victim / "marker").exists()


def test_extract_writes_valid_tables(good_study: dict) -> None:
    study, results = good_study["study"], good_study["results"]
    measurements, comm = extract(results, study, [])
    table = read_table(results / "good" / "measurements.csv", params=["n"])
    assert len(table) == len(measurements) == 2 * 1 + 2 * 3  # one <app> row per rank
    assert set(table["kernel"]) == {APP_KERNEL}
    assert (table["value"] > 0).all()
    per_run = table.groupby(["p", "rep"])["rank"].nunique()
    assert per_run.to_dict() == {(1, 1): 1, (1, 2): 1, (3, 1): 3, (3, 2): 3}
    record = json.loads((results / "good" / "measurements.csv.provenance.json").read_text())
    assert record["p_values"] == [1, 3] and record["repetitions"] == 2
    assert record["backends"][0]["name"] == "none"
    if len(os.sched_getaffinity(0)) < 3:
        assert sorted(record["oversubscribed_runs"]) == ["p3_n2000000_r1", "p3_n2000000_r2"]
    if good_study["traced"]:
        traced = read_table(results / "good" / "comm.csv", "communication", ["n"])
        allreduce = traced[(traced["op"] == "MPI_Allreduce") & (traced["p"] == 3)]
        assert set(allreduce["rank"]) == {0, 1, 2} and (allreduce["calls"] >= 1).all()
    else:
        assert comm.empty


def test_real_pmpi_traces_the_runs(good_study: dict) -> None:
    if not good_study["traced"]:
        pytest.skip("apmt.collect.pmpi is not written yet")
    assert (good_study["results"] / "good" / "comm.csv").exists()


@needs_mpi
def test_failing_runs_are_reported_and_the_others_go_on(mpi_app: Path, tmp_path: Path,
                                                         cli) -> None:
    """Exit 1, a hang past the limit, and silence: each a one-line error naming the run and
    its log; the good run is extracted; the command exits 1."""
    path = study_file(tmp_path, "bad", command=f"{mpi_app} {{mode}} 1000", p=[2],
                      params={"mode": [1, 2, 3, 4]}, timeout_s=5)
    start = time.monotonic()
    run = cli("profile", path, "--results", tmp_path / "res")
    assert time.monotonic() - start < 25  # Open MPI takes ~2 s to end a failed job
    assert run.code == 1, (run.out, run.err)
    lines = {line.split(":")[0]: line for line in run.out.splitlines() if line.startswith("p2")}
    raw = tmp_path / "res" / "raw" / "bad"
    assert lines["p2_mode1_r1"].startswith("p2_mode1_r1: ok")
    for name, reason in [("p2_mode2_r1", "exit status 1"), ("p2_mode3_r1", "timed out"),
                         ("p2_mode4_r1", "printed nothing")]:
        assert reason in lines[name] and str(raw / name / "stderr.log") in lines[name]
        assert (raw / name / "stderr.log").exists() and not (raw / name / DONE).exists()
    assert "failing on purpose" in (raw / "p2_mode2_r1" / "stderr.log").read_text()
    info = json.loads((raw / "p2_mode3_r1" / "run.json").read_text())
    assert info["timed_out"] and not info["ok"]
    assert "3 of 4 runs failed" in run.err
    table = read_table(tmp_path / "res" / "bad" / "measurements.csv", params=["mode"])
    assert set(table["mode"]) == {1}
    leftovers = subprocess.run(["pgrep", "-f", str(mpi_app)], capture_output=True, text=True)
    assert leftovers.stdout == "", "a rank outlived its run"


@needs_mpi
def test_silence_is_fine_when_the_study_says_so(mpi_app: Path, tmp_path: Path) -> None:
    study = load_study(study_file(tmp_path, command=f"{mpi_app} 4 1000",
                                  params=None, expect_output=False))
    assert [r.status for r in run_study(study, tmp_path / "res", [])] == ["ok"]


@needs_mpi
def test_backend_passes_and_the_rank_contract(mpi_app: Path, tmp_path: Path) -> None:
    """A backend of two passes (test double): two folders per run, each rank's files named
    by {rank}, the metrics of both passes in one table, the <app> time (and the MPI trace)
    from the pass that is not simulated."""
    study = load_study(study_file(tmp_path, command=f"{mpi_app} 1 {{n}}", p=[1, 2],
                                  params={"n": [1000]}, trace_mpi=pmpi_or_none() is not None))
    backends = [FakeBackend("fake-a", "instructions", simulated=True),
                FakeBackend("fake-b", "cycles")]
    records = run_study(study, tmp_path / "res", backends)
    assert [r.run for r in records] == ["p1_n1000_r1", "p1_n1000_r1.pass2",
                                        "p2_n1000_r1", "p2_n1000_r1.pass2"]
    measurements, _ = extract(tmp_path / "res", study, backends)
    work = measurements[measurements["kernel"] == "work"]
    assert sorted(work.groupby("metric")["rank"].apply(sorted).to_dict().items()) == [
        ("cycles", [0, 0, 1]), ("instructions", [0, 0, 1])]
    app = measurements[measurements["kernel"] == APP_KERNEL]
    walls = {r.p: r.wall_time_s for r in records if r.pass_index == 1}
    assert len(app) == 3 and all(app["value"] == app["p"].map(walls))
    traced = [json.loads((r.run_dir / "run.json").read_text())["trace_mpi"] for r in records]
    assert traced == [False, study.trace_mpi] * 2
    with pytest.raises(ApmtError, match="backend"):  # a rerun with another backend
        check_runnable(study, tmp_path / "res", [FakeBackend("other")])


@needs_mpi
def test_a_simulated_pass_runs_in_the_first_repetition_only(mpi_app: Path,
                                                            tmp_path: Path) -> None:
    """Simulated counts are deterministic: the second repetition skips that (slow) pass, and
    the table still holds its counts once and the timing pass's twice."""
    study = load_study(study_file(tmp_path, command=f"{mpi_app} 1 {{n}}", p=[1],
                                  params={"n": [1000]}, repetitions=2, trace_mpi=False))
    backends = [FakeBackend("fake-b", "cycles"),
                FakeBackend("fake-a", "instructions", simulated=True)]
    records = run_study(study, tmp_path / "res", backends)
    assert [r.run for r in records] == ["p1_n1000_r1", "p1_n1000_r1.pass2", "p1_n1000_r2"]
    measurements, _ = extract(tmp_path / "res", study, backends)
    work = measurements[measurements["kernel"] == "work"]
    assert work.groupby("metric")["rep"].apply(sorted).to_dict() == {
        "cycles": [1, 2], "instructions": [1]}


@needs_mpi
def test_real_perf_clock_backend(mpi_app: Path, tmp_path: Path) -> None:
    backends = real_backend("perf-clock")
    study = load_study(study_file(tmp_path, command=f"{mpi_app} 1 {{n}}", p=[1, 2],
                                  params={"n": [100000000]}, backend="perf-clock"))
    records = run_study(study, tmp_path / "res", backends)
    assert all(r.status == "ok" for r in records), [r.line() for r in records]
    measurements, _ = extract(tmp_path / "res", study, backends)
    work = measurements[(measurements["kernel"] == "work") & (measurements["metric"] == "time")]
    assert set(work["p"]) == {1, 2} and (work["value"] > 0).all()
    assert set(work.loc[work["p"] == 2, "rank"]) == {0, 1}


@pytest.fixture
def local_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point this process at the repository's single-node Slurm when it is running
    (scripts/slurm-local.sh start); this test does not start or stop it."""
    script = REPO / "scripts" / "slurm-local.sh"
    if not script.is_file():
        pytest.skip("no scripts/slurm-local.sh")
    try:
        status = subprocess.run(["bash", str(script), "status"], capture_output=True,
                                text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.skip("the local Slurm does not answer")
    conf = re.search(r"SLURM_CONF=(\S+)", status.stdout)
    path = re.search(r"PATH=([^:\s]+):", status.stdout)
    if status.returncode != 0 or not conf or not path:
        pytest.skip("the local Slurm is not running (bash scripts/slurm-local.sh start)")
    monkeypatch.setenv("SLURM_CONF", conf.group(1))
    monkeypatch.setenv("PATH", f"{path.group(1)}:{os.environ['PATH']}")


@needs_mpi
def test_srun_under_the_local_slurm(mpi_app: Path, tmp_path: Path, local_slurm) -> None:
    """srun with the pmix plugin: every rank finds its rank ({rank} from SLURM_PROCID), more
    tasks than CPUs get --overcommit and are recorded as oversubscribed."""
    study = load_study(study_file(tmp_path, command=f"{mpi_app} 1 {{n}}", p=[1, 3],
                                  params={"n": [1000]}, launcher="srun", srun_mpi="pmix",
                                  timeout_s=60))
    records = run_study(study, tmp_path / "res", [FakeBackend()])
    assert [r.status for r in records] == ["ok", "ok"], [r.line() for r in records]
    info = json.loads((records[1].run_dir / "run.json").read_text())
    assert info["command"]["launcher"][:3] == ["srun", "-n", "3"]
    assert "--mpi=pmix" in info["command"]["launcher"]
    assert ("--overcommit" in info["command"]["launcher"]) == info["oversubscribed"]
    assert sorted(p.name for p in records[1].run_dir.glob("instructions.*.txt")) == [
        "instructions.0.txt", "instructions.1.txt", "instructions.2.txt"]


def test_plan_starts_each_rank_through_the_exec_shim(tmp_path: Path) -> None:
    """The launcher runs apmt's shim (Python, isolated, no site) with the run's variables,
    then the backend's words and the template's, with no shell anywhere."""
    study = load_study(study_file(tmp_path, p=[2], command="true {n} < {run_dir}/in.txt",
                                  env={"GREETING": "hi {p}"}))
    launcher = Launcher("mpirun", "openmpi", "x")
    planned = plan(study, tmp_path, [FakeBackend()], launcher)[0]
    shim = planned.command[planned.command.index("-np") + 2:]
    run_dir = str(planned.run_dir)
    assert shim == [sys.executable, "-I", "-S", rank_exec.__file__, "--pid-dir", run_dir,
                    "--env", "GREETING=hi 2", "--stdin", f"{run_dir}/in.txt", "--prefix", "4",
                    "--", *FakeBackend().rank_prefix(planned.run_dir), "true", "1"]
    assert planned.rank_line.endswith(f"{run_dir}/instructions.{{rank}}.txt' true 1 < "
                                      f"{run_dir}/in.txt")
    assert "/bin/sh" not in planned.command


def test_run_names_are_unique_for_distinct_points() -> None:
    names = {Run(p, {"a": a, "b": b}, 1).name for p in (1, 2) for a in (1, 1.5)
             for b in (10, 100)}
    assert len(names) == 8


# ---------------------------------------------------------------------------------- LAMMPS

@pytest.mark.slow
@needs_mpi
@pytest.mark.skipif(shutil.which("lmp") is None, reason="needs LAMMPS (lmp)")
def test_lammps_end_to_end(tmp_path: Path, cli) -> None:
    """The shipped LAMMPS study at a tiny size and P = 1, 2, through `apmt profile`: LAMMPS'
    own functions with time > 0 on every rank when perf cpu-clock sampling works here."""
    data = yaml.safe_load((STUDIES / "lammps-lj.yaml").read_text())
    data.update(p=[1, 2], params={"size": [0.4]}, repetitions=1,
                setup=[str(REPO / "data" / "lammps" / "in.lj")])
    backend = "none"
    if importlib.util.find_spec("apmt.collect.backends.registry") is not None:
        real_backend("perf-clock")
        backend = "perf-clock"
    data["trace_mpi"] = pmpi_or_none() is not None
    path = tmp_path / "lammps-lj.yaml"
    path.write_text(yaml.safe_dump(data))
    run = cli("profile", path, "--results", tmp_path / "res", "--backend", backend)
    assert run.code == 0, (run.out, run.err)
    table = read_table(tmp_path / "res" / "lammps-lj" / "measurements.csv", params=["size"])
    app = table[table["kernel"] == APP_KERNEL]
    assert (app["value"] < 5).all() and set(app["p"]) == {1, 2}
    if backend == "perf-clock":
        pair = table[table["kernel"].str.contains("PairLJCut::compute", regex=False)
                     & (table["metric"] == "time")]
        assert set(zip(pair["p"], pair["rank"], strict=True)) == {(1, 0), (2, 0), (2, 1)}
        assert (pair["value"] > 0).all()
