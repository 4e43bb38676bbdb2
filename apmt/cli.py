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

import pandas as pd

from apmt import __version__
from apmt.errors import ApmtError
from apmt.ingest import FORMATS, import_profiles
from apmt.tables import (
    APP_KERNEL,
    COMM_KEYS,
    COMM_REQUIRED,
    MEASUREMENT_KEYS,
    TIME_METRIC,
    parameter_columns,
    read_table,
    write_table,
    write_text_atomic,
)

EXIT_ERROR = 2
SIDECAR_SUFFIX = ".provenance.json"
DEFAULT_BASELINES = "analytic,amdahl,powerlaw"
CLASS_ORDER = ("key", "non-scalable", "communication", "aggregated", "application")
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
        except KeyboardInterrupt:  # the writers have removed their temporary files
            return 130
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
    _add_import(commands, common)
    _add_fit(commands, common)
    _add_predict(commands, common)
    _add_evaluate(commands, common)
    _add_machine(commands, common)
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
                        in machine["latency_cycles"].items())
    print(f"{args.output}: {machine['frequency_ghz']:.2f} GHz; latency in cycles: {latency}")


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
    sub.set_defaults(run=run_profile)


def _add_import(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("import", parents=[common], help="profiles -> a tidy table")
    sub.add_argument("format", choices=list(FORMATS))
    sub.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.csv")
    sub.set_defaults(run=run_import)


def _add_params(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--param", dest="params", nargs="+", action="extend", metavar="NAME",
                     help="parameter columns (default: every further numeric column)")
    sub.add_argument("--per-rank-param", dest="per_rank_params", nargs="+", action="extend",
                     default=[], metavar="NAME", help="parameters that are already per rank")


def _add_fit(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("fit", parents=[common], help="measurements -> model.json")
    sub.add_argument("measurements", type=Path, metavar="MEASUREMENTS.csv")
    _add_model_options(sub)
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
    sub.add_argument("--scaling", choices=("strong", "weak"), default="strong")


def _add_predict(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("predict", parents=[common], help="model.json -> predictions")
    sub.add_argument("model", type=Path, metavar="model.json")
    sub.add_argument("--at", action="append", required=True, metavar="p=P,NAME=VALUE",
                     help="a point to predict (repeatable)")
    sub.add_argument("--volume-ratio", type=_volume_ratios, default={}, metavar="R",
                     help="scale the communication volume for a larger problem: R for all "
                          "operations, or per pattern: p2p=R,collective=R,MPI_Allreduce=R")
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="predictions.csv")
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
    sub.add_argument("-o", "--output", type=Path, required=True, metavar="eval.csv")
    sub.set_defaults(run=run_evaluate)


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

def run_profile(args: argparse.Namespace) -> int:
    """Run a study's runs (skipping finished ones) and extract its tables; 1 if a run failed."""
    from apmt.collect.extract import COMMUNICATION, MEASUREMENTS, PROVENANCE, extract, output_dir
    from apmt.collect.runner import (
        check_runnable,
        describe_plan,
        load_study_machine,
        make_backends,
        plan,
        run_study,
    )
    from apmt.collect.study import load_study, with_backend

    study = load_study(args.study)
    if args.backend is not None:
        study = with_backend(study, args.backend)
    machine = load_study_machine(study)
    backends = make_backends(study, machine)
    if args.dry_run:
        launcher = check_runnable(study, args.results, backends, dry_run=True)
        for planned in plan(study, args.results, backends, launcher):
            print(describe_plan(planned))
        return 0
    records = run_study(study, args.results, backends,
                        report=lambda record: print(record.line(), flush=True))
    failed = [record for record in records if not record.ok]
    if len(failed) < len(records):
        measurements, comm = extract(args.results, study, backends, machine)
        out = output_dir(args.results, study)
        print(f"{out / MEASUREMENTS}: {describe_table(measurements, 'measurements')}")
        if not comm.empty:
            print(f"{out / COMMUNICATION}: {describe_table(comm, 'communication')}")
        print(f"{out / PROVENANCE}")
    if failed:
        print(f"{len(failed)} of {len(records)} runs failed", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------------- import

def run_import(args: argparse.Namespace) -> None:
    """Read profiles of one format and write the validated table with its provenance."""
    from apmt.model import provenance

    _check_writable_format(args.output)
    table, kind = import_profiles(args.format, args.paths)
    record = provenance(_input_files(args.format, args.paths),
                        {"command": "import", "format": args.format, "kind": kind,
                         "paths": [str(path) for path in args.paths], "rows": len(table)})
    text = json.dumps(record, indent=1) + "\n"
    write_table(table, args.output)
    write_text_atomic(text, sidecar(args.output))
    log.info("wrote %s and %s", args.output, sidecar(args.output))
    print(describe_table(table, kind))


def sidecar(path: Path) -> Path:
    """Where a table's provenance lives: next to it, so it travels with the file."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _input_files(fmt: str, paths: list[Path]) -> list[Path]:
    """The files behind the inputs, to hash: a directory stands for its profile files."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
        elif fmt == "cube":
            from apmt.ingest.cube import find_profiles
            files += find_profiles(path)
        else:
            files += sorted(p for p in path.rglob("*") if p.is_file())
    return files


def describe_table(table: pd.DataFrame, kind: str) -> str:
    """One line: rows, series and the process counts, to see at a glance what was read."""
    keys = [k for k in (MEASUREMENT_KEYS if kind == "measurements" else COMM_KEYS)
            if k in table.columns]
    series = len(table[keys].drop_duplicates())
    ps = sorted(int(p) for p in table["p"].unique())
    span = f" ({ps[0]}..{ps[-1]})" if len(ps) > 1 else f" ({ps[0]})"
    return f"{len(table)} rows, {series} series, {len(ps)} distinct P{span}"


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
    comm, options = _model_inputs(args, params, per_rank)
    model = build_model(table, params, source=str(args.measurements), comm=comm, **options)
    model["provenance"] = _fit_provenance(args, table, params, options["machine"])
    save_model(model, args.output)
    log.info("wrote %s", args.output)
    print(describe_model(model, args.output))


def _model_inputs(args: argparse.Namespace, params: list[str],
                  per_rank: frozenset[str]) -> tuple[pd.DataFrame | None, dict]:
    """The communication table and build_model's options from the command line."""
    from apmt.machine import load_machine

    comm = None
    if args.comm is not None:
        _check_readable_format(args.comm)
        comm = read_table(args.comm, "communication", params)
    machine = load_machine(args.machine) if args.machine else None
    return comm, {"machine": machine, "app_kernel": args.app_kernel,
                  "per_rank_params": per_rank, "threshold": args.threshold,
                  "scaling": args.scaling}


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
    return table, params, frozenset(args.per_rank_params)


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _fit_provenance(args: argparse.Namespace, table: pd.DataFrame, params: list[str],
                    machine: dict | None) -> dict:
    """Inputs with hashes, the import's own provenance, and what the data covered."""
    from apmt.model import provenance
    from apmt.series import points

    inputs = [args.measurements, *([args.comm] if args.comm else [])]
    if args.machine and Path(args.machine).is_file():
        inputs.append(Path(args.machine))
    extra = {
        "command": "fit", "params": params, "per_rank_params": sorted(args.per_rank_params),
        "p_values": sorted(int(p) for p in table["p"].unique()),
        "max_repetitions": int(points(table, params)["reps"].max()),
        "machine": (machine or {}).get("name", args.machine) if args.machine else None,
        "import": _read_sidecar(args.measurements),
    }
    if args.comm:
        extra["comm_import"] = _read_sidecar(args.comm)
    return provenance(inputs, extra)


def _read_sidecar(path: Path) -> dict | None:
    """The provenance ``apmt import`` left next to a table, if any; a bad one is only noted."""
    record = sidecar(path)
    if not record.is_file():
        return None
    try:
        return json.loads(record.read_text())
    except (OSError, ValueError) as error:
        log.warning("%s: ignored, not readable provenance (%s)", record, error)
        return None


def describe_model(model: dict, path: Path) -> str:
    """Short summary: mode, kernel classes, fits, notes and the key kernels' time functions."""
    from apmt.comm import describe

    kernels = pd.DataFrame(model["kernels"], columns=["kernel", "class"])
    counts = kernels["class"].value_counts()
    order = [*CLASS_ORDER, *sorted(set(counts.index) - set(CLASS_ORDER))]
    classes = ", ".join(f"{name} {counts[name]}" for name in order if name in counts)
    fitted = len(model["series"]) + len(model["communication"])
    lines = [f"{path}: {model['mode']} mode, {len(kernels)} kernels ({classes}), "
             f"{fitted} series fitted"]
    lines += [f"note: {note}" for note in model["notes"]]
    for kernel in kernels.loc[kernels["class"] == "key", "kernel"]:
        metric = _time_metric(model, kernel)
        lines.append(f"  {kernel}: {metric} = {_function(model, kernel, metric)}")
    if model["app_kernel"] not in (None, APP_KERNEL):
        lines.append(f"  application {model['app_kernel']}: time = "
                     f"{_function(model, model['app_kernel'], TIME_METRIC)}")
    lines += [f"  {describe(operation)}" for operation in model["communication"]]
    return "\n".join(lines)


def _time_metric(model: dict, kernel: str) -> str:
    """The fitted metric that gives a kernel's time: instructions in counter mode, else time."""
    counters = model["mode"] == "counters" and kernel in model["cpi"]
    return "instructions" if counters else TIME_METRIC


def _function(model: dict, kernel: str, metric: str) -> str:
    for entry in model["series"]:
        if (entry["kernel"], entry["metric"]) == (kernel, metric):
            return entry["fit"].function
    return "(not fitted)"


# --------------------------------------------------------------------------------- predict

def run_predict(args: argparse.Namespace) -> None:
    """Predict every fitted series and the application at the requested points."""
    from apmt.model import predict

    _check_writable_format(args.output)
    model = _load_model(args.model)
    targets = parse_points(args.at, model["params"])
    table = predict(model, targets, args.volume_ratio)
    write_table(table, args.output)
    log.info("wrote %s: %d rows", args.output, len(table))
    print(describe_app_rows(table, model["params"]))


def _load_model(path: Path) -> dict:
    """load_model, with a damaged file (a field missing or of the wrong type) as bad input."""
    from apmt.model import load_model
    try:
        return load_model(path)
    except (KeyError, TypeError, ValueError) as error:
        raise ApmtError(f"{path}: not a valid apmt model ({type(error).__name__}: "
                        f"{error})") from None


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
    """The assembled application time at each point, with its 90% interval."""
    rows = table[(table["kernel"] == APP_KERNEL) & (table["metric"] == TIME_METRIC)]
    lines = []
    for _, row in rows.iterrows():
        point = " ".join(f"{name}={row[name]:g}" for name in ["p", *params])
        lines.append(f"{point}: application time {row['predicted']:.4g} s "
                     f"(90% interval {row['lower']:.4g} .. {row['upper']:.4g})")
    return "\n".join(lines)


# -------------------------------------------------------------------------------- evaluate

def run_evaluate(args: argparse.Namespace) -> None:
    """Hold out runs, fit on the rest with apmt and the baselines, and report the errors;
    for measurements, also validate the assembled model and decide on refinement."""
    from apmt.evaluate import evaluate, summary, validate

    _check_writable_format(args.output)
    kind = table_kind(args.table)
    table, params, per_rank = _read_with_params(args, args.table, kind)
    baselines = [name.strip() for name in args.baselines.split(",") if name.strip()]
    series = table
    if args.metrics and kind == "measurements":
        series = table[table["metric"].isin(args.metrics.split(","))]
        if series.empty:
            raise ApmtError(f"{args.table}: no series of metric(s) {args.metrics!r}")
    result = evaluate(series, kind, params, args.holdout, baselines, str(args.table), per_rank)
    decision = None
    if kind == "measurements":
        comm, options = _model_inputs(args, params, per_rank)
        rows, decision = validate(table, params, args.holdout, args.tolerance, str(args.table),
                                  comm, **options)
        result = pd.concat([result, rows], ignore_index=True)
    write_table(result, args.output)
    if decision is not None and args.validation is not None:
        write_text_atomic(json.dumps(decision, indent=1) + "\n", args.validation)
    log.info("wrote %s: %d rows", args.output, len(result))
    print(format_summary(summary(result[result["kernel"] != APP_KERNEL])))
    if decision is not None:
        print(f"validation: {decision['reason']}; "
              f"{'refine ' + decision['part'] if decision['refine'] else 'no refinement needed'}")


def table_kind(path: Path) -> str:
    """``communication`` when the header has op, calls, bytes and time, else measurements."""
    try:
        columns = _header(path)
    except (OSError, ValueError, ImportError, pd.errors.ParserError, UnicodeDecodeError):
        return "measurements"  # read_table reports the problem with the file
    return "communication" if set(COMM_REQUIRED[:4]) <= set(columns) else "measurements"


def _header(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        return list(pd.read_parquet(path).columns)
    return list(pd.read_csv(path, nrows=0).columns)


SUMMARY_FORMATS: dict[str, Callable[[float], str]] = {
    "median_ape": lambda v: f"{v:.1f}%", "p90_ape": lambda v: f"{v:.1f}%",
    "coverage_90": lambda v: "-" if pd.isna(v) else f"{v:.0%}",
}


def format_summary(table: pd.DataFrame) -> str:
    """apmt.evaluate.summary as a small text table: the median error per method first."""
    return table.to_string(index=False, formatters=SUMMARY_FORMATS, na_rep="-")


if __name__ == "__main__":
    sys.exit(main())
