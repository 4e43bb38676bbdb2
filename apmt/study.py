"""A study: which application to run, at which process counts and problem sizes, and how.

A study is a YAML file; every field is checked here, before any run starts, so that a typo
costs one line of error instead of an hour of runs. Fields:

    name            the study's name, the folder ``raw/<name>/`` (default: the file's stem)
    command         the application's command line, a template: split into words as a
                    shell splits them (quotes group a word), then ``{p}``, each parameter
                    (``{size}``) and ``{run_dir}`` (the run's folder, also its working
                    directory) filled in each word; the words run as they are, without a
                    shell (``|``, ``$(...)``, ``$VAR``, ``~`` inside a word are plain text),
                    optionally ending in ``< file`` for its standard input. A word that is a
                    shell operator (``;``, ``&&``, ``|``, ``>`` ...) is refused, as are
                    format specifications (``{p:>8}``, ``{p!r}``): a placeholder is its name
    p               process counts, e.g. [1, 2, 4] (at most 2**31 - 1, MPI's int)
    accepts_p       the P the application can run: any (default), powers_of_two, squares,
                    cubes, a list, or {form: ..., max: P} (apmt.accepted); the
                    study's own P are checked against it, and refinement proposes only these
    params          parameter name -> values; the runs are the product of these with ``p``
    labels          placeholders that name a parameter's value in words, e.g. NPB's class:
                    ``class: {na: {1400: S, 7000: W}}`` gives ``{class}`` = S where the
                    parameter na is 1400 (the model sees na, the command the class letter);
                    every value of the parameter needs its label
    points          instead of params: a list of parameter mappings; a point that gives ``p``
                    is one run at that P, the others are combined with every value in ``p``
    repetitions     runs per point (default 1, at most 1,000; a study makes at most 100,000
                    runs in all)
    launcher        auto (default: srun inside a Slurm allocation, where SLURM_JOB_ID is set,
                    else mpirun), mpirun, mpiexec or srun
    launcher_args   further words for the launcher, e.g. [--bind-to, core]
    srun_mpi        srun's --mpi plugin, e.g. pmix (srun, or auto when it chooses srun)
    backend         perf-events, perf-clock, cachegrind, auto (default) or none
    metrics         the abstract metrics to measure (default: the backend's choice)
    machine         machine file or shipped machine name (apmt.machine)
    timeout_s       time limit of one run in seconds (default 3600, at most 1e7)
    env             variables set for every rank (values may use the placeholders)
    setup           files the command needs, copied into each run's folder (paths relative
                    to the study file; checked to exist before the runs, not on loading)
    expect_output   a run that prints nothing on stdout and stderr failed (default true;
                    set false for an application that is silent by design)
    trace_mpi       record MPI calls with the PMPI library (default true)
    per_rank_params parameters that are already per rank (for the model)
    app_kernel      the kernel that covers the whole application (for the model)
    volume_ratios   communication volume ratios of a larger problem (p2p, collective or an
                    operation: ratio), kept in the provenance for ``apmt predict``
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import string
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path

from apmt.accepted import AcceptedP, parse_accepted
from apmt.errors import ApmtError
from apmt.inputs import MAX_P, MAX_VALUE, check_file, is_file, is_number, read_yaml, shown

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
PARAM_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
LABEL_PATTERN = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")
LAUNCHERS = ("auto", "mpirun", "mpiexec", "srun")
BACKENDS = ("perf-events", "perf-clock", "cachegrind", "auto", "none")
RUN_PLACEHOLDERS = ("p", "run_dir")
# parameter names that would collide with the tables' own columns or the placeholders
RESERVED_PARAMS = frozenset({"p", "rep", "rank", "peer", "kernel", "metric", "value", "unit",
                             "op", "calls", "bytes", "time", "library", "run_dir"})
MAX_REPETITIONS = 1000      # runs per point; more is a typo (1e12 runs would exhaust memory)
MAX_RUNS = 100_000          # runs of one study: P x parameter values x repetitions
MAX_TIMEOUT_S = 1e7         # a time limit of four months is no limit
SHELL_OPERATORS = (";", "&&", "||", "|", "&", ">", "`", "$(")  # "< file" is fine: stdin
STDIN = "<"
FIELDS = ("name", "command", "p", "accepts_p", "params", "labels", "points", "repetitions",
          "launcher",
          "launcher_args", "srun_mpi", "backend", "metrics", "machine", "timeout_s", "env",
          "setup", "expect_output", "trace_mpi", "per_rank_params", "app_kernel",
          "volume_ratios")


@dataclass(frozen=True)
class Run:
    """One launch of the application: a point (P and parameters) and a repetition."""

    p: int
    params: dict[str, float]
    rep: int
    suffix: str = ""   # a set of runs kept apart from the study's own, e.g. ``_f2000MHz``
    labels: dict[str, str] = field(default_factory=dict)   # label placeholder -> its text

    @property
    def name(self) -> str:
        """The run folder's name, ``p<P>[_<param><v>...]_r<rep>[<suffix>]``: readable and
        unique."""
        values = "".join(f"_{name}{_number(value)}" for name, value in self.params.items())
        return f"p{self.p}{values}_r{self.rep}{self.suffix}"

    def placeholders(self, run_dir: Path) -> dict[str, object]:
        """What a template may name; whole numbers print without ``.0``. Each fills one
        word as it is (no quoting: no shell reads the words)."""
        values = {name: _plain(value) for name, value in self.params.items()}
        return {"p": self.p, **values, **self.labels, "run_dir": str(run_dir)}


@dataclass(frozen=True)
class Study:
    """A checked study file."""

    name: str
    source: Path
    command: str
    p: tuple[int, ...]
    params: dict[str, tuple[float, ...]]
    accepts_p: AcceptedP = field(default_factory=AcceptedP)
    # label placeholder -> (the parameter it names, parameter value -> text)
    labels: dict[str, tuple[str, dict[float, str]]] = field(default_factory=dict)
    points: tuple[dict[str, float], ...] | None = None
    repetitions: int = 1
    launcher: str = "auto"
    launcher_args: tuple[str, ...] = ()
    srun_mpi: str | None = None
    backend: str = "auto"
    metrics: tuple[str, ...] | None = None
    machine: str | None = None
    timeout_s: float = 3600.0
    env: dict[str, str] = field(default_factory=dict)
    setup: tuple[Path, ...] = ()
    expect_output: bool = True
    trace_mpi: bool = True
    per_rank_params: tuple[str, ...] = ()
    app_kernel: str | None = None
    volume_ratios: dict[str, float] = field(default_factory=dict)
    frequency_ghz: float | None = None  # runs at a lowered CPU frequency (not a file field)

    @property
    def run_suffix(self) -> str:
        return frequency_suffix(self.frequency_ghz) if self.frequency_ghz else ""

    @property
    def param_names(self) -> list[str]:
        if self.points is not None:
            return [name for name in self.points[0] if name != "p"] if self.points else []
        return list(self.params)

    def runs(self) -> list[Run]:
        """Every run, repetitions outermost: each round covers every point once, so a slow
        drift of the machine touches all points alike (medians of interleaved runs), and an
        interrupted study has already seen every point."""
        return [Run(p, point, rep, self.run_suffix, self.labels_of(point))
                for rep in range(1, self.repetitions + 1) for p, point in self._points()]

    def labels_of(self, point: dict[str, float]) -> dict[str, str]:
        """The label placeholders' texts at a point (a value without a label is refused on
        loading, so every label of a checked study is found)."""
        return {label: texts.get(point.get(param), "")
                for label, (param, texts) in self.labels.items()}

    def _points(self) -> list[tuple[int, dict[str, float]]]:
        if self.points is None:
            names = list(self.params)
            combos = list(product(*(self.params[name] for name in names)))
            return [(p, dict(zip(names, values, strict=True)))
                    for p in self.p for values in combos]
        out = []
        for point in self.points:
            values = {k: v for k, v in point.items() if k != "p"}
            if "p" in point:
                out.append((int(point["p"]), values))
            else:
                out += [(p, dict(values)) for p in self.p]
        return out


def _number(value: float) -> str:
    """A value as folder names show it: 2000000, not 2e+06; 0.5 as is."""
    return str(_plain(value))


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


# ---------------------------------------------------------------------------------- loading

def load_study(path: str | Path) -> Study:
    """Read and check a study file; every problem is one ApmtError naming file, field, value."""
    path = check_file(path, "study file")
    return check_study(read_yaml(path), path)


def check_study(data: object, path: Path) -> Study:
    """The fields of a parsed study file, checked and with their defaults."""
    if not isinstance(data, dict):
        raise ApmtError(f"{path}: a study file is a mapping of fields ({', '.join(FIELDS)})")
    for key in data:
        if key not in FIELDS:
            raise ApmtError(f"{path}: unknown field {key!r} (known: {', '.join(FIELDS)})")
    fields = _Fields(data, path)
    p = fields.int_list("p", required="points" not in data or _points_lack_p(data))
    params, points = fields.params_and_points()
    study = Study(
        name=fields.name(), source=path, command=fields.text("command", required=True),
        p=tuple(p), params=params, points=points, labels=fields.labels(),
        accepts_p=parse_accepted(data.get("accepts_p"), path),
        repetitions=fields.positive_int("repetitions", 1, MAX_REPETITIONS),
        launcher=fields.choice("launcher", LAUNCHERS, "auto"),
        launcher_args=tuple(fields.words("launcher_args")),
        srun_mpi=fields.text("srun_mpi"), backend=fields.choice("backend", BACKENDS, "auto"),
        metrics=fields.optional_words("metrics"), machine=fields.machine(),
        timeout_s=fields.positive_number("timeout_s", 3600.0, MAX_TIMEOUT_S), env=fields.env(),
        setup=tuple(fields.setup()), expect_output=fields.flag("expect_output", True),
        trace_mpi=fields.flag("trace_mpi", True),
        per_rank_params=tuple(fields.words("per_rank_params")),
        app_kernel=fields.text("app_kernel"), volume_ratios=fields.ratios())
    _check_names(study, path)
    _check_run_count(study, path)
    _check_labels(study, path)
    _check_unique_runs(study, path)
    _check_accepted(study, path)
    _check_template(study.command, "command", study, path)
    for key, value in study.env.items():
        _check_template(value, f"env.{key}", study, path)
    return study


def _points_lack_p(data: dict) -> bool:
    points = data.get("points")
    return not isinstance(points, list) or any(
        not isinstance(point, dict) or "p" not in point for point in points)


class _Fields:
    """Typed access to the fields of one study file, each error naming the field."""

    def __init__(self, data: dict, path: Path) -> None:
        self.data, self.path = data, path

    def fail(self, key: str, value: object, expected: str) -> ApmtError:
        return ApmtError(f"{self.path}: field {key!r}: {shown(value, 60)} {expected}")

    def name(self) -> str:
        value = self.data.get("name", self.path.stem)
        if not isinstance(value, str) or not NAME_PATTERN.match(value):
            raise self.fail("name", value, "is not a valid name (letters, digits, '_', '.', "
                            "'-', starting with a letter or digit)")
        return value

    def missing(self, key: str) -> ApmtError:
        return ApmtError(f"{self.path}: field {key!r} is missing (required)")

    def text(self, key: str, required: bool = False) -> str | None:
        value = self.data.get(key)
        if value is None and not required:
            return None
        if key not in self.data:
            raise self.missing(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, value, "is not a non-empty string")
        return value.strip()

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if value not in choices:
            raise self.fail(key, value, f"is not one of {', '.join(choices)}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, value, "is not true or false")
        return value

    def positive_int(self, key: str, default: int, high: int) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise self.fail(key, value, f"is not a whole number from 1 to {high}")
        return value

    def positive_number(self, key: str, default: float, high: float) -> float:
        value = self.data.get(key, default)
        if not is_number(value, high=high):
            raise self.fail(key, value, f"is not a number in (0, {high:g}]")
        return float(value)

    def int_list(self, key: str, required: bool) -> list[int]:
        value = self.data.get(key)
        if value is None and not required:
            return []
        if key not in self.data:
            raise self.missing(key)
        if not isinstance(value, list) or not value:
            raise self.fail(key, value, "is not a non-empty list of process counts")
        for item in value:
            self.int_list_item(key, item)
        if len(set(value)) != len(value):
            raise self.fail(key, value, "lists a value twice")
        return value

    def words(self, key: str) -> list[str]:
        return list(self.optional_words(key) or ())

    def optional_words(self, key: str) -> tuple[str, ...] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, value, "is not a list of strings")
        return tuple(value)

    def params_and_points(self) -> tuple[dict[str, tuple[float, ...]],
                                         tuple[dict[str, float], ...] | None]:
        if "params" in self.data and "points" in self.data:
            raise ApmtError(f"{self.path}: fields 'params' and 'points' exclude each other "
                            "(params: the product of values; points: the runs one by one)")
        if "points" in self.data:
            return {}, self.points()
        params = self.data.get("params") or {}
        if not isinstance(params, dict):
            raise self.fail("params", params, "is not a mapping of parameter -> values")
        out = {}
        for name, values in params.items():
            if not isinstance(values, list) or not values:
                raise self.fail(f"params.{name}", values, "is not a non-empty list of numbers")
            out[name] = tuple(self.param_value(f"params.{name}", v) for v in values)
        return out, None

    def points(self) -> tuple[dict[str, float], ...]:
        points = self.data["points"]
        if not isinstance(points, list) or not points:
            raise self.fail("points", points, "is not a non-empty list of mappings")
        names, order = None, []
        out = []
        for index, point in enumerate(points):
            key = f"points[{index}]"
            if not isinstance(point, dict) or not point:
                raise self.fail(key, point, "is not a mapping of parameter -> value")
            these = sorted(k for k in point if k != "p")
            if names is not None and these != names:
                raise self.fail(key, point, f"names parameters {these}, the first point "
                                f"{names}")
            if names is None:
                names, order = these, [k for k in point if k != "p"]
            if "p" in point:
                self.int_list_item(f"{key}.p", point["p"])
            values = {k: self.param_value(f"{key}.{k}", point[k]) for k in order}
            out.append({**({"p": point["p"]} if "p" in point else {}), **values})
        return tuple(out)

    def labels(self) -> dict[str, tuple[str, dict[float, str]]]:
        """label placeholder -> (its parameter, value -> text)."""
        labels = self.data.get("labels") or {}
        if not isinstance(labels, dict):
            raise self.fail("labels", labels, "is not a mapping of placeholder -> "
                                              "{parameter: {value: text}}")
        out = {}
        for label, spec in labels.items():
            if not isinstance(label, str) or not PARAM_PATTERN.match(label):
                raise self.fail("labels", label, "is not a placeholder name (a letter, then "
                                                 "letters, digits or _)")
            if not isinstance(spec, dict) or len(spec) != 1:
                raise self.fail(f"labels.{label}", spec, "is not one parameter -> "
                                                         "{value: text} mapping")
            (param, texts), = spec.items()
            key = f"labels.{label}.{param}"
            if not isinstance(texts, dict) or not texts:
                raise self.fail(key, texts, "is not a mapping of parameter value -> text")
            out[label] = (str(param), {self.param_value(f"{key}", value):
                                       self.label_text(f"{key}.{value}", text)
                                       for value, text in texts.items()})
        return out

    def label_text(self, key: str, text: object) -> str:
        if isinstance(text, bool) or not isinstance(text, str | int) \
                or not LABEL_PATTERN.match(str(text)):
            raise self.fail(key, text, "is not a label (letters, digits, '.', '_', '+' or "
                                       "'-', at most 64)")
        return str(text)

    def int_list_item(self, key: str, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_P:
            raise self.fail(key, value, f"is not a process count from 1 to {MAX_P}")

    def param_value(self, key: str, value: object) -> float:
        if not is_number(value):
            raise self.fail(key, value, f"is not a positive number of at most {MAX_VALUE:.3g}")
        return float(value)

    def machine(self) -> str | None:
        value = self.text("machine")
        if value is None:
            return None
        beside = self.path.parent / value
        return str(beside) if is_file(beside) else value

    def env(self) -> dict[str, str]:
        env = self.data.get("env") or {}
        if not isinstance(env, dict):
            raise self.fail("env", env, "is not a mapping of variable -> value")
        out = {}
        for key, value in env.items():
            if not isinstance(key, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                raise self.fail("env", key, "is not a variable name")
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise self.fail(f"env.{key}", value, "is not a string or number")
            out[key] = str(value)
        return out

    def setup(self) -> list[Path]:
        """Paths only: whether they exist is checked before running (check_setup), so a
        study for another machine still loads here."""
        files = [(self.path.parent / os.path.expanduser(item)).resolve()
                 for item in self.words("setup")]
        names = [f.name for f in files]
        if len(set(names)) != len(names):
            raise self.fail("setup", [str(f) for f in files], "holds two files of one name")
        return files

    def ratios(self) -> dict[str, float]:
        ratios = self.data.get("volume_ratios") or {}
        if not isinstance(ratios, dict):
            raise self.fail("volume_ratios", ratios, "is not a mapping of pattern -> ratio")
        return {str(k): self.param_value(f"volume_ratios.{k}", v) for k, v in ratios.items()}


def _check_names(study: Study, path: Path) -> None:
    """Parameter names become placeholders, table columns and folder names."""
    for name in study.param_names:
        if not isinstance(name, str) or not PARAM_PATTERN.match(name) \
                or name in RESERVED_PARAMS:
            raise ApmtError(f"{path}: parameter {name!r} is not a usable name (letters, "
                            "digits and '_', starting with a letter; not one of "
                            f"{', '.join(sorted(RESERVED_PARAMS))})")
    for name in study.per_rank_params:
        if name not in study.param_names:
            raise ApmtError(f"{path}: field 'per_rank_params': {name!r} is not a parameter "
                            f"(parameters: {', '.join(study.param_names) or 'none'})")
    if study.srun_mpi is not None and study.launcher not in ("srun", "auto"):
        raise ApmtError(f"{path}: field 'srun_mpi': {study.srun_mpi!r} needs launcher srun "
                        f"or auto, not {study.launcher}")
    if study.metrics is not None and study.backend == "none":
        raise ApmtError(f"{path}: field 'metrics': {list(study.metrics)!r} needs a backend, "
                        "but backend is none")


def _check_labels(study: Study, path: Path) -> None:
    """A label names a value of a parameter of the study, under a name of its own, and every
    value the runs take has one."""
    for label, (param, texts) in study.labels.items():
        if label in (*study.param_names, *RUN_PLACEHOLDERS, *RESERVED_PARAMS):
            raise ApmtError(f"{path}: field 'labels.{label}': the name is taken (a parameter, "
                            "a placeholder or a table column)")
        if param not in study.param_names:
            raise ApmtError(f"{path}: field 'labels.{label}': {param!r} is not a parameter of "
                            f"the study (parameters: {', '.join(study.param_names) or 'none'})")
        missing = sorted({point[param] for _, point in study._points()} - set(texts))
        if missing:
            raise ApmtError(f"{path}: field 'labels.{label}.{param}': no label for {param} = "
                            f"{_number(missing[0])}")


def _check_run_count(study: Study, path: Path) -> None:
    """Count the runs before listing them: a list of 10**12 runs would exhaust memory."""
    if study.points is None:
        points = len(study.p) * math.prod(len(values) for values in study.params.values())
    else:
        points = sum(1 if "p" in point else len(study.p) for point in study.points)
    if points * study.repetitions > MAX_RUNS:
        raise ApmtError(f"{path}: {points} points x {study.repetitions} repetitions make "
                        f"{points * study.repetitions} runs, more than {MAX_RUNS}")


def _check_unique_runs(study: Study, path: Path) -> None:
    """Two runs in one folder would overwrite each other: every point must be distinct."""
    seen = set()
    for run in study.runs():
        if run.name in seen:
            field = "points" if study.points is not None else "params"
            raise ApmtError(f"{path}: field {field!r}: the run {run.name!r} comes twice "
                            "(a value or point is repeated)")
        seen.add(run.name)


def _check_accepted(study: Study, path: Path) -> None:
    """The study's own runs are P its application can run."""
    for run in study.runs():
        if not study.accepts_p.admits(run.p):
            where = "points" if study.points is not None and run.p not in study.p else "p"
            raise ApmtError(f"{path}: field {where!r}: P={run.p} is not what the application "
                            f"accepts (accepts_p: {study.accepts_p.text})")


