"""A study: which application to run, at which process counts and problem sizes, and how.

A study is a YAML file whose fields, with their types, defaults and descriptions, are the
schema workflow/schemas/study.schema.yaml (shipped as apmt/data/study.schema.yaml). load_study
is its one loader, for ``apmt profile`` and the workflow alike: every field is checked before
any run starts, so that a typo costs one line of error (file, field, value) instead of an hour
of runs. The schema checks each field; this module checks what spans fields: the command
template's placeholders and shape (it runs without a shell), the parameters' names, the work
expression (apmt.work: only the parameters and p), the labels, the number of runs, that no
two runs share a folder, and that the study's P are P its application accepts
(apmt.accepted).
"""

from __future__ import annotations

import functools
import math
import os
import re
import shlex
import shutil
import string
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from importlib import resources
from itertools import product
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from apmt.accepted import AcceptedP, parse_accepted
from apmt.errors import ApmtError
from apmt.inputs import MAX_VALUE, check_file, is_file, is_number, read_yaml, shown
from apmt.work import evaluate_work, parse_work, work_names

SCHEMA = yaml.safe_load((resources.files("apmt") / "data" / "study.schema.yaml").read_text())


def _finite(validator: Draft202012Validator, wanted: bool, instance: object,
            schema: dict) -> Iterator[ValidationError]:
    """The schema's ``finite`` keyword: a number that is not NaN nor infinite."""
    if wanted and isinstance(instance, float) and not math.isfinite(instance):
        yield ValidationError(f"{instance!r} is not a finite number")


_VALIDATOR = validators.extend(Draft202012Validator, {"finite": _finite})(SCHEMA)
FIELDS = tuple(SCHEMA["properties"])
NAME_PATTERN = re.compile(SCHEMA["properties"]["name"]["pattern"])
PARAM_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
BACKENDS = tuple(SCHEMA["properties"]["backend"]["enum"])
GRID_PLACEHOLDERS = ("px", "py", "pz")   # a 3-D process grid of P ranks (process_grid)
RUN_PLACEHOLDERS = ("p", *GRID_PLACEHOLDERS, "run_dir")
# parameter names that would collide with the tables' own columns or the placeholders
RESERVED_PARAMS = frozenset({"p", "rep", "rank", "peer", "kernel", "metric", "value", "unit",
                             "op", "calls", "bytes", "time", "library", "run_dir",
                             *GRID_PLACEHOLDERS})
MAX_RUNS = 100_000          # runs of one study: P x parameter values x repetitions
SHELL_OPERATORS = (";", "&&", "||", "|", "&", ">", "`", "$(")  # "< file" is fine: stdin
STDIN = "<"


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
        grid = dict(zip(GRID_PLACEHOLDERS, process_grid(self.p), strict=True))
        return {"p": self.p, **grid, **values, **self.labels, "run_dir": str(run_dir)}


