"""Reading files from outside: text that may not be UTF-8, YAML that may not parse, numbers that
may be NaN, infinite or absurd. Every problem is one ApmtError naming the file and the value.

Bounds, so that a damaged file cannot pass for a measurement or exhaust memory:
    MAX_P      2**31 - 1 processes: MPI numbers its ranks with a C int
    MAX_VALUE  2**64: more than a 64-bit counter holds; no measured count, time or size is
               larger (values of 1e308 overflow every sum and fit)
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from apmt.errors import ApmtError

MAX_P = 2 ** 31 - 1
MAX_VALUE = 2.0 ** 64


def is_file(path: str | Path) -> bool:
    """Path.is_file, False also for a name the system cannot look up (too long, say)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: str | Path) -> bool:
    """Path.is_dir, False also for a name the system cannot look up."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def check_file(path: str | Path, what: str = "file") -> Path:
    """The path, if it is a file; else one line saying whether it is missing or a folder."""
    path = Path(path)
    if not is_file(path):
        kind = "is a directory, not a" if is_dir(path) else "no such"
        raise ApmtError(f"{cut(str(path))}: {kind} {what}")
    return path


def read_text(path: str | Path) -> str:
    """A file's text; a file that is not UTF-8 (a binary, another encoding) is one line
    naming the file, the first bad byte and where it is."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ApmtError(f"{path}: is a directory, not a file") from None
    except OSError as error:
        raise ApmtError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ApmtError(f"{path}: line {line}: byte 0x{data[error.start]:02x} is not UTF-8 text "
                        "(a binary file, or another encoding?)") from None


def read_yaml(path: str | Path) -> object:
    """A YAML file's data (safe types only); bad text or syntax is one line."""
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ApmtError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    except RecursionError:
        raise ApmtError(f"{path}: not valid YAML (nested too deeply)") from None


def is_number(value: object, low: float = 0.0, high: float = MAX_VALUE,
              low_inclusive: bool = False) -> bool:
    """Whether a parsed value is a finite number in (low, high] ([low, high] when
    ``low_inclusive``); ``true`` is no number, though Python counts it as 1."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        number = float(value)
    except OverflowError:        # a whole number of hundreds of digits
        return False
    above = number >= low if low_inclusive else number > low
    return math.isfinite(number) and above and number <= high


def shown(value: object, width: int = 40) -> str:
    """A value as an error message shows it: repr, cut to ``width`` characters (a 400-digit
    number or a long line stays one readable line)."""
    return cut(repr(value), width)


def cut(text: str, width: int = 200) -> str:
    """Text cut to ``width`` characters, ``...`` marking the cut."""
    return text if len(text) <= width else text[:width - 3] + "..."
