"""Figures of a study: what the model fitted, what it predicts, and how well it did.

Each function draws one figure, writes it as a PNG (atomically, like the tables) and returns
the matplotlib Figure so that callers and tests can inspect it. The figures use no pyplot
state (matplotlib renders PNG with Agg), so they can be drawn in a loop or a test without
leaking windows or needing a display.

    python -m apmt.report results/<study> -o results/<study>/figures

reads measurements.csv, model.json and evaluation.csv of a study folder and writes
fits.png, scaling.png, breakdown.png, errors.png and ranking.png.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, NullFormatter

from apmt import layout
from apmt.display import figure_name, number, wrap_words
from apmt.errors import ApmtError
from apmt.model import PART_LABELS, PARTS, Model, load_model
from apmt.modelers import MODELERS
from apmt.predict import application_trust, assemble, contributions
from apmt.series import EXTRAPOLATION, measured_points, scale_points
from apmt.tables import APP_KERNEL, TIME_METRIC, read_table, write_atomic
from apmt.trust import UNSUPPORTED

MAX_PANELS = 6
MAX_CURVES = 3
TITLE_SHARE = 0.95         # of the figure's width a title line may take


# ------------------------------------------------------------------------------------ helpers

def _save(figure: Figure, out: str | Path) -> Figure:
    """Write the PNG atomically: no half-written figure is left."""
    write_atomic(out, lambda temporary: figure.savefig(temporary, dpi=110, format="png"))
    return figure


def _title(what: str, study: str) -> str:
    return f"{study}: {what}" if study else what


def _suptitle(figure: Figure, text: str) -> Text:
    """The figure's title, wrapped between words until every line fits TITLE_SHARE of the
    figure's width: a long study or kernel name would otherwise run past the edges and be
    clipped (constrained layout then makes room for the lines)."""
    title = figure.suptitle(text)
    limit = TITLE_SHARE * figure.bbox.width
    columns = len(text)
    while (width := title.get_window_extent().width) > limit and columns > 1:
        columns = min(columns - 1, int(columns * limit / width))
        title.set_text("\n".join(wrap_words(text, max(columns, 1))))
    return title


def _p_axis(ax: Axes, p_values: Sequence[float]) -> None:
    """P in powers of two when it spans a decade or more, labelled as plain process counts."""
    low, high = float(np.min(p_values)), float(np.max(p_values))
    ax.set_xlabel("MPI processes P")
    if high / max(low, 1e-12) >= 10:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())


def _value_axis(ax: Axes, values: np.ndarray, label: str) -> None:
    """A log scale when the values span a decade or more (they are positive times)."""
    ax.set_ylabel(label)
    positive = np.asarray(values, float)
    positive = positive[np.isfinite(positive) & (positive > 0)]
    if positive.size and positive.max() / positive.min() >= 10:
        ax.set_yscale("log")


def _p_grid(measured_p: Sequence[float]) -> np.ndarray:
    """Whole P from the smallest measured to EXTRAPOLATION times the largest, evenly in log P:
    between 1 and 2 ranks a model means nothing, and a communication fit (nothing to send at
    P = 1) flares there."""
    low, high = float(np.min(measured_p)), float(np.max(measured_p)) * EXTRAPOLATION
    return np.unique(np.concatenate([np.round(np.geomspace(low, high, 80)), measured_p]))


def _ranked_kernels(model: Model, classes: tuple[str, ...]) -> list[str]:
    """Kernels of these classes that have a time fit, the most expensive first."""
    rows = sorted(model.kernels_of(*classes), key=lambda k: -float(k.get("max_share") or 0.0))
    return [k["kernel"] for k in rows if model.fit_of(k["kernel"], TIME_METRIC) is not None]


def _picked(values: Sequence[float]) -> list[float]:
    """At most MAX_CURVES values: the smallest, the middle one and the largest."""
    values = sorted(set(float(v) for v in values))
    if len(values) <= MAX_CURVES:
        return values
    return [values[0], values[len(values) // 2], values[-1]]


def _curve_settings(rows: pd.DataFrame, params: list[str]) -> list[dict[str, float]]:
    """One setting of the parameters per curve: the first varying parameter takes up to three
    values, the others stay at their largest measured value."""
    varying = [p for p in params if rows[p].nunique() > 1]
    fixed = {p: float(rows[p].max()) for p in params}
    if not varying:
        return [fixed]
    return [{**fixed, varying[0]: value} for value in _picked(rows[varying[0]])]


def _label(setting: dict[str, float], params: list[str], rows: pd.DataFrame) -> str:
    shown = [p for p in params if rows[p].nunique() > 1]
    return ", ".join(f"{p}={setting[p]:g}" for p in shown)


def _values(p: np.ndarray, setting: dict[str, float]) -> dict[str, np.ndarray]:
    return {"p": np.asarray(p, float), **{k: np.full(len(p), v) for k, v in setting.items()}}


def _select(rows: pd.DataFrame, setting: dict[str, float]) -> pd.DataFrame:
    mask = np.ones(len(rows), bool)
    for name, value in setting.items():
        mask &= np.isclose(rows[name].to_numpy(float), value)
    return rows[mask]


def _draw_curve(ax: Axes, fit, p_grid: np.ndarray, setting: dict[str, float], largest: float,
                color, label: str) -> np.ndarray:
    """The fit, solid over the data and dashed beyond it, with its 90% interval as a band."""
    predicted, lower, upper = fit.predict(_values(p_grid, setting))
    inside = p_grid <= largest
    ax.plot(p_grid[inside], predicted[inside], "-", color=color, label=label)
    ax.plot(p_grid[p_grid >= largest], predicted[p_grid >= largest], "--", color=color)
    ax.fill_between(p_grid, lower, upper, color=color, alpha=0.15, linewidth=0)
    return np.concatenate([predicted, lower, upper])


def _described_from(fit, p_grid: np.ndarray) -> float:
    """The first P a fit describes: where its fitted range starts (a table's regime, as
    miniWeather's times from P = 6, whose shapes give 0.9 s at P = 1 where 0.36 s was
    measured), else the grid's first. Below, its shape runs backwards out of its range,
    through runs of another regime: its curve starts there."""
    return max(float(fit.domain["p"][0]), float(p_grid[0])) if "p" in fit.domain \
        else float(p_grid[0])


def _draw_points(ax: Axes, points: pd.DataFrame, color, label: str | None = None) -> np.ndarray:
    """Measured means with error bars from the fastest to the slowest repetition."""
    mean = points["mean"].to_numpy(float)
    low, high = points["low"].to_numpy(float), points["high"].to_numpy(float)
    errors = np.vstack([mean - low, high - mean])
    ax.errorbar(points["p"], mean, yerr=errors, fmt="o", color=color, markersize=4, capsize=3,
                label=label)
    return mean


def _default_setting(model: Model) -> dict[str, float]:
    """Without measurements: each parameter at the largest value any fit was made on."""
    setting = {}
    for name in model.params:
        ends = [e.fit.domain[name][1] for e in model.series if name in e.fit.domain]
        setting[name] = float(max(ends)) if ends else 1.0
    return setting


# ------------------------------------------------------------------------------------ figures

def plot_kernel_fits(measurements: pd.DataFrame, model: Model, out: str | Path,
                     study: str = "") -> Figure:
    """The key kernels' time fits against their measurements: shows whether each fit follows
    the data and how far its extrapolation, and its uncertainty, reaches."""
    kernels = _ranked_kernels(model, ("key",)) or _ranked_kernels(model, ("non-scalable",))
    kernels = kernels[:MAX_PANELS] or [model.app_kernel or APP_KERNEL]
    columns = {1: 1, 2: 2, 4: 2}.get(len(kernels), 3)
    rows_count = -(-len(kernels) // columns)
    figure = Figure(figsize=(5.2 * columns, 4.2 * rows_count), layout="constrained")
    axes = figure.subplots(rows_count, columns, squeeze=False).ravel()
    for ax, kernel in zip(axes, kernels, strict=False):
        _fit_panel(ax, measurements, model, kernel)
    for ax in axes[len(kernels):]:
        ax.set_visible(False)
    _suptitle(figure, _title(f"kernel time fits (dashed: extrapolated to {EXTRAPOLATION}x the "
                             f"largest P; band: 90% interval)", study))
    return _save(figure, out)


def _fit_panel(ax: Axes, measurements: pd.DataFrame, model: Model, kernel: str) -> None:
    params = model.params
    points = measured_points(measurements, params, kernel)
    fit = model.fit_of(kernel, TIME_METRIC)
    measured_p = points["p"].to_numpy(float) if len(points) else np.array(fit.domain["p"])
    grid, largest = _p_grid(measured_p), float(np.max(measured_p))
    shown = [points["mean"].to_numpy(float)]
    settings = _curve_settings(points, params) if len(points) else [_default_setting(model)]
    start = _described_from(fit, grid) if fit is not None else float(grid[0])
    for index, setting in enumerate(settings):
        color = f"C{index}"
        if fit is not None:
            label = _label(setting, params, points) if len(points) else ""
            shown.append(_draw_curve(ax, fit, grid[grid >= start], setting, largest, color,
                                     label))
        if len(points):
            _draw_points(ax, _select(points, setting), color)
    ax.set_title(figure_name(kernel), fontsize=10)
    if fit is not None:
        since = f"  [fitted from P = {start:g}]" if start > grid[0] else ""
        ax.text(0.02, 0.98, _short(fit.function, 60 - len(since)) + since +
                _forecast_note(fit, largest), transform=ax.transAxes, va="top", fontsize=7,
                family="monospace")
    _p_axis(ax, grid)
    _value_axis(ax, np.concatenate(shown), "time per rank [s]")
    if len(settings) > 1:
        ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="major", alpha=0.3)


def _forecast_note(fit, largest: float) -> str:
    """A second line where the dashed curve is not the function above it: a series forecast
    beyond the data by its latest trend or through its instruction count (apmt.fit_table).
    MILC's kernels' panels printed a + b*(sites/p), which levels off at a, above a curve that
    fell on as 1/P (their counts' forecast), with no word of why."""
    if not fit.latest:
        return ""
    by = fit.ahead_by.split(" (")[0] if fit.ahead_by else "its latest trend"
    return f"\nbeyond P = {largest:g}: forecast by {by}"


def _short(text: str, width: int = 45) -> str:
    """A formula cut to ``width`` (a kernel's name: apmt.display.figure_name)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def plot_scaling(measurements: pd.DataFrame, model: Model, out: str | Path,
                 study: str = "") -> Figure:
    """Measured application time next to the assembled model's prediction across P: the
    whole-application check, and where the model says the application goes beyond the data."""
    params, app = model.params, model.app_kernel or APP_KERNEL
    points = measured_points(measurements, params, app)
    measured_p = points["p"].to_numpy(float) if len(points) else \
        np.asarray(sorted(measurements["p"].unique()), float)
    grid, largest = _p_grid(measured_p), float(np.max(measured_p))
    settings = _curve_settings(points, params) if len(points) else [_default_setting(model)]
    figure = Figure(figsize=(7.5, 5), layout="constrained")
    ax = figure.subplots()
    shown = []
    curve = grid[grid >= model.first_p]   # the model from the first P it describes
    since = f" (from P = {curve[0]:g})" if curve[0] > grid[0] else ""
    for index, setting in enumerate(settings):
        color = f"C{index}"
        values = _values(curve, setting)
        terms = list(contributions(model, values))
        predicted, lower, upper = assemble(model, values, terms=terms)[TIME_METRIC]
        label = _label(setting, params, points) if len(points) else ""
        inside = curve <= largest
        unsupported = np.array([level == UNSUPPORTED for level in application_trust(
            model, values, terms=terms)[0]])
        # an unsupported stretch starts at the last supported point, so the curve is whole
        starts = unsupported | np.append(unsupported[1:], False)
        ax.plot(curve[inside], predicted[inside], "-", color=color,
                label=f"model{since} {label}".strip())
        beyond = (curve >= largest) & ~unsupported
        ax.plot(curve[beyond], predicted[beyond], "--", color=color)
        for stretch, rows in enumerate(_stretches(starts)):   # apart: no line between them
            ax.plot(curve[rows], predicted[rows], ":", color="0.45",
                    label="unsupported (see predictions.csv: trust)"
                    if index == 0 and stretch == 0 else None)
        ax.fill_between(curve, lower, upper, color=color, alpha=0.15, linewidth=0)
        shown.append(np.concatenate([predicted, lower, upper]))
        if len(points):
            selected = _select(points, setting)
            shown.append(_draw_points(ax, selected, color, f"measured {label}".strip()))
    _p_axis(ax, grid)
    _value_axis(ax, np.concatenate(shown), "application time per rank [s]")
    _suptitle(figure, _title(f"application time ({app}): measured vs model", study))
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return _save(figure, out)


def _stretches(mask: np.ndarray) -> list[np.ndarray]:
    """The indices of each run of consecutive True values of ``mask``: a curve's stretches
    drawn each on its own. One line through all of them joined miniWeather's unsupported
    point at P = 3 (inside the data, its interval wider than a factor of 10) to those from
    P = 128 on, across the supported forecast between."""
    rows = np.flatnonzero(mask)
    return np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if len(rows) else []


def plot_breakdown(model: Model, out: str | Path, p_values: Sequence[float],
                   setting: dict[str, float] | None = None, study: str = "",
                   measured_max: float | None = None) -> Figure:
    """The parts of Eq. 2 (computation, memory, communication, others) stacked per P: which
    part dominates, and how the mix shifts at scale."""
    setting = setting or _default_setting(model)
    p_values = np.asarray(sorted(set(float(p) for p in p_values)), float)
    values = _values(p_values, setting)
    terms = list(contributions(model, values))
    parts = assemble(model, values, terms=terms)
    figure = Figure(figsize=(max(6.0, 0.7 * len(p_values) + 3), 5), layout="constrained")
    ax = figure.subplots()
    positions = np.arange(len(p_values))
    bottom = np.zeros(len(p_values))
    for index, part in enumerate(PARTS):
        height = np.maximum(parts[part][0], 0.0)
        if not np.any(height > 0):
            continue
        ax.bar(positions, height, bottom=bottom, color=f"C{index}", label=PART_LABELS[part])
        bottom += height
    ax.plot(positions, parts[TIME_METRIC][0], "k_", markersize=24, markeredgewidth=2,
            label="application time (model)")
    unsupported = [level == UNSUPPORTED for level in application_trust(
        model, values, terms=terms)[0]]
    labels = [f"{p:g}" + ("*" if measured_max and p > measured_max else "")
              + ("!" if bad else "") for p, bad in zip(p_values, unsupported, strict=True)]
    ax.set_xticks(positions, labels)
    ax.set_xlabel("MPI processes P" + ("   (* predicted beyond the data)" if measured_max
                                       else "") + ("   (! unsupported)" if any(unsupported)
                                                   else ""))
    ax.set_ylabel("time per rank [s]")
    shown = ", ".join(f"{k}={v:g}" for k, v in setting.items())
    _suptitle(figure, _title(f"model breakdown (Eq. 2){', ' + shown if shown else ''}", study))
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(figure, out)


def plot_errors(evaluation: pd.DataFrame, out: str | Path, study: str = "") -> Figure:
    """Median APE of apmt and each baseline on the held-out runs over the kernels' series (the
    assembled <app> rows are left out): does apmt beat the simpler models."""
    rows = evaluation[(evaluation["kernel"] != APP_KERNEL) & evaluation["ape"].notna()]
    present = [m for m in MODELERS if m in set(rows["method"])]
    present += sorted(set(rows["method"]) - set(present))
    grouped = rows.groupby("method")["ape"]
    median = np.array([grouped.median()[m] for m in present], float)
    p90 = np.array([np.percentile(rows.loc[rows["method"] == m, "ape"], 90) for m in present])
    figure = Figure(figsize=(max(5.5, 1.3 * len(present) + 2), 4.5), layout="constrained")
    ax = figure.subplots()
    positions = np.arange(len(present))
    colors = ["C3" if m == "apmt" else "C7" for m in present]
    bars = ax.bar(positions, median, color=colors)
    for bar, value in zip(bars, median, strict=True):
        ax.annotate(f"{number(value, 3)}%", (bar.get_x() + bar.get_width() / 2, value),
                    ha="center", va="bottom", fontsize=9, xytext=(0, 2),
                    textcoords="offset points")
    counts = grouped.count()
    ax.set_xticks(positions, [f"{m}\nn={counts[m]}, p90 {q:.3g}%"
                              for m, q in zip(present, p90, strict=True)], fontsize=8)
    ax.set_xlabel("method (n: held-out points; p90: 90th percentile APE)")
    ax.set_ylabel("median absolute percentage error [%]")
    ax.set_ylim(0, float(np.max(median, initial=1.0)) * 1.15)
    _suptitle(figure, _title("prediction error on held-out runs (kernels' series)", study))
    ax.grid(True, axis="y", alpha=0.3)
    return _save(figure, out)


def plot_ranking(model: Model, out: str | Path, p_values: Sequence[float],
                 setting: dict[str, float] | None = None, study: str = "") -> Figure:
    """Predicted time and rank of each key and non-scalable kernel across P: a kernel that
    climbs in rank is tomorrow's bottleneck (drawn bold)."""
    setting = setting or _default_setting(model)
    p_values = np.asarray(sorted(set(float(p) for p in p_values)), float)
    kernels = _ranked_kernels(model, ("key", "non-scalable"))
    times = {k: model.fit_of(k, TIME_METRIC).predict(_values(p_values, setting))[0]
             for k in kernels}
    ranks = {k: np.array([_ranks({j: t[i] for j, t in times.items()})[k]
                          for i in range(len(p_values))]) for k in kernels}
    figure = Figure(figsize=(12, 5.5), layout="constrained")
    time_ax, rank_ax = figure.subplots(1, 2, width_ratios=[1, 1.25])
    colors = matplotlib.colormaps["tab20"].colors
    for index, kernel in enumerate(kernels):
        climbs = ranks[kernel][-1] < ranks[kernel][0]
        style = {"linewidth": 2.5, "marker": "o"} if climbs else \
            {"linewidth": 1.0, "alpha": 0.7, "marker": "."}
        color = colors[index % len(colors)]
        time_ax.plot(p_values, times[kernel], color=color, **style)
        # ranks first: matplotlib leaves out labels that start with "_" (e.g. __memcpy)
        label = f"#{ranks[kernel][0]}→#{ranks[kernel][-1]}  {figure_name(kernel, 38)}"
        rank_ax.plot(p_values, ranks[kernel], color=color, label=label, **style)
    _p_axis(time_ax, p_values)
    values = np.concatenate(list(times.values())) if times else np.array([1.0])
    _value_axis(time_ax, values, "predicted time per rank [s]")
    time_ax.set_title("predicted time", fontsize=10)
    time_ax.grid(True, which="major", alpha=0.3)
    _p_axis(rank_ax, p_values)
    rank_ax.set_ylabel("rank by predicted time (1: most expensive)")
    rank_ax.set_yticks(range(1, len(kernels) + 1))
    rank_ax.set_ylim(len(kernels) + 0.5, 0.5)
    rank_ax.set_title("rank", fontsize=10)
    rank_ax.grid(True, axis="x", alpha=0.3)
    if kernels:
        rank_ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5),
                       title="rank at smallest → largest P, kernel", title_fontsize=7)
    _suptitle(figure, _title("kernel ranking across P (bold: climbs in rank)", study))
    return _save(figure, out)


