"""Numbers and names as users read them: in the diagnosis (text and HTML), `apmt predict` and
the figures.

The fits clamp a prediction of nothing to the smallest positive float (``apmt.fit.TINY``,
2.2e-308), and averages or intervals built on it stay absurdly small; printed as they are, they
read as a measurement. Every printed value goes through ``number`` or ``seconds``, so the clamp
shows as 0 and a time below what any timer resolves shows as below a nanosecond. Text that
must fit a width (table cells, figure titles) wraps with ``wrap_words``: between words or after
an underscore of a long name, never at the hyphen of a number such as 1.582e-05.
"""

from __future__ import annotations

import math
import re
import textwrap

NEGLIGIBLE = 1e-100   # no count, ratio or time apmt reports is this small: only fit.TINY's kin
TIME_FLOOR_S = 1e-9   # a nanosecond, a few cycles: below it a time per rank means nothing
MISSING = "-"


def number(value: float | None, digits: int = 4) -> str:
    """A value in ``digits`` significant digits; '-' when missing, '0' when clamped."""
    if value is None or math.isnan(value):
        return MISSING
    if abs(value) < NEGLIGIBLE:
        return "0"
    return f"{value:.{digits}g}"


def seconds(value: float | None, digits: int = 3, missing: str = MISSING) -> str:
    """A time with its unit: '0 s' when clamped, '< 1e-9 s' below a nanosecond."""
    if value is None or math.isnan(value):
        return missing
    if abs(value) < NEGLIGIBLE:
        return "0 s"
    if abs(value) < TIME_FLOOR_S:
        floor = f"{TIME_FLOOR_S:g}".replace("e-0", "e-")
        return f"{'> -' if value < 0 else '< '}{floor} s"
    return f"{number(value, digits)} s"


class _Wrapper(textwrap.TextWrapper):
    """Breaks at white space and after underscores (rank_first, long kernel and study names)."""
    wordsep_simple_re = re.compile(r"(\s+|(?<=_)(?=[^_\s]))")


def pieces(text: str) -> list[str]:
    """The parts ``wrap_words`` never breaks unless a part alone is wider than a line."""
    return [c for c in _Wrapper.wordsep_simple_re.split(text) if c and not c.isspace()]


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken between its ``pieces``; as it
    is when it fits."""
    if len(text) <= width:
        return [text]
    return _Wrapper(width, break_on_hyphens=False).wrap(text) or [""]