@functools.lru_cache(maxsize=256)
def process_grid(p: int) -> tuple[int, int, int]:
    """P ranks as a 3-D grid, largest side first, as even as P allows (the least spread
    between the largest and the smallest side): for codes that take their decomposition on
    the command line (CoMD's -i -j -k, miniGhost's --npx --npy --npz) and refuse a grid whose
    product is not P, at every P refinement may propose. MPI_Dims_create's greedy split of
    the prime factors is not always this even (432 = 12 x 6 x 6 where 9 x 8 x 6 exists)."""
    divisors = _divisors(p)
    grids = ((a, b, p // (a * b)) for a in divisors for b in divisors
             if b <= a and (p // a) % b == 0 and p // (a * b) <= b)
    return min(grids, key=lambda grid: (grid[0] - grid[2], grid))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


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
    work: str | None = None     # the work per rank, canonical (apmt.work)
    scaling: str | None = None
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


def fill(template: str, run: Run, run_dir: Path) -> str:
    """A template with its placeholders filled for a run: a name as Run.placeholders gives
    it; an expression of p, the process grid and the parameters (apmt.work's grammar) its
    value, whole numbers without ``.0``. Why: many codes take the work per rank on their
    command line (HPGMG's boxes per rank, a per-rank grid), which in a strong-scaling study
    is the total over P: ``{64/p}``."""
    values = run.placeholders(run_dir)
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(literal)
        if name is not None:
            parts.append(str(values[name] if name in values else _computed(name, values)))
    return "".join(parts)


def _computed(expression: str, values: dict[str, object]) -> int | float:
    """An expression placeholder's value at a run's placeholders (checked when the study
    loaded: _check_fields)."""
    numbers = {name: [value] for name, value in values.items()
               if isinstance(value, (int, float))}
    value = float(evaluate_work(expression, numbers)[0])
    if not math.isfinite(value):
        raise ApmtError(f"placeholder {{{expression}}} has no finite value at P={values['p']}")
    return _plain(value)


# ---------------------------------------------------------------------------------- loading

def load_study(path: str | Path) -> Study:
    """Read and check a study file; every problem is one ApmtError naming file, field, value."""
    path = check_file(path, "study file")
    return check_study(read_yaml(path), path)


def check_study(data: object, path: Path) -> Study:
    """The fields of a parsed study file, checked against the schema (SCHEMA) and with its
    defaults, then the checks that span fields."""
    if not isinstance(data, dict):
        raise ApmtError(f"{path}: a study file is a mapping of fields ({', '.join(FIELDS)})")
    _check_schema(data, path)
    given = {key: value for key, value in data.items() if value is not None}
    fields = {**{key: spec["default"] for key, spec in SCHEMA["properties"].items()
                 if "default" in spec}, **given}
    if not fields.get("p") and _points_lack_p(fields):
        raise ApmtError(f"{path}: field 'p' is missing (required)" if "p" not in data else
                        f"{path}: field 'p': {shown(data['p'], 60)} is not a non-empty list "
                        "of process counts")
    if fields["params"] and "points" in fields:
        raise ApmtError(f"{path}: fields 'params' and 'points' exclude each other "
                        "(params: the product of values; points: the runs one by one)")
    study = Study(
        name=fields.get("name", path.stem), source=path, command=fields["command"].strip(),
        p=tuple(int(p) for p in fields.get("p") or ()),
        params={name: tuple(float(v) for v in values) for name, values in fields["params"].items()},
        points=_points(fields["points"], path) if "points" in fields else None,
        labels=_labels(fields["labels"], path),
        accepts_p=parse_accepted(data.get("accepts_p"), path),
        repetitions=int(fields["repetitions"]), launcher=fields["launcher"],
        launcher_args=tuple(fields["launcher_args"]), srun_mpi=_text(fields.get("srun_mpi")),
        backend=fields["backend"],
        metrics=tuple(fields["metrics"]) if "metrics" in fields else None,
        machine=_machine(_text(fields.get("machine")), path),
        timeout_s=float(fields["timeout_s"]),
        env={key: str(value) for key, value in fields["env"].items()},
        setup=_setup(fields["setup"], path), expect_output=fields["expect_output"],
        trace_mpi=fields["trace_mpi"], per_rank_params=tuple(fields["per_rank_params"]),
        app_kernel=_text(fields.get("app_kernel")),
        volume_ratios={str(k): float(v) for k, v in fields["volume_ratios"].items()},
        scaling=fields.get("scaling"))
    _check_names(study, path)
    if fields.get("work") is not None:
        study = replace(study, work=parse_work(fields["work"], ["p", *study.param_names],
                                               f"{path}: field 'work'"))
    _check_run_count(study, path)
    _check_labels(study, path)
    _check_unique_runs(study, path)
    _check_accepted(study, path)
    _check_template(study.command, "command", study, path)
    for key, value in study.env.items():
        _check_template(value, f"env.{key}", study, path)
    return study


def _check_schema(data: dict, path: Path) -> None:
    """The first way the file breaks the schema, as one line: the field (dotted, points by
    index), the value and the field's ``expected`` text."""
    error = best_match(_VALIDATOR.iter_errors(data))
    if error is None:
        return
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in error.instance)
        raise ApmtError(f"{path}: field {missing!r} is missing (required)")
    if error.validator == "additionalProperties" and not error.path:
        unknown = next(key for key in error.instance if key not in FIELDS)
        raise ApmtError(f"{path}: unknown field {unknown!r} (known: {', '.join(FIELDS)})")
    key, expected = _where(data, list(error.path))
    own = error.schema.get("expected") if isinstance(error.schema, dict) else None
    expected = own or expected
    if isinstance(expected, dict):
        expected = expected.get(error.validator, expected["*"])
    raise ApmtError(f"{path}: field {key!r}: {shown(error.instance, 60)} {expected}")


def _where(data: object, steps: list) -> tuple[str, str | dict]:
    """The dotted name of the field at ``steps`` of the study's data (an index only into
    ``points``: the other lists are named by the list), and the ``expected`` text of the
    deepest schema node on the way that has one."""
    node, name, expected, value = SCHEMA, "", SCHEMA.get("expected"), data
    for step in steps:
        if isinstance(value, list):
            node = _resolved(node.get("items", {}))
            name += f"[{step}]" if name == "points" else ""
        else:
            node = _resolved(node.get("properties", {}).get(step)
                             or node.get("additionalProperties") or {})
            name += f".{step}" if name else str(step)
        value = value[step]
        expected = node.get("expected", expected)
    return name, expected


def _resolved(node: dict) -> dict:
    """A schema node, its ``$ref`` to the schema's $defs followed."""
    ref = node.get("$ref") if isinstance(node, dict) else None
    return SCHEMA["$defs"][ref.rsplit("/", 1)[-1]] if ref else node


def _points_lack_p(fields: dict) -> bool:
    points = fields.get("points")
    return not isinstance(points, list) or any("p" not in point for point in points)


def _points(points: list[dict], path: Path) -> tuple[dict[str, float], ...]:
    """The points (each a mapping checked by the schema), naming the same parameters."""
    names, order, out = None, [], []
    for index, point in enumerate(points):
        these = sorted(k for k in point if k != "p")
        if names is not None and these != names:
            raise ApmtError(f"{path}: field 'points[{index}]': {shown(point, 60)} names "
                            f"parameters {these}, the first point {names}")
        if names is None:
            names, order = these, [k for k in point if k != "p"]
        values = {k: float(point[k]) for k in order}
        out.append({**({"p": int(point["p"])} if "p" in point else {}), **values})
    return tuple(out)


def _labels(labels: dict, path: Path) -> dict[str, tuple[str, dict[float, str]]]:
    """label placeholder -> (its parameter, value -> text); the values must be numbers of
    the parameter (the schema checked the rest)."""
    out = {}
    for label, spec in labels.items():
        (param, texts), = spec.items()
        key = f"labels.{label}.{param}"
        for value in texts:
            if not is_number(value):
                raise ApmtError(f"{path}: field {key!r}: {shown(value, 60)} is not a "
                                f"positive number of at most {MAX_VALUE:.3g}")
        out[label] = (str(param), {float(value): str(text) for value, text in texts.items()})
    return out


def _text(value: str | None) -> str | None:
    return value.strip() if value is not None else None


def _machine(value: str | None, path: Path) -> str | None:
    """A machine file beside the study file, else the name or path as given."""
    if value is None:
        return None
    beside = path.parent / value
    return str(beside) if is_file(beside) else value


def _setup(names: list[str], path: Path) -> tuple[Path, ...]:
    """Paths only: whether they exist is checked before running (check_setup), so a study
    for another machine still loads here."""
    files = [(path.parent / os.path.expanduser(item)).resolve() for item in names]
    if len({f.name for f in files}) != len(files):
        raise ApmtError(f"{path}: field 'setup': {shown([str(f) for f in files], 60)} holds "
                        "two files of one name")
    return tuple(files)


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
    for run in study.runs():
        for word in words:
            try:
                fill(word, run, Path("run"))
            except ApmtError as error:     # an expression without a finite value there
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
    numeric = ["p", *GRID_PLACEHOLDERS, *study.param_names]
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion
                  in string.Formatter().parse(word) if name is not None]
    except ValueError as error:
        raise ApmtError(f"{path}: field {key!r}: {template!r} is not a valid template "
                        f"({error}; write a literal brace as {{{{ or }}}})") from None
    for name, spec, conversion in fields:
        if name not in known and not _an_expression(name, numeric):
            raise ApmtError(f"{path}: field {key!r}: unknown placeholder {{{name}}} in "
                            f"{template!r} (known: {', '.join('{' + k + '}' for k in known)}, "
                            f"or an expression of {', '.join(numeric)} such as {{64/p}})")
        if spec or conversion:
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ApmtError(f"{path}: field {key!r}: placeholder {{{shown[:40]}}} has a format "
                            f"specification; write {{{name}}} (no ':' or '!')")


def _an_expression(text: str, names: list[str]) -> bool:
    """Whether a placeholder is an expression of ``names`` (apmt.work's grammar) that names
    at least one of them: a bare number in braces is no placeholder."""
    try:
        return bool(work_names(parse_work(text, names, "")))
    except ApmtError:
        return False


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
    words, stdin = _split_stdin(shlex.split(study.command))
    return ([fill(word, run, run_dir) for word in words],
            None if stdin is None else fill(stdin, run, run_dir))


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
