"""Which process counts an application can run: a study's ``accepts_p``.

Many codes run only at some P: NPB's CG, MG, FT and LU at powers of two, BT and SP at
squares, a 3-D domain decomposition at cubes, and a small problem class only up to some P
(LU class S stops at 32: "SUBDOMAIN SIZE IS TOO SMALL"). A study says so, its own runs are
checked against it, and refinement proposes only such P. The field is one of:

    any                every P (the default)
    powers_of_two      1, 2, 4, 8, ...
    squares            1, 4, 9, 16, ...
    cubes              1, 8, 27, 64, ...
    [2, 4, 6, 12]      exactly these
    {form: squares, max: 256}   a form (or ``values: [...]``) with a largest P
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from apmt.errors import ApmtError
from apmt.inputs import MAX_P

FORMS = ("any", "powers_of_two", "squares", "cubes")
KEYS = ("form", "values", "max")
EXPONENTS = {"squares": 2, "cubes": 3}


@dataclass(frozen=True)
class AcceptedP:
    """The P an application accepts: a form or a list of values, and a largest P."""

    form: str = "any"
    values: tuple[int, ...] = ()      # the form "list": exactly these
    max_p: int | None = None

    def admits(self, p: int) -> bool:
        if p < 1 or (self.max_p is not None and p > self.max_p):
            return False
        if self.form == "list":
            return p in self.values
        if self.form == "powers_of_two":
            return p & (p - 1) == 0
        if self.form == "any":
            return True
        exponent = EXPONENTS[self.form]
        root = round(p ** (1 / exponent))
        return any((root + step) ** exponent == p for step in (-1, 0, 1))

    def between(self, low: float, high: float) -> list[int]:
        """The accepted P in [low, high], for a form other than any (there, which P to try
        is the refinement's choice)."""
        if self.form == "list":
            return [p for p in self.values if low <= p <= high and self.admits(p)]
        top = int(min(high, self.max_p or high))
        if self.form == "powers_of_two":
            found = (2**k for k in range(top.bit_length()))
        else:
            exponent = EXPONENTS[self.form]
            found = (k**exponent for k in range(1, math.isqrt(top) + 2))
        return [p for p in found if low <= p <= top]

    @property
    def text(self) -> str:
        shown = ", ".join(map(str, self.values)) if self.form == "list" else \
            self.form.replace("_", " ")
        return shown + (f" up to {self.max_p}" if self.max_p is not None else "")


def parse_accepted(value: object, path: Path, key: str = "accepts_p") -> AcceptedP:
    """The field's value as AcceptedP; one ApmtError naming file, field and value."""
    def fail(shown: object, expected: str) -> ApmtError:
        return ApmtError(f"{path}: field {key!r}: {shown!r} {expected}")

    if value is None:
        return AcceptedP()
    if isinstance(value, str):
        if value not in FORMS:
            raise fail(value, f"is not one of {', '.join(FORMS)}, a list of P or a mapping")
        return AcceptedP(value)
    if isinstance(value, list):
        return AcceptedP("list", _process_counts(value, fail))
    if not isinstance(value, dict) or set(value) - set(KEYS) or \
            ("form" in value) == ("values" in value):
        raise fail(value, "is not a form, a list of P, or a mapping with form or values "
                          "(not both) and max")
    top = value.get("max")
    if top is not None:
        [top] = _process_counts([top], fail)
    if "values" in value:
        return AcceptedP("list", _process_counts(value["values"], fail), top)
    return AcceptedP(parse_accepted(value["form"], path, f"{key}.form").form, max_p=top)


def _process_counts(values: object, fail) -> tuple[int, ...]:
    if not isinstance(values, list) or not values:
        raise fail(values, "is not a non-empty list of process counts")
    for item in values:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_P:
            raise fail(item, f"is not a whole number from 1 to {MAX_P}")
    return tuple(sorted(set(values)))
