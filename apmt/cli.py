"""The apmt command line: profile, import, fit, predict and evaluate, one subcommand per stage.

Every subcommand reads and computes everything first and writes its output only at the end,
atomically, so a failed run never leaves a partial file. Problems the user can fix (ApmtError,
missing or unreadable files) end as one ``apmt: error: ...`` line on stderr and exit code 2,
as argparse's usage errors do; anything else is a bug and keeps its traceback. ``profile``
also exits 1 when a run failed (its outputs hold the runs that did not).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from apmt import __version__, layout
from apmt.display import number, seconds
from apmt.errors import ApmtError
from apmt.ingest import CALL_PATH_VALUES, FORMATS, import_profiles, input_files
from apmt.tables import (
    APP_KERNEL,
    TIME_METRIC,
    describe_table,
    parameter_columns,
    read_json,
    read_table,
    table_kind,
    write_table,
    write_text_atomic,
)
from apmt.work import parse_work

if TYPE_CHECKING:
    from apmt.model import Model

EXIT_ERROR = 2
STDOUT = Path("-")
DEFAULT_BASELINES = "analytic,amdahl,powerlaw"
log = logging.getLogger("apmt")


# ------------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; return the exit code (0, 1 when a profiling run failed, or 2 for
    bad input and usage errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # usage error, --help or --version: argparse has printed it
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    code = None
    with _logging(args.verbose):
        try:
            code = args.run(args)
        except ApmtError as error:
            return _fail(str(error))
        except BrokenPipeError:  # stdout's reader left early (| head): the outputs are written
            _silence_stdout()
        except OSError as error:
            return _fail(_os_message(error))
        except KeyboardInterrupt as stop:  # the writers have removed their temporary files
            from apmt.collect.interrupt import exit_code  # (and a run stopped its launch)
            return exit_code(stop)
    return code if isinstance(code, int) else 0


def _fail(message: str) -> int:
    """One line on stderr, so scripts and logs keep one error per failed command."""
    line = " ".join(part.strip() for part in message.splitlines() if part.strip())
    print(f"apmt: error: {line}", file=sys.stderr)
    return EXIT_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null, or Python's final flush reports the broken pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real file (stdout captured in-process): nothing will flush to a pipe


def _os_message(error: OSError) -> str:
    """``PATH: reason`` as for apmt's own errors, not Python's ``[Errno 2] ...``."""
    if error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return str(error)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"apmt: {record.levelname.lower()}: {record.getMessage()}"


@contextmanager
def _logging(verbosity: int) -> Iterator[None]:
    """apmt's log on stderr as ``apmt: warning: ...`` for this call only (main may be reused)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    saved = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbosity > 1 else logging.INFO if verbosity else
                 logging.WARNING)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]


# ---------------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    """The argument parser; its subcommands and options are the interface scripts rely on."""
    parser = argparse.ArgumentParser(
        prog="apmt", description="Performance models of MPI applications from measurements.")
    parser.add_argument("--version", action="version", version=f"apmt {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="report progress (-vv: debug)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                        help="report progress (-vv: debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_profile(commands, common)
    _add_extract(commands, common)
    _add_import(commands, common)
    _add_fit(commands, common)
    _add_predict(commands, common)
    _add_evaluate(commands, common)
    _add_refine(commands, common)
    _add_machine(commands, common)
    _add_diagnose(commands, common)
    return parser


def _add_machine(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    machine = commands.add_parser("machine", parents=[common], help="machine parameters")
    actions = machine.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub = actions.add_parser("probe", parents=[common],
                             help="measure this machine's frequency, latencies and caches")
    sub.add_argument("--name", help="the machine's name in the file (default: the host's)")
    sub.add_argument("--max-bytes", type=int, metavar="BYTES",
                     help="largest working set (default 256 MiB; use 4x the LLC or more)")
    sub.add_argument("--quick", action="store_true", help="short timings, small sets")
    sub.add_argument("--frequency", default="measured", metavar="measured|system|GHZ",
                     help="clock: measured (default), the system's value, or a number in GHz")
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="machine.yaml")
    sub.set_defaults(run=run_machine_probe)


def run_machine_probe(args: argparse.Namespace) -> None:
    """Measure the machine and write its machine file."""
    from apmt.probe import probe_machine, write_machine

    frequency = args.frequency
    if frequency not in ("measured", "system"):
        frequency = _positive(frequency)
    machine = probe_machine(args.name, args.max_bytes, args.quick, frequency)
    write_machine(machine, args.output)
    latency = ", ".join(f"{level} {cycles:.0f}" for level, cycles
                        in machine.latency_cycles.items())
    print(f"{args.output}: {machine.frequency_ghz:.2f} GHz; latency in cycles: {latency}")


def _add_profile(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("profile", parents=[common],
                              help="run a study -> measurements and communication tables")
    sub.add_argument("study", type=Path, metavar="STUDY.yaml")
    sub.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                     help="results folder (default: results); raw runs in DIR/raw/<study>/")
    sub.add_argument("--backend", metavar="NAME",
                     help="counter backend, overriding the study's: perf-events, perf-clock, "
                          "cachegrind, auto or none")
    sub.add_argument("--dry-run", action="store_true",
                     help="check the study and print the commands without running them")
    _add_p_option(sub)
    sub.add_argument("--no-extract", action="store_true",
                     help="run only; `apmt extract` makes the tables (one job per P, then one "
                          "extraction, as the workflow does)")
    sub.add_argument("--summary", type=Path, metavar="FILE.json",
                     help="write what became of each run (status, wall time, folder) here")
    sub.add_argument("--stored-only", action="store_true",
                     help="run nothing: take the stored runs (a rebuild from raw profiles); "
                          "a missing run fails")
    sub.add_argument("--frequency", type=_positive, metavar="GHZ",
                     help="refinement's rerun of one P (--p) at this lower CPU frequency, in "
                          "run folders of its own (p4_r1_f2000MHz); pinned locally, set by "
                          "sbatch --cpu-freq in a Slurm job")
    sub.set_defaults(run=run_profile)


def _add_p_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--p", dest="p_values", type=int, nargs="+", metavar="P",
                     help="only these process counts (may be ones the study file does not list)")