def _ranks(values: dict[str, float]) -> dict[str, int]:
    """Rank 1 is the most expensive."""
    order = sorted(values, key=lambda k: -values[k])
    return {kernel: position + 1 for position, kernel in enumerate(order)}


# ------------------------------------------------------------------------------------ command

def figure_p_values(model: Model, measurements: pd.DataFrame) -> list[float]:
    """The P of the breakdown and ranking figures: the measured ones and the doublings
    beyond them, from the first the model describes (Model.first_p)."""
    return [p for p in scale_points(measurements["p"].unique()) if p >= model.first_p]


def write_figures(study_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """All five figures of one study folder; returns the files written."""
    study_dir, out_dir = Path(study_dir), Path(out_dir)
    model = load_model(study_dir / layout.MODEL)
    measurements = read_table(study_dir / layout.MEASUREMENTS)
    evaluation = pd.read_csv(study_dir / layout.EVALUATION, dtype={"kernel": str})
    study = study_dir.name
    p_values = figure_p_values(model, measurements)
    setting = {name: float(measurements[name].max()) for name in model.params}
    largest = float(measurements["p"].max())
    paths = {name: out_dir / f"{name}.png" for name in layout.FIGURE_NAMES}
    plot_kernel_fits(measurements, model, paths["fits"], study)
    plot_scaling(measurements, model, paths["scaling"], study)
    plot_breakdown(model, paths["breakdown"], p_values, setting, study, largest)
    plot_errors(evaluation, paths["errors"], study)
    plot_ranking(model, paths["ranking"], p_values, setting, study)
    return list(paths.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apmt.report", description=__doc__.split(
        "\n")[0])
    parser.add_argument("study_dir", help="folder with measurements.csv, model.json and "
                        "evaluation.csv")
    parser.add_argument("-o", "--output", required=True, help="folder for the PNG files")
    args = parser.parse_args(argv)
    try:
        for path in write_figures(args.study_dir, args.output):
            print(f"wrote {path}")
    except ApmtError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
