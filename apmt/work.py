"""The work per rank of an application: an expression of its parameters and P.

APMT (paper 000, 4.2) predicts larger problems through the compute per rank, and that is not
``size/P`` for every code: LAMMPS' box edge ``size`` holds ``size**3`` atoms, HOMME's ``ne``
``6 * ne**2`` elements, NPB's classes a grid of ``grid**3`` points. A study states it (field
``work``, or ``--work``) and the fits use it in place of ``size/P`` (apmt.series.fit_plan).

The text comes from files and command lines, so it is parsed, never run: Python's ``ast``
with a whitelist (numbers, the names given, ``+ - * / **``, unary minus, parentheses and a few
functions), evaluated on numpy arrays by walking the tree. The canonical text (``ast.unparse``)
names the variable in the fits, so ``size**3/p`` and ``size ** 3 / p`` are one variable.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

import numpy as np
from scipy import optimize

from apmt.errors import ApmtError

MAX_LENGTH = 200
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt, "cbrt": np.cbrt}
OPERATORS: dict[type, Callable] = {ast.Add: operator.add, ast.Sub: operator.sub,
                                   ast.Mult: operator.mul, ast.Div: operator.truediv,
                                   ast.Pow: operator.pow}


class _Refused(ValueError):
    """A part of the expression outside the whitelist: its text."""


def parse_work(text: object, names: Iterable[str], where: str) -> str:
    """The canonical text of a work expression over ``names`` (the parameters and ``p``);
    anything else is one ApmtError naming ``where`` (file and field, or the option), the
    text and the part that is not allowed."""
    known = sorted(set(names))
    if not isinstance(text, str) or not text.strip():
        raise ApmtError(f"{where}: {text!r} is not an expression (e.g. size**3 / p)")
    if len(text) > MAX_LENGTH:
        raise ApmtError(f"{where}: {text[:40]!r}... is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ApmtError(f"{where}: {text!r} is not an expression ({_allowed(known)})") \
            from None
    try:
        _check(tree.body, frozenset(known))
    except _Refused as error:
        raise ApmtError(f"{where}: {text!r}: {error} is not allowed ({_allowed(known)})") \
            from None
    return ast.unparse(tree.body)


def _allowed(names: list[str]) -> str:
    return (f"allowed: numbers, the names {', '.join(names)}, + - * / **, parentheses and "
            f"the functions {', '.join(FUNCTIONS)}")


def work_names(text: str) -> set[str]:
    """The names an expression (canonical, as parse_work returns it) reads."""
    nodes = list(ast.walk(ast.parse(text, mode="eval")))
    called = {id(node.func) for node in nodes if isinstance(node, ast.Call)}
    return {node.id for node in nodes if isinstance(node, ast.Name) and id(node) not in called}


def evaluate_work(text: str, values: Mapping[str, np.ndarray]) -> np.ndarray:
    """The expression's value at every point of ``values`` (arrays by name)."""
    missing = sorted(work_names(text) - set(values))
    if missing:
        raise ApmtError(f"work {text!r}: no value of {missing[0]!r} (known: "
                        f"{', '.join(sorted(values))})")
    with np.errstate(all="ignore"):
        return np.asarray(_compiled(text)(values), float)


@lru_cache(maxsize=64)
def _compiled(text: str) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    """The checked tree of an expression as a function of the values (parsed once)."""
    tree = ast.parse(text, mode="eval").body
    _check(tree, None)
    return lambda values: _value(tree, values)


def _check(node: ast.AST, names: frozenset[str] | None) -> None:
    """Refuse every node outside the whitelist (``names`` None: any name)."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise _Refused(f"the constant {ast.unparse(node)}")
    elif isinstance(node, ast.Name):
        if names is not None and node.id not in names:
            raise _Refused(f"the name {node.id!r}")
    elif isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(node.operand, names)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in FUNCTIONS and len(node.args) == 1 and not node.keywords:
        _check(node.args[0], names)
    else:
        raise _Refused(repr(ast.unparse(node)))


def _value(node: ast.AST, values: Mapping[str, np.ndarray]) -> np.ndarray | float:
    if isinstance(node, ast.Constant):
        return np.float64(node.value)    # numpy's overflow is inf, not an exception
    if isinstance(node, ast.Name):
        return np.asarray(values[node.id], float)
    if isinstance(node, ast.BinOp):
        return OPERATORS[type(node.op)](_value(node.left, values), _value(node.right, values))
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    return FUNCTIONS[node.func.id](_value(node.args[0], values))


def constant_work(text: str, values: Mapping[str, np.ndarray], grown: Iterable[str],
                  target: float) -> np.ndarray | None:
    """The factor per point by which the ``grown`` parameters (from ``values``) scale so that
    the work per rank stays ``target``: weak scaling as the expression says (LAMMPS'
    ``size**3 / p`` grows size as the cube root of P, not as P). None where the expression
    does not reach the target by scaling them (it does not depend on them)."""
    grown = set(grown)

    def gap(log_factor: float, index: int) -> float:
        point = {name: np.atleast_1d(np.asarray(column, float)[index])
                 * (np.exp(log_factor) if name in grown else 1.0)
                 for name, column in values.items()}
        return float(np.log(evaluate_work(text, point)[0]) - np.log(target))

    factors = []
    for index in range(len(values["p"])):
        try:
            factors.append(np.exp(optimize.brentq(gap, -40.0, 40.0, args=(index,))))
        except ValueError:      # no sign change: the work does not move with them
            return None
    return np.asarray(factors)
