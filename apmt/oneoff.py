"""``apmt diagnose -- mpirun -np 4 ./app args``: measure a command once, then diagnose it.
An orchestration above measurement (apmt.collect) and the diagnosis (apmt.diagnose), which
know nothing of each other.

The command becomes a one-off study (``<results>/diagnose/<name>/study.yaml``, the name being
the program's unless given): P from the launcher's ``-np``/``-n`` (or ``--np``), the launcher
as given with its other options, the program by its absolute path, and file arguments made
absolute, since every run works in its own folder. It is run with apmt profile's machinery
(apmt.collect: backends, runner, extraction): raw runs in ``<results>/diagnose/raw/<name>/``,
tables in ``<results>/diagnose/<name>/``, and with 3 or more P the model (as apmt fit makes
it) for the scaling diagnosis. A one-off measures anew each time: the runs of an earlier call
of the same name are kept beside, as ``raw/<name>.earlier-<time>/``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from apmt import layout
from apmt.collect.extract import extract
from apmt.collect.runner import (
    RunRecord,
    load_study_machine,
    make_backends,
    move_aside,
    run_study,
)
from apmt.diagnose import diagnose
from apmt.diagnose.render import to_html, to_text
from apmt.diagnose.section import Section
from apmt.errors import ApmtError
from apmt.machine import Machine
from apmt.model import build_model, provenance, save_model
from apmt.probe import this_machine
from apmt.series import MIN_DISTINCT_P
from apmt.study import NAME_PATTERN, Study, find_program, load_study
from apmt.tables import write_text_atomic

STUDY_FILE = "study.yaml"
LAUNCHERS = {"mpirun": "mpirun", "orterun": "mpirun", "mpiexec": "mpiexec",
             "mpiexec.hydra": "mpiexec", "srun": "srun"}
P_OPTIONS = ("-np", "--np", "-n", "--n", "-c", "--ntasks")
# launcher options that take no value (Open MPI, MPICH's Hydra, Slurm); any other option
# is taken to be followed by its value, unless written --option=value
FLAGS = frozenset({
    "--oversubscribe", "--nooversubscribe", "--allow-run-as-root", "--report-bindings",
    "--tag-output", "--timestamp-output", "--display-map", "--display-allocation",
    "--use-hwthread-cpus", "--noprefix", "-q", "--quiet", "-v", "--verbose", "-l", "--label",
    "--exclusive", "--overcommit", "-O", "--bind-to-core", "--bind-to-socket", "-prepend-rank",
    "--merge-stderr-to-stdout",
})
# added by apmt's launcher code where needed (apmt.collect.launch.launch_command)
ADDED_BY_APMT = frozenset({"--oversubscribe", "--allow-run-as-root", "--overcommit"})


@dataclass(frozen=True)
class Command:
    """A command line taken apart: launcher, its P and options, the program and arguments."""

    launcher: str
    p: int | None
    launcher_args: tuple[str, ...]
    srun_mpi: str | None
    program: str
    args: tuple[str, ...]


def parse_command(words: Sequence[str]) -> Command:
    """``mpirun -np 4 --bind-to core ./app -x 1`` -> its parts; a bare ``./app`` runs with
    mpirun. One clear error when there is no program."""
    words = list(words)
    if not words:
        raise ApmtError("apmt diagnose: no command given after --")
    first = Path(words[0]).name
    if first not in LAUNCHERS:
        return Command("mpirun", None, (), None, words[0], tuple(words[1:]))
    p, options, srun_mpi, index = None, [], None, 1
    while index < len(words) and words[index].startswith("-"):
        word = words[index]
        name, equals, value = word.partition("=")
        takes_value = not equals and word not in FLAGS
        if takes_value and index + 1 >= len(words):
            raise ApmtError(f"{shlex.join(words)}: option {word!r} of {first} lacks its value")
        value = words[index + 1] if takes_value else value
        if name in P_OPTIONS:
            p = _process_count(value, word, words)
        elif name == "--mpi" and first == "srun":
            srun_mpi = value
        elif word not in ADDED_BY_APMT:
            options += [word, value] if takes_value else [word]
        index += 2 if takes_value else 1
    if index >= len(words):
        raise ApmtError(f"{shlex.join(words)}: no program after the options of {first}")
    return Command(LAUNCHERS[first], p, tuple(options), srun_mpi, words[index],
                   tuple(words[index + 1:]))


def _process_count(value: str, option: str, words: list[str]) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ApmtError(f"{shlex.join(words)}: {option} {value!r} is not a number of processes")
    return int(value)


def app_command(command: Command) -> str:
    """The application's command line for a study: absolute program and file arguments (the
    runs work in their own folders), braces escaped for the study's template."""
    program = find_program(command.program)
    if program is None:
        bare = command.p is None and not command.launcher_args and not command.args
        if bare and not Path(command.program).exists():   # a mistyped study folder?
            raise ApmtError(f"{command.program}: no such study folder, nor a program")
        raise ApmtError(f"{command.program}: program not found (not an executable file, nor "
                        "on PATH)")
    shown = str(program) if "/" in command.program else command.program
    args = [str(Path(a).resolve()) if _relative_path(a) else a for a in command.args]
    return shlex.join([shown, *args]).replace("{", "{{").replace("}", "}}")


