"""Two runs side by side (PerfExpert's correlation of two inputs, paper 002, II.C.2).

For example the same application with two thread or rank placements, or before and after an
optimization. Per kernel that is key in either run and counted in both, each category's LCPI
of both runs (each at its own assessed point, see apmt.diagnose.lcpi) and one bar: '>' for
the part both share, then '1's when run 1 is worse (higher), '2's when run 2 is; the number
of digits is the difference on the bar's scale. A category measured in only one run says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from apmt.diagnose.lcpi import (
    Bound,
    Config,
    assessed_point,
    bar_chars,
    counted_value,
    describe_point,
    format_lcpi,
    kernel_bounds,
    key_kernels,
    load_config,
    point_values,
    scale,
)
from apmt.diagnose.section import Finding, Section
from apmt.diagnose.study import StudyData, read_study
from apmt.display import seconds
from apmt.tables import APP_KERNEL, TIME_METRIC


def comparison_bar(first: float, second: float, config: Config) -> str:
    """'>' up to the lower LCPI, then '1' or '2' up to the higher; '+' past the scale."""
    if math.isnan(first) or math.isnan(second):
        if math.isnan(first) and math.isnan(second):
            return "not measured"
        return f"run {2 if math.isnan(first) else 1} only"
    low, high = sorted((first, second))
    digit = "1" if first > second else "2"
    text = ">" * bar_chars(low, config) + digit * (bar_chars(high, config) - bar_chars(low, config))
    if len(text) > config.bar_width:
        text = text[:config.bar_width - 1] + "+"
    return text


def worse_run(first: float, second: float, config: Config) -> int | None:
    """1 or 2 when that run is worse by at least one bar character, else None."""
    if math.isnan(first) or math.isnan(second):
        return None
    difference = bar_chars(first, config) - bar_chars(second, config)
    return None if difference == 0 else (1 if difference > 0 else 2)


def sections(first_dir: str | Path, second_dir: str | Path,
             machine: str | Path | None = None,
             data: tuple[StudyData, StudyData] | None = None) -> list[Section]:
    """The comparison: which run is worse in each category of each key kernel."""
    one, two = data or (read_study(first_dir, machine), read_study(second_dir, machine))
    config = load_config()
    runs = [_Run(one), _Run(two)]
    kernels = [k for k in dict.fromkeys(runs[0].keys + runs[1].keys)
               if all(run.counted(k) for run in runs)]
    out = [_header(runs, kernels, config)]
    out += [_kernel_section(kernel, runs, config) for kernel in kernels]
    return out


class _Run:
    """One of the two inputs at its assessed point."""

    def __init__(self, data: StudyData) -> None:
        self.data = data
        self.point = assessed_point(data)
        self.values = point_values(data, self.point)
        self.keys = [k for k in key_kernels(data) if k in self.values.index]

    def counted(self, kernel: str) -> bool:
        return kernel in self.values.index and \
            counted_value(self.values.loc[kernel], "instructions") is not None

    def bounds(self, kernel: str, config: Config) -> list[Bound]:
        return kernel_bounds(self.values.loc[kernel], self.data.machine, config)

    def time(self, kernel: str) -> float | None:
        if kernel not in self.values.index or TIME_METRIC not in self.values.columns:
            return None
        value = self.values.at[kernel, TIME_METRIC]
        return float(value) if pd.notna(value) else None

    def describe(self, index: int) -> str:
        app = self.time(APP_KERNEL)
        wall = f"; application time {seconds(app)} per rank" if app is not None else ""
        return f"run {index}: {self.data.folder} at {describe_point(self.point)}{wall}"


def _header(runs: list[_Run], kernels: list[str], config: Config) -> Section:
    findings = [Finding("info", run.describe(index)) for index, run in enumerate(runs, 1)]
    for index, run in enumerate(runs, 1):
        other = runs[2 - index]
        alone = [k for k in run.keys if not other.counted(k)]
        if alone:
            findings.append(Finding("info", f"key in run {index} only (no counts in the other "
                                    f"run): {', '.join(alone)}"))
    if not kernels:
        findings.append(Finding("warning", "no key kernel has instruction counts in both "
                                "runs: nothing to compare"))
    note = ("'>' marks the LCPI both runs share; each '1' (or '2') is "
            f"{config.good_cpi / config.chars_per_label:g} cycles per instruction by which "
            "run 1 (or run 2) is worse (paper 002, Fig. 3)")
    return Section("Two runs compared", findings, note=note)


def _kernel_section(kernel: str, runs: list[_Run], config: Config) -> Section:
    first, second = (run.bounds(kernel, config) for run in runs)
    times = [run.time(kernel) for run in runs]
    shown = " and ".join(seconds(t, missing="?") for t in times)
    rows, worse = [], {1: [], 2: []}
    for a, b in zip(first, second, strict=True):
        rows.append({"category": a.label, "LCPI 1": format_lcpi(a.lcpi),
                     "LCPI 2": format_lcpi(b.lcpi),
                     scale(config): comparison_bar(a.lcpi, b.lcpi, config)})
        which = worse_run(a.lcpi, b.lcpi, config)
        if which is not None:
            worse[which].append(f"{a.label} ({format_lcpi(a.lcpi)} vs {format_lcpi(b.lcpi)})")
    table = pd.DataFrame(rows)
    table.attrs.update(bar_column=scale(config), bar_band=config.chars_per_label)
    findings = [Finding("warning", f"{kernel}: run {index} is worse in "
                        + ", ".join(items), kernel=kernel)
                for index, items in worse.items() if items]
    if not findings:
        findings.append(Finding("info", f"{kernel}: the runs agree within one bar character "
                                "in every category", kernel=kernel))
    return Section(f"Compared: {kernel} (time per rank {shown})", findings, table)