def _add_extract(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("extract", parents=[common],
                              help="a study's finished runs -> measurements and communication "
                                   "tables")
    sub.add_argument("study", type=Path, metavar="STUDY.yaml")
    sub.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                     help="results folder holding raw/<study>/ (default: results)")
    _add_p_option(sub)
    sub.add_argument("-o", "--output-dir", type=Path, metavar="DIR",
                     help="where the tables go (default: DIR/<study>/)")
    sub.add_argument("--frequency", type=_positive, metavar="GHZ",
                     help="with --p P and --frequency-table: P's runs and its runs at this "
                          "frequency, with a column frequency_ghz (refinement's Eq. 5)")
    sub.add_argument("--frequency-table", type=Path, metavar="FREQUENCY.csv",
                     help="where the table of --frequency goes (its sidecar: whether the "
                          "frequency changed)")
    sub.set_defaults(run=run_extract)


def _add_import(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("import", parents=[common], help="profiles -> a tidy table")
    sub.add_argument("format", choices=list(FORMATS))
    sub.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    sub.add_argument("--processes", metavar="NAME|N",
                     help="extrap-text: the parameter that counts the processes (default: "
                          "p, processes, ranks, procs, nprocs or np), or the number of "
                          "processes every run used, for a file that names none; caliper: "
                          "that number, for files that do not say it (a program without MPI)")
    _add_table_output(sub, "OUT.csv", "; with a file, its provenance goes beside it "
                                      "(OUT.csv.provenance.json)")
    sub.set_defaults(run=run_import)


def _add_table_output(sub: argparse.ArgumentParser, metavar: str, more: str = "") -> None:
    """-o for a command that writes one table: a file, or - (the default) for stdout."""
    sub.add_argument("-o", "--output", type=Path, default=STDOUT, metavar=metavar,
                     help=f"where the table goes (default -: standard output, as CSV){more}")


def _add_params(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--param", dest="params", nargs="+", action="extend", metavar="NAME",
                     help="parameter columns (default: every further numeric column)")
    sub.add_argument("--per-rank-param", dest="per_rank_params", nargs="+", action="extend",
                     default=[], metavar="NAME", help="parameters that are already per rank")
    sub.add_argument("--work", metavar="EXPR",
                     help="the work per rank as an expression of the parameters and p, e.g. "
                          "'size**3 / p' (default: each total parameter / p)")


def _add_fit(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("fit", parents=[common], help="measurements -> model.json")
    sub.add_argument("measurements", type=Path, metavar="MEASUREMENTS.csv")
    _add_model_options(sub)
    sub.add_argument("--frequency-solution", type=Path, metavar="SOLUTION.csv",
                     help="an accepted refinement's CPI_core and BF_mem per kernel (apmt "
                          "refine round --frequency-solution)")
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="model.json")
    sub.set_defaults(run=run_fit)


def _add_model_options(sub: argparse.ArgumentParser) -> None:
    """What shapes the model (Eq. 2): shared by fit and by evaluate's validation."""
    sub.add_argument("--comm", type=Path, metavar="COMM.csv", help="communication table")
    sub.add_argument("--machine", metavar="MACHINE", help="machine YAML file or shipped name")
    _add_params(sub)
    sub.add_argument("--app-kernel", metavar="NAME", help="kernel that is the whole application")
    sub.add_argument("--threshold", type=_share, default=0.05,
                     help="share of the cost above which a kernel is key (default 0.05)")
    sub.add_argument("--kernel", dest="interest", action="append", default=[], metavar="NAME",
                     help="a kernel of interest: key whatever its share (repeatable)")
    sub.add_argument("--scaling", choices=("strong", "weak"),
                     help="strong (a fixed problem over more ranks) or weak (the work per rank "
                          "stays); default: weak where a parameter is per rank "
                          "(--per-rank-param), else strong")
    sub.add_argument("--call-path-values", choices=("inclusive", "exclusive"),
                     help="what a call path's value holds (a/b, a->b): its children's too, or "
                          "only its own (default: as apmt import recorded beside the table, "
                          "else inclusive where every parent's value holds its children's)")
    sub.add_argument("--mode", choices=("auto", "counters", "time"), default="auto",
                     help="counters: each key kernel as instructions x CPI / f plus its memory "
                          "term (Eq. 2; cycles derived from sampled time where none are "
                          "counted); time: each kernel's time its own fit; auto (default): "
                          "counters where the table and --machine allow it")


def _add_predict(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("predict", parents=[common], help="model.json -> predictions")
    sub.add_argument("model", type=Path, metavar="model.json")
    sub.add_argument("--at", action="append", required=True, metavar="p=P,NAME=VALUE",
                     help="a point to predict (repeatable)")
    sub.add_argument("--volume-ratio", type=_volume_ratios, default={}, metavar="R",
                     help="scale the communication volume for a larger problem: R for all "
                          "operations, or per pattern: p2p=R,collective=R,MPI_Allreduce=R")
    _add_table_output(sub, "predictions.csv")
    sub.set_defaults(run=run_predict)


def _add_evaluate(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("evaluate", parents=[common], help="errors on held-out runs")
    sub.add_argument("table", type=Path, metavar="MEASUREMENTS.csv")
    sub.add_argument("--holdout", default="p=max", help="points to hold out (default p=max)")
    _add_model_options(sub)
    sub.add_argument("--baselines", default=DEFAULT_BASELINES,
                     help=f"comma-separated: analytic, amdahl, powerlaw, extrap (default "
                          f"{DEFAULT_BASELINES}; extrap needs Extra-P)")
    sub.add_argument("--metrics", metavar="NAME[,NAME]",
                     help="evaluate these metrics' series only (default: all); the model's "
                          "validation uses the whole table")
    sub.add_argument("--tolerance", type=_share, default=0.1,
                     help="application error above which the model needs refining (0.1)")
    sub.add_argument("--validation", type=Path, metavar="validation.json",
                     help="write the refinement decision and its numbers here")
    sub.add_argument("--whole", type=Path, metavar="MEASUREMENTS.csv",
                     help="of a communication table: the measurements of the same runs, whose "
                          "application time bounds each operation's, as the model does")
    _add_table_output(sub, "eval.csv")
    sub.set_defaults(run=run_evaluate)


def _add_refine(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    refine = commands.add_parser("refine", parents=[common],
                                 help="refinement rounds: validate and decide; the final tables")
    actions = refine.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub = actions.add_parser("round", parents=[common],
                             help="validate one round's model on held-out runs and decide the "
                                  "next runs")
    sub.add_argument("table", type=Path, metavar="MEASUREMENTS.csv")
    sub.add_argument("--holdout", default="p=max", help="points to hold out (default p=max)")
    _add_model_options(sub)
    sub.add_argument("--tolerance", type=_share, default=0.1,
                     help="application error above which the model needs refining (0.1)")
    sub.add_argument("--round", type=int, default=0, help="this round's number (0: the first)")
    sub.add_argument("--max-rounds", type=int, default=1, help="refinement rounds at most")
    sub.add_argument("--max-runs", type=int, default=2, help="new P at most, over all rounds")
    sub.add_argument("--base-p", type=int, nargs="+", default=[], metavar="P",
                     help="the study's own P (the others in the table were added by rounds)")
    sub.add_argument("--candidates", type=int, nargs="+", metavar="P",
                     help="the P refinement may run (default: those the study accepts, or "
                          "powers of two and midpoints, up to 4x the largest measured)")
    sub.add_argument("--max-p", type=int, metavar="P", help="the largest P refinement may run")
    sub.add_argument("--study", type=Path, metavar="STUDY.yaml",
                     help="the study file: refinement proposes only the P its application "
                          "accepts (its accepts_p)")
    sub.add_argument("--lower-frequency", type=float, metavar="GHZ",
                     help="frequency of the computation rerun (default: the offered one "
                          "nearest 2/3 of the highest)")
    sub.add_argument("--previous", type=Path, nargs="+", default=[], metavar="DECISION.json",
                     help="the earlier rounds' decisions (their runs count against the budget)")
    sub.add_argument("--frequency-table", type=Path, metavar="FREQUENCY.csv",
                     help="the lower-frequency rerun the previous round asked for (apmt "
                          "extract --frequency): solve Eq. 5 per kernel from it")
    sub.add_argument("--frequency-solution", type=Path, metavar="SOLUTION.csv",
                     help="write the per-kernel CPI_core and BF_mem here (only a header "
                          "without --frequency-table)")
    sub.add_argument("--validation", type=Path, required=True, metavar="validation.json")
    sub.add_argument("--evaluation", type=Path, required=True, metavar="evaluation.csv",
                     help="the model's errors at the held-out points")
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="decision.json")
    sub.set_defaults(run=run_refine_round)
    sub = actions.add_parser("finish", parents=[common],
                             help="the last round's tables become the study's, with every "
                                  "round's decision in one file")
    sub.add_argument("decisions", type=Path, nargs="*", metavar="DECISION.json")
    sub.add_argument("--tables", type=Path, nargs="+", required=True, metavar="FILE",
                     help="the last round's tables (and their provenance)")
    sub.add_argument("--out-tables", type=Path, nargs="+", required=True, metavar="FILE",
                     help="where they go, in the same order")
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="refinement.json")
    sub.set_defaults(run=run_refine_finish)


def _volume_ratios(text: str) -> dict[str, float]:
    """argparse type: ``R`` (every operation) or ``PATTERN=R,...`` (p2p, collective, or an
    operation's name), the communication volume ratio of paper 000, 4.2."""
    if "=" not in text:
        return {"all": _positive(text)}
    ratios = {}
    for part in text.split(","):
        pattern, _, value = part.partition("=")
        if not pattern.strip():
            raise argparse.ArgumentTypeError(f"{part!r}: expected PATTERN=R")
        ratios[pattern.strip()] = _positive(value)
    return ratios


def _positive(text: str) -> float:
    """argparse type: a finite number above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _share(text: str) -> float:
    """argparse type: a share strictly between 0 and 1."""
    value = _positive(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 and 1")
    return value


# --------------------------------------------------------------------------------- profile

def note(text: str) -> None:
    """What apmt did on the user's behalf, on stderr (stdout may carry a table)."""
    print(f"apmt: {text}", file=sys.stderr, flush=True)


def _print_record(record) -> None:
    print(record.line(), flush=True)


def _profiled(args: argparse.Namespace):
    """The study file with the command line's --backend and --p applied."""
    from apmt.collect.profile import load_profiled

    return load_profiled(args.study, args.results, backend=getattr(args, "backend", None),
                         p_values=args.p_values, note=note)


def run_profile(args: argparse.Namespace) -> int:
    """Run a study's runs (skipping finished ones) and extract its tables; 1 if a run failed."""
    from apmt.collect import profile

    profiled = _profiled(args)
    if args.frequency is not None:
        return _profile_at_frequency(args, profiled)
    if args.dry_run:
        for line in profile.dry_run(profiled, args.results):
            print(line)
        return 0
    records = profile.profile(profiled, args.results, stored_only=args.stored_only,
                              report=_print_record)
    failed = _failed(records, args.summary)
    if len(failed) < len(records) and not args.no_extract:
        for line in profile.extract_tables(profiled, args.results):
            print(line)
    return 1 if failed else 0


def _failed(records: list, summary: Path | None) -> list:
    """Write the --summary file; the failed records (said on stderr)."""
    from apmt.collect.profile import write_summary

    failed = write_summary(records, summary)
    if failed:
        print(f"{len(failed)} of {len(records)} runs failed", file=sys.stderr)
    return failed


def _one_p(args: argparse.Namespace, option: str) -> int:
    if not args.p_values or len(args.p_values) != 1:
        raise ApmtError(f"{option}: give exactly one P with --p (given: {args.p_values})")
    return args.p_values[0]


def _profile_at_frequency(args: argparse.Namespace, profiled) -> int:
    """Refinement's rerun of one P at a lower frequency; its tables are `apmt extract
    --frequency`'s, so nothing is extracted here."""
    from apmt.collect.profile import profile_at_frequency

    _one_p(args, "--frequency")
    if args.dry_run or args.stored_only:
        raise ApmtError("--frequency: runs at a lower frequency take neither --dry-run nor "
                        "--stored-only")
    records, reasons = profile_at_frequency(profiled, args.results, args.frequency,
                                            report=_print_record)
    for reason in reasons:
        print(f"frequency {args.frequency:g} GHz: {reason}")
    return 1 if _failed(records, args.summary) else 0


def run_extract(args: argparse.Namespace) -> None:
    """Tables from the finished runs only: nothing is run."""
    from apmt.collect import profile

    profiled = _profiled(args)
    if (args.frequency is None) != (args.frequency_table is None):
        raise ApmtError("--frequency and --frequency-table go together")
    if args.frequency is None:
        lines = profile.extract_tables(profiled, args.results, args.output_dir)
    else:
        lines = [profile.extract_at_frequency(profiled, args.results,
                                              _one_p(args, "--frequency"), args.frequency,
                                              args.frequency_table)]
    for line in lines:
        print(line)


# ---------------------------------------------------------------------------------- import

def run_import(args: argparse.Namespace) -> None:
    """Read profiles of one format and write the validated table with its provenance."""
    from apmt.model import provenance

    _check_writable_format(args.output)
    table, kind = import_profiles(args.format, args.paths, args.processes)
    record = provenance(input_files(args.format, args.paths),
                        {"command": "import", "format": args.format, "kind": kind,
                         "paths": [str(path) for path in args.paths], "rows": len(table),
                         "processes": args.processes,
                         "call_path_values": CALL_PATH_VALUES.get(args.format)})
    text = json.dumps(record, indent=1) + "\n"
    output_table(table, args.output)
    if args.output != STDOUT:
        write_text_atomic(text, layout.sidecar(args.output))
        log.info("wrote %s and %s", args.output, layout.sidecar(args.output))
    say(describe_table(table, kind), args.output)


def output_table(table: pd.DataFrame, path: Path) -> None:
    """A command's one table: into its file (atomically), or as CSV on stdout for -."""
    if path == STDOUT:
        table.to_csv(sys.stdout, index=False)
        sys.stdout.flush()
    else:
        write_table(table, path)
        log.info("wrote %s: %d rows", path, len(table))


def say(text: str, output: Path) -> None:
    """A command's summary: on stdout, or on stderr when stdout carries its table."""
    if text:
        print(text, file=sys.stderr if output == STDOUT else sys.stdout)


def _check_writable_format(path: Path) -> None:
    if path.suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ApmtError(f"{path}: writing Parquet needs pyarrow (pip install pyarrow), "
                        "or write .csv")


def _check_readable_format(path: Path) -> None:
    if path.suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ApmtError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)")


# ------------------------------------------------------------------------------------- fit

def run_fit(args: argparse.Namespace) -> None:
    """Fit the model of a measurements table and save it with where it came from."""
    from apmt.model import build_model, save_model

    if table_kind(args.measurements) == "communication":
        raise ApmtError(f"{args.measurements}: a communication table (op, calls, bytes, time); "
                        "give it with --comm beside a measurements table")
    table, params, per_rank = _read_with_params(args, args.measurements, "measurements")
    comm, options = _model_inputs(args, args.measurements, params, per_rank)
    model = build_model(table, params, source=str(args.measurements), comm=comm, **options)
    if args.frequency_solution is not None:
        from apmt.refine import apply_frequency_solution
        model = apply_frequency_solution(model, pd.read_csv(args.frequency_solution))
    model.provenance = _fit_provenance(args, table, params, options["machine"])
    save_model(model, args.output)
    log.info("wrote %s", args.output)
    print(model.describe(args.output))


def _model_inputs(args: argparse.Namespace, table: Path, params: list[str],
                  per_rank: frozenset[str]) -> tuple[pd.DataFrame | None, dict]:
    """The communication table and build_model's options from the command line (and, for
    what call paths' values hold, from the import's provenance beside ``table``)."""
    from apmt.machine import load_machine

    comm = None
    if args.comm is not None:
        _check_readable_format(args.comm)
        comm = read_table(args.comm, "communication", params)
    machine = load_machine(args.machine) if args.machine else None
    return comm, {"machine": machine, "app_kernel": args.app_kernel,
                  "per_rank_params": per_rank, "threshold": args.threshold,
                  "scaling": args.scaling, "interest": frozenset(args.interest),
                  "work": args.work, "mode": args.mode,
                  "call_path_values": args.call_path_values
                  or (_read_sidecar(table) or {}).get("call_path_values")}


def _read_with_params(args: argparse.Namespace, path: Path,
                      kind: str) -> tuple[pd.DataFrame, list[str], frozenset[str]]:
    """The table and its parameters: those named, or else every further numeric column."""
    _check_readable_format(path)
    named = _unique([*(args.params or []), *args.per_rank_params]) if args.params else None
    table = read_table(path, kind, named)
    params = named if named is not None else parameter_columns(table, kind)
    log.info("read %s: %s; parameters: %s", path, describe_table(table, kind),
             ", ".join(params) or "none")
    for name in args.per_rank_params:
        if name not in params:
            raise ApmtError(f"{path}: --per-rank-param {name!r} is not a parameter column "
                            f"(parameters: {', '.join(params) or 'none'})")
    if args.work is not None:
        args.work = parse_work(args.work, ["p", *params], f"{path}: --work")
    return table, params, frozenset(args.per_rank_params)


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _fit_provenance(args: argparse.Namespace, table: pd.DataFrame, params: list[str],
                    machine: dict | None) -> dict:
    """Inputs with hashes, the import's own provenance, and what the data covered."""
    from apmt.model import provenance
    from apmt.series import points

    inputs = [args.measurements, *([args.comm] if args.comm else []),
              *([args.frequency_solution] if args.frequency_solution else [])]
    if args.machine and Path(args.machine).is_file():
        inputs.append(Path(args.machine))
    extra = {
        "command": "fit", "params": params, "per_rank_params": sorted(args.per_rank_params),
        "work": args.work,
        "p_values": sorted(int(p) for p in table["p"].unique()),
        "max_repetitions": int(points(table, params)["reps"].max()),
        "machine": machine.fields.get("name", args.machine) if args.machine else None,
        "import": _read_sidecar(args.measurements),
    }
    if args.comm:
        extra["comm_import"] = _read_sidecar(args.comm)
    return provenance(inputs, extra)


def _read_sidecar(path: Path) -> dict | None:
    """The provenance ``apmt import`` left next to a table, if any; a bad one is only noted."""
    record = layout.sidecar(path)
    if not record.is_file():
        return None
    try:
        return json.loads(record.read_text())
    except (OSError, ValueError) as error:
        log.warning("%s: ignored, not readable provenance (%s)", record, error)
        return None


# --------------------------------------------------------------------------------- predict

def run_predict(args: argparse.Namespace) -> None:
    """Predict every fitted series and the application at the requested points."""
    from apmt.model import load_model
    from apmt.predict import predict

    _check_writable_format(args.output)
    model = load_model(args.model)
    targets = parse_points(args.at, model.params)
    table = predict(model, targets, args.volume_ratio)
    output_table(table, args.output)
    say("\n".join([describe_app_rows(table, model.params), *crowded_runs(model)]), args.output)


def crowded_runs(model: Model) -> list[str]:
    """One warning line when the model was fitted on runs with more ranks than cores (the
    profiling's provenance lists them): what it predicts are runs as crowded, not a
    cluster's."""
    from apmt.diagnose.imbalance import oversubscribed

    crowded = oversubscribed((model.provenance or {}).get("import"))
    if not crowded:
        return []
    shown = ", ".join(str(p) for p in sorted(crowded))
    return [f"warning: the model was fitted on runs with more ranks than cores (P={shown}): "
            "its times from there on are of runs as crowded, not of runs with a core per rank"]


def parse_points(specs: list[str], params: list[str]) -> pd.DataFrame:
    """``p=343,size=45`` per --at: p and every parameter of the model, nothing else."""
    names = ["p", *params]
    rows = [_parse_point(spec, names) for spec in specs]
    targets = pd.DataFrame(rows, columns=names)
    return targets.astype({"p": "int64"})


def _parse_point(spec: str, names: list[str]) -> dict[str, float]:
    point: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in spec.split(","))):
        name, equals, text = (piece.strip() for piece in part.partition("="))
        if not equals or name not in names or name in point:
            problem = ("expected NAME=VALUE" if not equals else f"{name!r} given twice"
                       if name in point else f"unknown name {name!r}")
            raise ApmtError(f"--at {spec!r}: {problem} (the model needs {', '.join(names)})")
        point[name] = _point_value(spec, name, text)
    missing = [name for name in names if name not in point]
    if missing:
        raise ApmtError(f"--at {spec!r}: missing parameter {missing[0]!r} (the model needs "
                        f"{', '.join(names)})")
    return point