def _check_template(template: str, key: str, study: Study, path: Path) -> None:
    """Every ``{name}`` in a template is known and bare, and the template fills for a run.
    No NUL character: a program's arguments and variables cannot hold one."""
    if "\0" in template:
        raise ApmtError(f"{path}: field {key!r}: {template!r} holds a NUL character")
    words = _template_words(template, key, path) if key == "command" else [template]
    for word in words:
        _check_fields(word, template, key, study, path)
    for run in study.runs()[:1]:
        try:
            for word in words:
                word.format(**run.placeholders(Path("run")))
        except (ValueError, KeyError, IndexError) as error:
            raise ApmtError(f"{path}: field {key!r}: {template!r} does not format "
                            f"({error})") from None
    if key == "command":
        _check_command_shape(words, template, path)


def _template_words(template: str, key: str, path: Path) -> list[str]:
    try:
        words = shlex.split(template)
    except ValueError as error:
        raise ApmtError(f"{path}: field {key!r}: {template!r}: {error}") from None
    if not words:
        raise ApmtError(f"{path}: field {key!r} is empty")
    return words


def _check_fields(word: str, template: str, key: str, study: Study, path: Path) -> None:
    """Only bare known names: a format specification or conversion (``{p:>400000000}``)
    is not documented and could blow up a word, so it is refused."""
    known = [*RUN_PLACEHOLDERS, *study.param_names, *study.labels]
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion
                  in string.Formatter().parse(word) if name is not None]
    except ValueError as error:
        raise ApmtError(f"{path}: field {key!r}: {template!r} is not a valid template "
                        f"({error}; write a literal brace as {{{{ or }}}})") from None
    for name, spec, conversion in fields:
        if name not in known:
            raise ApmtError(f"{path}: field {key!r}: unknown placeholder {{{name}}} in "
                            f"{template!r} (known: {', '.join('{' + k + '}' for k in known)})")
        if spec or conversion:
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ApmtError(f"{path}: field {key!r}: placeholder {{{shown[:40]}}} has a format "
                            f"specification; write {{{name}}} (no ':' or '!')")


