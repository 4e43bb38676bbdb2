"""Figures of a study, drawn from a model of the real RELeARN data (32 to 512 ranks)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from apmt import layout
from apmt.evaluate import evaluate
from apmt.ingest import import_profiles
from apmt.model import build_model, save_model
from apmt.report import (
    _ranked_kernels,
    _stretches,
    _suptitle,
    figure_p_values,
    main,
    plot_breakdown,
    plot_errors,
    plot_kernel_fits,
    plot_ranking,
    plot_scaling,
)
from apmt.series import scale_points
from apmt.tables import APP_KERNEL, check_table, read_table, write_table

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
P_VALUES = [32, 64, 128, 256, 512, 1024, 2048, 4096]
LONG_STUDY = "batch_lammps_lennard_jones_melt_weak_scaling_on_the_cluster_partition_x86"


@pytest.fixture(scope="module")
def study(measured_data: Path) -> dict:
    source = measured_data / "relearn" / "relearn_data.txt"
    measurements, kind = import_profiles("extrap-text", [source])
    model = build_model(measurements, ["n"], source=str(source), app_kernel="main()",
                        per_rank_params=frozenset({"n"}))
    evaluation = evaluate(measurements, kind, ["n"], "p=max", ["analytic", "amdahl", "powerlaw"],
                          str(source), frozenset({"n"}))
    return {"measurements": measurements, "model": model, "evaluation": evaluation}


def check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert 10_000 < len(data) < 2_000_000
    assert not list(path.parent.glob(f".{path.stem}.*")), "a temporary file was left behind"


def check_axes(figure, log_p: bool = True) -> None:
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert axes
    for ax in axes:
        assert ax.get_xlabel() and ax.get_ylabel()
        if log_p:
            assert ax.get_xscale() == "log"
    assert "relearn" in figure.get_suptitle()


def check_title_inside(figure: Figure, text: str) -> None:
    """The title, drawn after the layout, lies inside the figure with all its words."""
    [title] = [t for t in figure.texts if t.get_text() == figure.get_suptitle()]
    FigureCanvasAgg(figure).draw()
    assert figure.bbox.contains(*title.get_window_extent().p0)
    assert figure.bbox.contains(*title.get_window_extent().p1)
    assert "".join(title.get_text().split()) == "".join(text.split())


def test_kernel_fits(study, tmp_path):
    out = tmp_path / "fits.png"
    figure = plot_kernel_fits(study["measurements"], study["model"], out, "relearn")
    check_png(out)
    check_axes(figure)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    key = [k for k in study["model"].kernels if k["class"] == "key"]
    assert len(visible) == min(len(key), 6)
    # three parameter values: smallest, middle and largest n, each with its label
    labels = visible[0].get_legend_handles_labels()[1]
    assert labels == ["n=5000", "n=7000", "n=9000"]
    assert visible[0].get_xlim()[1] >= 8 * 512


def test_scaling(study, tmp_path):
    out = tmp_path / "scaling.png"
    figure = plot_scaling(study["measurements"], study["model"], out, "relearn")
    check_png(out)
    check_axes(figure)
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert any(label.startswith("measured") for label in labels)
    assert any(label.startswith("model") for label in labels)
    model_line = figure.axes[0].get_lines()[0]
    drawn_p = model_line.get_xdata()
    assert (drawn_p == drawn_p.round()).all()   # ranks come whole
    assert {32, 64, 128, 256, 512} <= set(drawn_p)


def test_breakdown(study, tmp_path):
    out = tmp_path / "breakdown.png"
    figure = plot_breakdown(study["model"], out, P_VALUES, {"n": 9000.0}, "relearn", 512)
    check_png(out)
    check_axes(figure, log_p=False)
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[-4:-2] == ["512", "1024*"]   # measured; predicted (twice the largest)
    # 8x beyond, at a measured size, RELeARN's interval (each size's own fits, calibrated on
    # their backtests) spans a factor of 3.2: extrapolated, not marked (beyond 100x: below)
    assert labels[-1] == "4096*"
    assert "computation" in ax.get_legend_handles_labels()[1]


def test_unsupported_predictions_are_marked(study, tmp_path):
    """Beyond 100x the measured P the model's time is unsupported: the breakdown marks those
    P with '!', and the application curve, drawn to the same scale, ends in a grey dotted
    stretch labelled as unsupported."""
    far = [*P_VALUES, 512 * 200]
    figure = plot_breakdown(study["model"], tmp_path / "b.png", far, {"n": 9000.0}, "relearn",
                            512)
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels[-1] == "102400*!" and not any("!" in label for label in labels[:-3])
    assert "(! unsupported)" in figure.axes[0].get_xlabel()
    # computation measured to P = 64, an MPI call only at P = 2..4 (tests/test_trust.py): far
    # beyond its own range the call, most of the time, makes the curve unsupported
    rows = [{"kernel": kernel, "metric": "time", "p": p, "value": value}
            for p in (1, 2, 4, 8, 16, 32, 64) for kernel, value in (("solve", 1.0 / p + 0.01),
                                                                     (APP_KERNEL, 1.0 / p + 0.03))]
    comm = pd.DataFrame([{"op": "MPI_Allreduce", "calls": 100.0, "bytes": 800.0,
                          "time": 0.01 * np.log2(p), "p": p} for p in (2, 3, 4)])
    measurements = check_table(pd.DataFrame(rows), "t")
    model = build_model(measurements, [], source="t",
                        comm=check_table(comm, "c", kind="communication"))
    figure = plot_scaling(measurements, model, tmp_path / "s.png", "synthetic")
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    [dotted] = [line for label, line in lines.items() if label.startswith("unsupported")]
    assert dotted.get_linestyle() == ":" and min(dotted.get_xdata()) > 64


def test_unsupported_stretches_are_drawn_apart() -> None:
    """The application curve's unsupported stretches, each a dotted line of its own (the
    workflow's miniWeather model: unsupported at P = 3, inside the data, its interval wider
    than a factor of 10, and again from P = 128; one line through all their points ran
    straight from P = 2 to the far ones, over the supported forecast between)."""
    mask = np.array([False, True, True, False, False, False, True, True, True])
    assert [list(rows) for rows in _stretches(mask)] == [[1, 2], [6, 7, 8]]
    assert _stretches(np.zeros(4, bool)) == [] and len(_stretches(np.ones(3, bool))) == 1


def test_errors(study, tmp_path):
    out = tmp_path / "errors.png"
    figure = plot_errors(study["evaluation"], out, "relearn")
    check_png(out)
    check_axes(figure, log_p=False)
    ticks = [t.get_text().split("\n")[0] for t in figure.axes[0].get_xticklabels()]
    assert ticks == ["apmt", "analytic", "amdahl", "powerlaw"]


def test_errors_leave_out_the_application_rows(study, tmp_path):
    evaluation = study["evaluation"]
    app_rows = evaluation.head(4).assign(kernel=APP_KERNEL, ape=1e6)
    with_app = pd.concat([evaluation, app_rows], ignore_index=True)
    figure = plot_errors(with_app, tmp_path / "errors.png")
    heights = [bar.get_height() for bar in figure.axes[0].patches]
    assert max(heights) < 1e5


def test_ranking(study, tmp_path):
    out = tmp_path / "ranking.png"
    figure = plot_ranking(study["model"], out, P_VALUES, {"n": 9000.0}, "relearn")
    check_png(out)
    check_axes(figure)
    assert figure.axes[0].get_yscale() == "log"
    labels = figure.axes[1].get_legend_handles_labels()[1]
    ranked = [k for k in study["model"].kernels if k["class"] in ("key", "non-scalable")]
    assert len(labels) == len(ranked)


def test_a_long_title_wraps_inside_the_figure():
    text = f"{LONG_STUDY}: application time (main()): measured vs. model"
    assert len(text) == 120
    figure = Figure(figsize=(5.5, 4.5), layout="constrained")
    figure.subplots().plot([1, 2], [1, 2])
    assert figure.suptitle(text).get_window_extent().width > figure.bbox.width  # as it was
    title = _suptitle(figure, text)
    assert "\n" in title.get_text() and "batch_lammps_" in title.get_text().split("\n")[0]
    check_title_inside(figure, text)
    short = _suptitle(Figure(figsize=(5.5, 4.5)), "relearn: errors")
    assert short.get_text() == "relearn: errors"


@pytest.mark.parametrize("plot", ["scaling", "errors", "ranking"])
def test_figures_of_a_long_study_name_keep_the_title_inside(study, tmp_path, plot):
    out = tmp_path / f"{plot}.png"
    if plot == "scaling":
        figure = plot_scaling(study["measurements"], study["model"], out, LONG_STUDY)
    elif plot == "errors":
        figure = plot_errors(study["evaluation"], out, LONG_STUDY)
    else:
        figure = plot_ranking(study["model"], out, P_VALUES, {"n": 9000.0}, LONG_STUDY)
    assert figure.get_suptitle().startswith(LONG_STUDY[:20])
    check_title_inside(figure, figure.get_suptitle())


def test_scale_points():
    assert scale_points([32, 64, 128, 256, 512]) == P_VALUES
    assert scale_points([1, 2, 3, 4]) == [1, 2, 3, 4, 8, 16, 32]


def test_the_figures_start_where_the_fits_start(measured_data: Path) -> None:
    """LAMMPS profiled on 2 cores (P <= 8): its fits start at a later P (Model.first_p),
    below which they would run backwards out of their range; the breakdown and ranking
    figures start there, and go on to the doublings beyond the data."""
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    measurements = table[table["p"] <= 8]
    model = build_model(measurements, ["size"], source="lammps")
    assert model.first_p in (2.0, 3.0)
    shown = figure_p_values(model, measurements)
    assert shown[0] == model.first_p and shown[-1] == 64
    later = measurements[measurements["p"] >= 4]      # 4, 6, 8: too few P for a regime
    unchanged = build_model(later, ["size"], source="lammps")
    assert unchanged.first_p == 1 and figure_p_values(unchanged, later)[0] == 4



def test_the_curves_start_where_the_fits_start(measured_data: Path, tmp_path: Path) -> None:
    """The same LAMMPS model: the application's curve and band start at the first P the model
    describes, each kernel's at the first its fit was made at, said in the panel; the measured
    points below stay drawn. Below, the shapes ran backwards out of their range (miniWeather's
    flux kernels, fitted from P = 6, at 0.9 s for P = 1 where 0.36 s was measured)."""
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    measurements = table[table["p"] <= 8]
    model = build_model(measurements, ["size"], source="lammps")
    assert model.first_p > 1
    scaling = plot_scaling(measurements, model, tmp_path / "s.png", "lammps")
    assert _curve_start(scaling.axes[0]) == model.first_p
    legend = [t.get_text() for t in scaling.axes[0].get_legend().get_texts()]
    assert f"model (from P = {model.first_p:g})" in legend, legend
    fits = plot_kernel_fits(measurements, model, tmp_path / "f.png", "lammps")
    said = 0
    for ax in (ax for ax in fits.axes if ax.get_visible()):
        [text] = [t.get_text() for t in ax.texts]
        since = re.search(r"\[fitted from P = (\d+)\]$", text, re.MULTILINE)
        said += since is not None
        assert _curve_start(ax) == (float(since.group(1)) if since else 1.0), text
    assert said >= 1


def test_a_panel_says_what_forecasts_beyond_the_data(measured_data: Path, tmp_path: Path
                                                     ) -> None:
    """LAMMPS from P <= 8: a kernel whose time is forecast through its instruction count, or
    by its latest trend, says so under its function, whose shape the dashed curve does not
    follow there; a panel whose function forecasts says nothing more."""
    table = read_table(measured_data / "lammps/p1-32/measurements.csv", "measurements")
    measurements = table[table["p"] <= 8]
    model = build_model(measurements, ["size"], source="lammps")
    figure = plot_kernel_fits(measurements, model, tmp_path / "f.png", "lammps")
    texts = [ax.texts[0].get_text() for ax in figure.axes if ax.get_visible()]
    notes = [text.split("\n")[1] for text in texts if "\n" in text]
    assert notes and set(notes) <= {"beyond P = 8: forecast by its instruction count",
                                     "beyond P = 8: forecast by its latest trend"}
    shown = _ranked_kernels(model, ("key",))[:len(texts)]
    assert len(notes) == sum(bool(model.fit_of(kernel, "time").latest) for kernel in shown)


def _curve_start(ax) -> float:
    """Where a panel's curve and band start; its measured points start at P = 1 all the same."""
    curves = [line for line in ax.get_lines() if line.get_linestyle() in ("-", "--")]
    points = [line for line in ax.get_lines() if line.get_linestyle() == "None"]
    assert min(min(line.get_xdata()) for line in points) == 1
    bands = [c.get_paths()[0].vertices[:, 0] for c in ax.collections
             if isinstance(c, PolyCollection)]
    start = min(min(line.get_xdata()) for line in curves)
    assert min(band.min() for band in bands) == start
    return float(start)

def test_command_writes_all_figures(study, tmp_path):
    folder = tmp_path / "relearn"
    write_table(study["measurements"], folder / "measurements.csv")
    save_model(study["model"], folder / "model.json")
    write_table(study["evaluation"], folder / "evaluation.csv")
    assert main([str(folder), "-o", str(folder / "figures")]) == 0
    for name in layout.FIGURE_NAMES:
        check_png(folder / "figures" / f"{name}.png")


def test_command_reports_a_missing_study(tmp_path, capsys):
    assert main([str(tmp_path / "none"), "-o", str(tmp_path / "figures")]) == 2
    assert "error:" in capsys.readouterr().err