def _point_value(spec: str, name: str, text: str) -> float:
    """A positive number (the fits take logs and powers), and a whole one for p."""
    try:
        value = float(text)
    except ValueError:
        raise ApmtError(f"--at {spec!r}: {name}={text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0) or (name == "p" and value % 1):
        what = "a whole number of processes" if name == "p" else "a positive number"
        raise ApmtError(f"--at {spec!r}: {name}={text!r} is not {what}")
    return value


def describe_app_rows(table: pd.DataFrame, params: list[str]) -> str:
    """The application time at each point, with its 90% interval and how far it can be
    trusted; then one warning line naming the unsupported points and why."""
    rows = table[(table["kernel"] == APP_KERNEL) & (table["metric"] == TIME_METRIC)]
    lines, unsupported = [], []
    for _, row in rows.iterrows():
        point = " ".join(f"{name}={row[name]:g}" for name in ["p", *params])
        if pd.isna(row["predicted"]):
            lines.append(f"{point}: {row['trust_reason']}")
            continue
        lines.append(f"{point}: application time {seconds(row['predicted'], 4)} (90% interval "
                     f"{seconds(row['lower'], 4)} .. {seconds(row['upper'], 4)}; {row['trust']})")
        if row["trust"] == "unsupported":
            unsupported.append(f"{point} ({row['trust_reason']})")
    if unsupported:
        lines.append(f"warning: unsupported, not a prediction to plan with: "
                     f"{'; '.join(unsupported)}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------- evaluate

def run_evaluate(args: argparse.Namespace) -> None:
    """Hold out runs, fit on the rest with apmt and the baselines, and report the errors;
    for measurements, also validate the assembled model and decide on refinement."""
    from apmt.evaluate import evaluate_table, summary

    _check_writable_format(args.output)
    kind = table_kind(args.table)
    table, params, per_rank = _read_with_params(args, args.table, kind)
    comm, options = _model_inputs(args, args.table, params, per_rank) \
        if kind == "measurements" else (None, None)
    whole = None
    if args.whole is not None:
        if kind == "measurements":
            raise ApmtError(f"--whole {args.whole}: a measurements table bounds its kernels "
                            f"by its own application time; --whole is for a communication "
                            f"table")
        _check_readable_format(args.whole)
        whole = read_table(args.whole, "measurements", params)
    result, decision = evaluate_table(
        table, kind, params, args.holdout,
        [name.strip() for name in args.baselines.split(",") if name.strip()], str(args.table),
        per_rank, metrics=args.metrics.split(",") if args.metrics else None,
        tolerance=args.tolerance, comm=comm,
        imported=(_read_sidecar(args.table) or {}).get("command") == "import",
        model_options=options, work=args.work, whole=whole)
    output_table(result, args.output)
    if decision is not None and args.validation is not None:
        write_text_atomic(json.dumps(decision, indent=1) + "\n", args.validation)
    say(format_summary(summary(result[result["kernel"] != APP_KERNEL])), args.output)
    if decision is not None:
        outcome = decision.get("refinement") or (
            f"refine {decision['part'] or 'with more P'}" if decision["refine"]
            else "no refinement needed")
        say(f"validation: {decision['reason']}; {outcome}", args.output)


def run_refine_round(args: argparse.Namespace) -> None:
    """Validate the round's model (fit without the held-out runs; with the lower-frequency
    solution when the model takes it) and plan the next round from the model of all its
    runs, where its intervals are widest."""
    from apmt.decision import Decision
    from apmt.rounds import frequency_outcome, refinement_round
    from apmt.study import load_study

    if args.frequency_table is not None and args.frequency_solution is None:
        raise ApmtError("--frequency-table needs --frequency-solution (where the solution goes)")
    table, params, per_rank = _read_with_params(args, args.table, "measurements")
    comm, options = _model_inputs(args, args.table, params, per_rank)
    frequency = frequency_outcome(args.frequency_table)
    if args.frequency_solution is not None:
        write_table(frequency[0], args.frequency_solution)
    settings = {"candidates": args.candidates, "max_p": args.max_p,
                "accepts_p": load_study(args.study).accepts_p if args.study else None,
                "lower_frequency_ghz": args.lower_frequency}
    found = refinement_round(
        table, params, source=str(args.table), comm=comm, model_options=options,
        holdout=args.holdout, tolerance=args.tolerance, round_index=args.round,
        budget={"max_rounds": args.max_rounds, "max_runs": args.max_runs}, settings=settings,
        previous=[Decision.from_dict(read_json(path)) for path in args.previous],
        base_p=args.base_p,
        frequency=frequency, solution_file=args.frequency_solution)
    write_table(found.rows, args.evaluation)
    write_text_atomic(json.dumps(found.validation, indent=1) + "\n", args.validation)
    write_text_atomic(json.dumps(found.decision.to_dict(), indent=1, default=float) + "\n",
                      args.output)
    print(f"round {args.round}: {found.decision.action}: {found.decision.reason}")


def run_refine_finish(args: argparse.Namespace) -> None:
    """Copy the last round's tables to the study's folder; one file tells every round."""
    from apmt.decision import Decision
    from apmt.rounds import refinement_record

    if len(args.tables) != len(args.out_tables):
        raise ApmtError(f"--tables gives {len(args.tables)} files but --out-tables "
                        f"{len(args.out_tables)}")
    decisions = [Decision.from_dict(read_json(path)) for path in args.decisions]
    for source, target in zip(args.tables, args.out_tables, strict=True):
        write_text_atomic(source.read_text(), target)
    record = refinement_record(decisions, args.tables[0].parent)
    write_text_atomic(json.dumps(record, indent=1) + "\n", args.output)
    print(record["outcome"])


SUMMARY_FORMATS: dict[str, Callable[[float], str]] = {
    "median_ape": lambda v: f"{v:.1f}%", "p90_ape": lambda v: f"{v:.1f}%",
    "coverage_90": lambda v: "-" if pd.isna(v) else f"{v:.0%}",
    "width_90": lambda v: number(v, 2),
}


def format_summary(table: pd.DataFrame) -> str:
    """apmt.evaluate.summary as a small text table: the median error per method first."""
    if table.empty:
        return "no series could be evaluated at the held-out points"
    return table.to_string(index=False, formatters=SUMMARY_FORMATS, na_rep="-")


# -------------------------------------------------------------------------------- diagnose

def _add_diagnose(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser(
        "diagnose", parents=[common],
        help="validity, scaling, LCPI bottlenecks and remedies of a study (or of a command)",
        description="apmt diagnose DIR [DIR2] assesses results/<study>/ (measurements.csv, "
                    "model.json); a second folder is compared with the first. apmt diagnose "
                    "[--np N ...] -- mpirun -np 4 ./app ARGS measures the command first, as "
                    "a one-off study in RESULTS/diagnose/<name>/ (earlier runs of that name "
                    "are kept beside), then assesses it.")
    sub.add_argument("words", nargs="*", metavar="DIR | -- COMMAND",
                     help="one or two study folders, or after -- the command to measure")
    sub.add_argument("--machine", metavar="NAME|FILE",
                     help="machine file or shipped name for the latencies (and cachegrind's "
                          "caches), when the study names none; a command without it uses "
                          "this host's, measured once and kept for later runs")
    sub.add_argument("--width", type=int, default=100, help="text width (default 100)")
    sub.add_argument("-o", "--output", type=Path, metavar="FILE",
                     help="write the text here instead of printing it")
    sub.add_argument("--html", type=Path, metavar="FILE", help="also write it as HTML")
    sub.add_argument("--predictions", type=Path, metavar="predictions.csv",
                     help="the study's predictions: the scaling part shows their P too")
    sub.add_argument("--np", type=int, nargs="+", metavar="N",
                     help="command: process counts to run (default: the launcher's -np)")
    sub.add_argument("--backend", default="auto",
                     help="command: counter backend (default auto; see apmt profile)")
    sub.add_argument("--repetitions", type=int, default=1, metavar="N",
                     help="command: runs per process count (default 1)")
    sub.add_argument("--name", help="command: the one-off study's name (default: the program's)")
    sub.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                     help="command: results folder (default: results)")
    sub.set_defaults(run=run_diagnose)


def run_diagnose(args: argparse.Namespace) -> None:
    """Diagnose one or two study folders, or measure a command first and diagnose it."""
    from apmt.diagnose import diagnose
    from apmt.diagnose.render import to_html, to_text
    from apmt.oneoff import diagnose_command

    if args.width < 40:
        raise ApmtError(f"--width {args.width}: at least 40 columns are needed")
    if args.np is not None and min(args.np) < 1:
        raise ApmtError(f"--np {args.np}: process counts must be at least 1")
    words = list(args.words)
    if words and Path(words[0]).is_dir():
        if len(words) > 2:
            raise ApmtError(f"apmt diagnose: at most two study folders, not {len(words)}")
        folders = [study_folder(Path(w)) for w in words]
        sections = diagnose(folders[0], folders[1] if len(folders) > 1 else None,
                            machine=args.machine, predictions=args.predictions)
        text, html = to_text(sections, args.width), to_html(sections)
    elif words:
        _, text, html = diagnose_command(
            words, args.results, machine=args.machine, width=args.width, name=args.name,
            p_values=args.np, backend=args.backend, repetitions=args.repetitions)
    else:
        raise ApmtError("apmt diagnose: give a study folder (results/<study>) or, after --, "
                        "a command to measure (apmt diagnose -- mpirun -np 4 ./app)")
    for path, content in ((args.output, text), (args.html, html)):
        if path is not None:
            write_text_atomic(content, path)
            log.info("wrote %s", path)
    if args.output is None:
        print(text, end="")


def study_folder(folder: Path) -> Path:
    """The folder holding a study's tables: the study's own, or, when the study did not get
    that far (a refinement round failed), its last round's, which is said."""
    if (folder / layout.MEASUREMENTS).is_file():
        return folder
    last = layout.last_round(folder)
    if last is not None:
        note(f"{folder / layout.MEASUREMENTS} is missing (the study did not finish); diagnosing "
             f"the tables of its last round, {last}")
        return last
    raise ApmtError(f"{folder / layout.MEASUREMENTS}: no such file, nor in "
                    f"{folder / layout.ROUNDS}/r*/: give a study's results folder "
                    "(results/<study>) once it is profiled or imported")


if __name__ == "__main__":
    sys.exit(main())