def _check_command_shape(words: list[str], command: str, path: Path) -> None:
    """The words run without a shell: a word that is a shell operator means a shell was
    expected, and is refused rather than passed to the program as text."""
    if "=" in words[0]:
        raise ApmtError(f"{path}: field 'command': {words[0]!r} sets a variable; put it in "
                        "the field 'env'")
    for operator in SHELL_OPERATORS:
        if any(word == operator or word.startswith(operator) for word in words):
            raise ApmtError(f"{path}: field 'command': {command!r} uses the shell operator "
                            f"{operator!r}, but runs without a shell; give one program with "
                            "its arguments")
    body, _ = _split_stdin(words)
    if body[0].startswith(STDIN) or any(word.startswith(STDIN) for word in body):
        raise ApmtError(f"{path}: field 'command': {command!r}: '<' takes one file and ends "
                        "the command ('PROGRAM ARGS < FILE')")


def check_setup(study: Study) -> None:
    """The files to copy into each run folder exist (checked before the first run)."""
    for path in study.setup:
        if not path.is_file():
            raise ApmtError(f"{study.source}: field 'setup': {str(path)!r} is not a file")


def with_backend(study: Study, backend: str) -> Study:
    """The study measured with another backend (``apmt profile --backend``)."""
    if backend not in BACKENDS:
        raise ApmtError(f"--backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    if backend == "none" and study.metrics is not None:
        raise ApmtError(f"--backend none: the study {study.source} asks for metrics "
                        f"{list(study.metrics)!r}, which need a backend")
    return replace(study, backend=backend)


def with_p(study: Study, p_values: list[int]) -> Study:
    """The study at these P only (``apmt profile --p``): the workflow runs one P per job, so
    that each job asks its executor for P tasks, and refinement adds P the file does not list.
    Points that fix their own P are kept when their P is asked for; they cannot be made up."""
    if any(p < 1 for p in p_values):
        raise ApmtError(f"--p: process counts must be positive, not {min(p_values)}")
    fixed = [point for point in study.points or () if "p" in point]
    free = study.points is None or len(fixed) < len(study.points)
    fixed_p = {int(point["p"]) for point in fixed}
    unknown = sorted(set(p_values) - fixed_p) if not free else []
    if unknown:
        raise ApmtError(f"{study.source}: field 'points' has no point at P={unknown[0]}; "
                        f"its points are at P {sorted(fixed_p)}")
    points = None if study.points is None else tuple(
        point for point in study.points if "p" not in point or int(point["p"]) in p_values)
    return replace(study, p=tuple(sorted(set(p_values))) if free else (), points=points)


def frequency_suffix(ghz: float) -> str:
    """The run-name suffix of runs at a lowered frequency, in whole MHz: ``_f2000MHz``."""
    return f"_f{round(ghz * 1000)}MHz"


def with_frequency(study: Study, ghz: float) -> Study:
    """The study's runs at ``ghz`` (refinement's lower-frequency rerun): folders of their own
    (``p4_r1_f2000MHz``), so they never mix with, resume or overwrite the study's own runs."""
    if not ghz > 0 or not math.isfinite(ghz):
        raise ApmtError(f"--frequency: {ghz!r} is not a positive frequency in GHz")
    return replace(study, frequency_ghz=float(ghz))


def program_of(study: Study, run: Run, run_dir: Path) -> str:
    """The application's program: the first word of its command line."""
    return app_words(study, run, run_dir)[0][0]


def app_words(study: Study, run: Run, run_dir: Path) -> tuple[list[str], str | None]:
    """The application's words for one run, each template word filled on its own, and the
    file for its standard input (``< FILE`` at the end) or None."""
    values = run.placeholders(run_dir)
    words, stdin = _split_stdin(shlex.split(study.command))
    return ([word.format(**values) for word in words],
            None if stdin is None else stdin.format(**values))


def _split_stdin(words: list[str]) -> tuple[list[str], str | None]:
    if len(words) > 2 and words[-2] == STDIN:
        return words[:-2], words[-1]
    if len(words) > 1 and words[-1].startswith(STDIN) and len(words[-1]) > 1:
        return words[:-1], words[-1][1:]
    return words, None


def app_command(study: Study, run: Run, run_dir: Path) -> str:
    """The application's command line for one run as one line, every word quoted (so it
    reads as the words that run): for run.json and the dry run's note; the ranks exec
    ``app_words`` as they are."""
    words, stdin = app_words(study, run, run_dir)
    return shlex.join(words) + ("" if stdin is None else f" < {shlex.quote(stdin)}")


def find_program(program: str) -> Path | None:
    """Where the program is: a path as given (no ``~`` or ``$VAR``: no shell expands
    them), or on PATH."""
    if "/" in program:
        path = Path(program)
        return path.resolve() if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(program)
    return Path(found).resolve() if found else None