def _relative_path(word: str) -> bool:
    """An argument naming a file or folder relative to here (not an option)."""
    return not word.startswith("-") and not os.path.isabs(word) and Path(word).exists()


def study_fields(command: Command, name: str, p_values: Sequence[int] | None, backend: str,
                 machine: str | None, repetitions: int) -> dict:
    """The one-off study file's fields (apmt.study documents them)."""
    p = list(p_values) if p_values else [command.p or 1]
    fields = {"name": name, "command": app_command(command), "p": p,
              "repetitions": repetitions, "launcher": command.launcher,
              "launcher_args": list(command.launcher_args), "backend": backend,
              "expect_output": False}
    if command.srun_mpi:
        fields["srun_mpi"] = command.srun_mpi
    if machine is not None:
        fields["machine"] = str(Path(machine).resolve()) if Path(machine).is_file() else machine
    return fields


def study_name(command: Command, name: str | None) -> str:
    """The given name, else the program's file name made into a valid study name."""
    chosen = name or re.sub(r"[^A-Za-z0-9_.-]", "_", Path(command.program).name) or "app"
    if not NAME_PATTERN.match(chosen):
        raise ApmtError(f"--name: {chosen!r} is not a valid name (letters, digits, '_', '.', "
                        "'-', starting with a letter or digit)")
    return chosen


def write_study(results: Path, fields: dict) -> Study:
    """Write the study file into its output folder and load it back (all checks apply)."""
    path = layout.study_dir(fields["name"], layout.one_off_results(results)) / STUDY_FILE
    header = "# apmt diagnose: a one-off study generated from the command line\n"
    write_text_atomic(header + yaml.safe_dump(fields, sort_keys=False), path)
    return load_study(path)


def set_aside(results: Path, study: Study) -> Path | None:
    """Keep the runs of an earlier one-off of this name beside; return where they went."""
    folder = layout.raw_dir(study.name, layout.one_off_results(results))
    return move_aside(folder, "earlier") if folder.exists() else None


def measure(words: Sequence[str], results: str | Path = "results", *, name: str | None = None,
            p_values: Sequence[int] | None = None, backend: str = "auto",
            machine: str | None = None, repetitions: int = 1,
            report: Callable[[str], None] = print) -> Path:
    """Run the command as a one-off study and extract its tables; return the study folder.
    Without ``machine``, this host's machine file (measured once, apmt.probe.this_machine)."""
    results = Path(results)
    command = parse_command(words)
    fields = study_fields(command, study_name(command, name), p_values, backend, machine,
                          repetitions)                      # finds the program first
    fields.setdefault("machine", str(this_machine(report)))
    study = write_study(results, fields)
    machine_data = load_study_machine(study)
    backends = make_backends(study, machine_data)
    earlier = set_aside(results, study)
    if earlier is not None:
        report(f"earlier runs of {study.name!r} kept in {earlier}")
    one_off = layout.one_off_results(results)
    records = run_study(study, one_off, backends, report=lambda record: report(record.line()))
    _check_runs(records)
    measurements, comm = extract(one_off, study, backends, machine_data)
    folder = layout.study_dir(study.name, one_off)
    (folder / layout.MODEL).unlink(missing_ok=True)   # an earlier call's, fitted on other runs
    if measurements["p"].nunique() >= MIN_DISTINCT_P:
        fit(measurements, comm, study, machine_data, folder, report)
    return folder


def fit(measurements: pd.DataFrame, comm: pd.DataFrame, study: Study, machine: Machine | None,
        folder: Path, report: Callable[[str], None]) -> None:
    """The model of the one-off (as apmt fit makes it), for the scaling diagnosis; a series
    that cannot be fitted is reported and leaves the scaling part without a model."""
    source = folder / layout.MEASUREMENTS
    try:
        model = build_model(measurements, study.param_names, source=str(source),
                            comm=comm if not comm.empty else None, machine=machine)
    except ApmtError as error:
        report(f"no model fitted: {error}")
        return
    model.provenance = provenance([source], {"command": "diagnose", "study": study.name})
    save_model(model, folder / layout.MODEL)


def _check_runs(records: list[RunRecord]) -> None:
    failed = [record for record in records if not record.ok]
    if failed and len(failed) == len(records):
        raise ApmtError(f"every run failed; the first: {failed[0].line()}")


def diagnose_command(words: Sequence[str], results: str | Path = "results", *,
                     machine: str | None = None, width: int = 100,
                     report: Callable[[str], None] = print, **measuring) -> tuple[Path, str, str]:
    """Measure the command (``measuring``: measure's options), diagnose it, and keep the
    diagnosis beside its tables (diagnosis.txt and .html); the folder, the text and the
    HTML."""
    folder = measure(words, results, machine=machine, report=report, **measuring)
    sections: list[Section] = diagnose(folder, machine=machine)
    text, html = to_text(sections, width), to_html(sections)
    write_text_atomic(text, folder / layout.DIAGNOSIS_TEXT)
    write_text_atomic(html, folder / layout.DIAGNOSIS_HTML)
    return folder, text, html
