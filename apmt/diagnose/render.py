"""A diagnosis as text (a terminal of ``width`` columns) and as HTML (the workflow's report).

Both show the same sections in the same order with the same words: the title, the note, the
findings (a severity and a sentence; a line break starts a paragraph, e.g. an example) and
the table. A table may name a bar column
(``table.attrs["bar_column"]``): its cells are PerfExpert's bars ('>' up to the value, '+' past
the scale, '1'/'2' for the worse of two runs); the HTML colours each character by the label
band it falls in and keeps the characters, so both outputs read alike.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Iterable, Sequence

import pandas as pd

from apmt.diagnose.section import Section
from apmt.display import number, pieces, short_names, wrap_words

MARKS = {"problem": "problem: ", "warning": "warning: ", "info": "- "}
MIN_COLUMN = 6
KERNEL_COLUMN = "kernel"   # its cells name functions: shortened as apmt.display.short_names
GAP = "  "
# label bands of a bar (great .. problematic), then run 1 and run 2 of a comparison
BAND_COLOURS = ("#1a9850", "#91cf60", "#fee08b", "#fc8d59", "#d73027")
DIGIT_COLOURS = {"1": "#4575b4", "2": "#8073ac"}
CSS = """
body { font-family: sans-serif; margin: 1.5em; }
section.apmt { margin-bottom: 1.5em; }
section.apmt h2 { font-size: 1.1em; border-bottom: 1px solid #888; }
p.note { color: #444; font-style: italic; }
ul.findings { list-style: none; padding-left: 0; }
ul.findings li { margin: 0.2em 0; }
span.severity { font-weight: bold; display: inline-block; min-width: 5em; }
li.problem span.severity { color: #b2182b; }
li.warning span.severity { color: #d6604d; }
li.info span.severity { color: #4d4d4d; }
table.apmt { border-collapse: collapse; font-size: 0.9em; }
table.apmt th, table.apmt td { padding: 0.1em 0.6em; text-align: left; vertical-align: top; }
table.apmt th { border-bottom: 1px solid #888; }
td.bar, th.bar { font-family: monospace; white-space: pre; }
"""


# ------------------------------------------------------------------------------------- text

def to_text(sections: Sequence[Section], width: int = 100) -> str:
    """Every section as plain text; no line is longer than ``width``."""
    lines: list[str] = []
    for section in sections:
        lines += _section_lines(section, width)
        lines.append("")
    fitted = [piece for line in lines for piece in _hard_wrap(line, width)]
    return "\n".join(fitted).rstrip() + "\n"


def _section_lines(section: Section, width: int) -> list[str]:
    lines = _wrap(f"== {section.title}", width)
    if len(lines[-1]) < width - 1:
        lines[-1] = (lines[-1] + " ").ljust(width, "=")
    if section.note:
        lines += _wrap(f"note: {section.note}", width, "      ")
    for finding in section.findings:
        mark = MARKS.get(finding.severity, f"{finding.severity}: ")
        indent = " " * min(len(mark), 9)
        first, *rest = finding.text.split("\n")
        lines += _wrap(mark + first, width, indent)
        for paragraph in rest:
            lines += _wrap(indent + paragraph, width, indent)
    if section.table is not None and not section.table.empty:
        lines += table_lines(section.table, width)
    return lines


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False) or [""]


def _hard_wrap(line: str, width: int) -> Iterable[str]:
    """The last guard: nothing leaves wider than the terminal."""
    while len(line) > width:
        yield line[:width]
        line = line[width:]
    yield line


def cell_text(value: object) -> str:
    """A table cell as both outputs print it."""
    if isinstance(value, float):
        return number(value)
    return str(value)


def table_lines(table: pd.DataFrame, width: int) -> list[str]:
    """The table in columns, narrowing the widest ones (their cells wrap) to fit ``width``;
    a row per column's value when even the numbers do not fit side by side."""
    headers = [str(c) for c in table.columns]
    names = _kernel_names(table)
    cells = [[_shown(c, cell_text(v), names) for c, v in zip(table.columns, row, strict=True)]
             for row in table.itertuples(index=False)]
    numeric = [_is_numeric(table[c]) for c in table.columns]
    widths = _column_widths(headers, cells, numeric, width)
    if widths is None:
        return _record_lines(headers, cells, width)
    lines = _row_lines(headers, widths, [False] * len(widths))
    lines.append(GAP.join("-" * w for w in widths))
    for row in cells:
        lines += _row_lines(row, widths, numeric)
    return [line.rstrip() for line in lines]


def _kernel_names(table: pd.DataFrame) -> dict[str, str]:
    """The kernel column's names as a cell shows them (apmt.display.short_names: a C++
    instantiation's arguments would fill a cell of nine lines); the HTML keeps the whole
    name as the cell's title."""
    if KERNEL_COLUMN not in table.columns:
        return {}
    return short_names(str(name) for name in table[KERNEL_COLUMN])


def _shown(column: object, text: str, names: dict[str, str]) -> str:
    """A cell's text as shown: a kernel column's name shortened (``_kernel_names``)."""
    return names.get(text, text) if column == KERNEL_COLUMN else text


def _column_widths(headers: list[str], cells: list[list[str]], numeric: list[bool],
                   width: int) -> list[int] | None:
    """Natural widths, narrowed to fit: first down to each column's longest cell (only the
    headers wrap, a line once, where a cell's wrap costs one in every row: a ranking's
    ``compute_tendencies_x`` kept whole, its ``rank_first`` over two lines), then to its
    longest word (a numeric column's cells do not wrap), then, if still too wide, down to its
    longest number (text words break, numbers never do). None when the numbers alone do not
    fit."""
    columns = [[h, *(row[i] for row in cells)] for i, h in enumerate(headers)]
    natural = [max(len(text) for text in column) for column in columns]
    words = [[w for text in column[1:] for w in ([text] if right else pieces(text))]
             for column, right in zip(columns, numeric, strict=True)]
    longest = [max([MIN_COLUMN, *map(len, column), *map(len, pieces(h))])
               for column, h in zip(words, headers, strict=True)]
    whole_cells = [max([least, *map(len, column[1:])])
                   for column, least in zip(columns, longest, strict=True)]
    numbers = [max([MIN_COLUMN, *(len(w) for w in [*column, *h.split()] if _is_number(w))])
               for column, h in zip(words, headers, strict=True)]
    widths = natural
    for least in (whole_cells, longest, numbers):
        widths = _narrowed(widths, least, width)
    return widths if _total(widths) <= width else None


def _narrowed(widths: list[int], least: list[int], width: int) -> list[int]:
    """The widest column above its least width loses a character until the table fits."""
    widths = list(widths)
    while _total(widths) > width:
        wider = [i for i, w in enumerate(widths) if w > least[i]]
        if not wider:
            break
        widths[max(wider, key=lambda i: widths[i])] -= 1
    return widths


def _total(widths: list[int]) -> int:
    return sum(widths) + len(GAP) * (len(widths) - 1)


def _is_number(word: str) -> bool:
    """A word that reads as a number ('1.582e-05', '12%', '(0.5)'): it is never broken."""
    try:
        float(word.strip("()[]<>=~,;:%*+x"))
    except ValueError:
        return False
    return True


def _record_lines(headers: list[str], cells: list[list[str]], width: int) -> list[str]:
    """Each row as 'column: value' lines under a rule, for a table too wide for the width."""
    lines = []
    for row in cells:
        lines.append("-" * width)
        for header, text in zip(headers, row, strict=True):
            lines += _wrap(f"{header}: {text}", width, "    ")
    return lines


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _row_lines(row: list[str], widths: list[int], numeric: list[bool]) -> list[str]:
    """One table row, over several lines where a cell is wider than its column."""
    wrapped = [wrap_words(text, w) for text, w in zip(row, widths, strict=True)]
    height = max(len(p) for p in wrapped)
    lines = []
    for index in range(height):
        parts = []
        for piece, w, right in zip(wrapped, widths, numeric, strict=True):
            text = piece[index] if index < len(piece) else ""
            parts.append(text.rjust(w) if right else text.ljust(w))
        lines.append(GAP.join(parts))
    return lines


# ------------------------------------------------------------------------------------- HTML

def to_html(sections: Sequence[Section], title: str = "apmt diagnosis") -> str:
    """A self-contained HTML page (no external files) with the same content as the text."""
    body = "\n".join(_section_html(section) for section in sections)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n{body}\n</body>\n</html>\n")


def _section_html(section: Section) -> str:
    parts = ['<section class="apmt">', f"<h2>{html.escape(section.title)}</h2>"]
    if section.note:
        parts.append(f'<p class="note">note: {html.escape(section.note)}</p>')
    if section.findings:
        items = [f'<li class="{html.escape(f.severity)}"><span class="severity">'
                 f"{html.escape(f.severity)}</span> {_lines_html(f.text)}</li>"
                 for f in section.findings]
        parts.append('<ul class="findings">\n' + "\n".join(items) + "\n</ul>")
    if section.table is not None and not section.table.empty:
        parts.append(_table_html(section.table))
    parts.append("</section>")
    return "\n".join(parts)


def _lines_html(text: str) -> str:
    """A finding's paragraphs (an example, the flags) on lines of their own, as in the text."""
    return "<br>\n".join(html.escape(line) for line in text.split("\n"))


def _table_html(table: pd.DataFrame) -> str:
    bar_column = table.attrs.get("bar_column")
    band = int(table.attrs.get("bar_band", 10))
    head = "".join(f'<th class="{"bar" if c == bar_column else ""}">{html.escape(str(c))}</th>'
                   for c in table.columns)
    names = _kernel_names(table)
    rows = []
    for row in table.itertuples(index=False):
        cells = []
        for column, value in zip(table.columns, row, strict=True):
            text = cell_text(value)
            shown = _shown(column, text, names)
            if column == bar_column:
                cells.append(f'<td class="bar">{bar_html(text, band)}</td>')
            elif shown != text:
                cells.append(f'<td title="{html.escape(text)}">{html.escape(shown)}</td>')
            else:
                cells.append(f"<td>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="apmt">\n<thead><tr>{head}</tr></thead>\n<tbody>\n'
            + "\n".join(rows) + "\n</tbody>\n</table>")


def bar_html(text: str, chars_per_band: int = 10) -> str:
    """A bar's characters, each run of them on the colour of its band (or of its run)."""
    if not text or any(ch not in ">+12" for ch in text):
        return html.escape(text)
    spans, start = [], 0
    while start < len(text):
        colour = _colour(text, start, chars_per_band)
        end = start
        while end < len(text) and _colour(text, end, chars_per_band) == colour:
            end += 1
        spans.append(f'<span style="background:{colour}">{html.escape(text[start:end])}</span>')
        start = end
    return "".join(spans)


def _colour(text: str, index: int, chars_per_band: int) -> str:
    char = text[index]
    if char in DIGIT_COLOURS:
        return DIGIT_COLOURS[char]
    return BAND_COLOURS[min(index // chars_per_band, len(BAND_COLOURS) - 1)]
