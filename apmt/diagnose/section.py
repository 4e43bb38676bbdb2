"""One part of a diagnosis, as every diagnosis module returns it and every renderer shows it.

A diagnosis is a list of sections; the text renderer (100 columns) and the HTML report show the
same sections, so what a user reads in the terminal is what the report holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

SEVERITIES = ("info", "warning", "problem")


@dataclass
class Finding:
    """One statement with the numbers behind it, e.g. a kernel that stops scaling at P=64."""
    severity: str          # one of SEVERITIES
    text: str              # a sentence a user can act on, numbers included
    kernel: str | None = None
    rank: int | None = None
    p: int | None = None


@dataclass
class Section:
    """A titled part: findings first, then an optional table of the numbers they come from."""
    title: str
    findings: list[Finding] = field(default_factory=list)
    table: pd.DataFrame | None = None
    note: str | None = None    # e.g. "not measured: the backend gives no TLB counters"
