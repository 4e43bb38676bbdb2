"""Numbers and names as users read them: in the diagnosis (text and HTML), `apmt predict` and
the figures.

The fits clamp a prediction of nothing to the smallest positive float (``apmt.fit.TINY``,
2.2e-308), and averages or intervals built on it stay absurdly small; printed as they are, they
read as a measurement. Every printed value goes through ``number`` or ``seconds``, so the clamp
shows as 0 and a time below what any timer resolves shows as below a nanosecond. Text that
must fit a width (table cells, figure titles) wraps with ``wrap_words``: between words or after
an underscore of a long name, never at the hyphen of a number such as 1.582e-05. A function's
name in a table cell or a figure goes through ``short_names`` or ``figure_name``: C++ profiles
name a member by its whole instantiation, hundreds of characters that say little.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from collections.abc import Iterable

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


NAME_WIDTH = 45       # a function's name in a table cell or a figure's label
# C++ operators whose symbols hold the brackets that nest template and parameter lists
_OPERATOR = re.compile(r"\boperator\s*(<=>|<<=|>>=|<<|>>|<=|>=|->\*|->|<|>|\(\)|\[\])")
_BRACKETS = {"<": ">", "(": ")"}


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """A function's name shortened toward ``width``: C++'s template arguments collapse to
    <…>, then its parameters to (…), so what stays is the scope and the function's own name,
    which tell functions apart (std::_Rb_tree<…>::_M_erase, not 300 characters of one
    instantiation's arguments). A name without them stays whole: a table wraps it."""
    for opening in "<(":
        if len(name) > width:
            name = _collapsed(name, opening)
    return name


def figure_name(name: str, width: int = NAME_WIDTH) -> str:
    """A figure's label of at most ``width`` characters: the ``short_name``, and if that is
    still too long, without its middle (the function's own name at the end stays)."""
    name = short_name(name, width)
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[len(name) - (width - 1 - head):]


def short_names(names: Iterable[str], width: int = NAME_WIDTH) -> dict[str, str]:
    """Each name's ``short_name`` where that stays unique among ``names``; a name whose short
    form another shares keeps its whole (foo<int>::run and foo<double>::run stay apart)."""
    shorts = {name: short_name(name, width) for name in names}
    counts = Counter(shorts.values())
    return {name: short if counts[short] == 1 else name for name, short in shorts.items()}


def _collapsed(name: str, opening: str) -> str:
    """``name`` with every outermost list that ``opening`` starts emptied to an ellipsis;
    operators' symbols (operator<<, operator()) are no brackets. As it is when the brackets
    do not balance."""
    closing, out, depth, i, start = _BRACKETS[opening], [], 0, 0, 0
    while i < len(name):
        operator = _OPERATOR.match(name, i)
        if operator:
            if depth == 0:
                out.append(operator.group(0))
            i = operator.end()
            continue
        char = name[i]
        if char == opening:
            depth += 1
            if depth == 1:
                start = i
        elif char == closing and depth:
            depth -= 1
            if depth == 0:
                out.append(opening + ("…" if i > start + 1 else "") + closing)
        elif depth == 0:
            out.append(char)
        i += 1
    return name if depth else "".join(out)


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
