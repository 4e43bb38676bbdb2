"""Nested regions (apmt.nesting): inclusive call paths become exclusive parts, overlapping flat
regions are sorted into top-level and nested ones, exclusive profiles stay as they are; on
real profiles (RELeARN's inclusive regions, LULESH's exclusive Caliper tree) and small tables
with a known answer."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from apmt.ingest import import_profiles
from apmt.model import build_model
from apmt.nesting import call_tree, resolve
from apmt.predict import predict
from apmt.series import points
from apmt.tables import APP_KERNEL, check_table

P_VALUES = (2, 4, 8, 16)


def table(values: dict[str, callable]) -> pd.DataFrame:
    rows = [{"kernel": kernel, "metric": "time", "p": p, "value": value(p)}
            for kernel, value in values.items() for p in P_VALUES]
    return points(check_table(pd.DataFrame(rows), "t"), [])


def test_call_paths_name_their_parents() -> None:
    kernels = ["main", "main/solve", "main/solve/MPI_Send", "main/io", "other->inner", "other",
               "lonely/child"]
    assert call_tree(kernels) == {"main/solve": "main", "main/solve/MPI_Send": "main/solve",
                                  "main/io": "main", "other->inner": "other"}


def test_inclusive_call_paths_become_exclusive_parts() -> None:
    """main holds solve and io; solve holds its MPI_Send: inclusive values."""
    inclusive = table({"main": lambda p: 10 / p + 1.0, "main/solve": lambda p: 8 / p + 0.5,
                       "main/solve/MPI_Send": lambda p: 0.5, "main/io": lambda p: 0.4})
    found = resolve(inclusive, [], None)
    assert found.note.startswith("call-path values are inclusive")
    own = found.table.set_index(["kernel", "p"])["value"]
    assert own[("main", 2)] == pytest.approx(5 + 1 - 4 - 0.5 - 0.4)
    assert own[("main/solve", 4)] == pytest.approx(2 + 0.5 - 0.5)
    assert own[("main/solve/MPI_Send", 8)] == pytest.approx(0.5)
    model = build_model(check_table(inclusive.drop(columns="reps"), "t"), [], source="t")
    app = predict(model, pd.DataFrame({"p": [8]})).set_index(["kernel", "metric"])
    assert app.at[(APP_KERNEL, "time"), "predicted"] == pytest.approx(10 / 8 + 1.0, rel=0.05)


def test_exclusive_call_paths_stay(measured_data: Path) -> None:
    """LULESH's Caliper tree comes as exclusive times (the importer derives them)."""
    files = sorted((measured_data / "lulesh_caliper_opal").glob("*.cali"))
    measurements, _ = import_profiles("caliper", files)
    found = resolve(points(measurements, []), [], None)
    assert found.note == "" and not found.nested
    assert call_tree(list(measurements["kernel"].unique()))     # names do form a tree


def test_exclusive_cube_values_whose_parents_cost_most_stay_exclusive(measured_data: Path,
                                                                      cli, tmp_path: Path
                                                                      ) -> None:
    """Extra-P's mm cube set at x = 1 to 250: main's own (exclusive) time exceeds its
    callees' at every one of them, so judged from the values alone it looks
    inclusive and its callees would be taken off it twice. apmt import records that Cube's
    values are exclusive, and the fit keeps them: the application time at a measured point is
    the profile's total."""
    runs = [measured_data / "scorep_counters" / "mm_cubeset" / f"mm.x{x}y1z1.r1"
            for x in (1, 10, 25, 50, 100, 250)]
    measurements, _ = import_profiles("cube", runs)
    time = measurements[measurements["metric"] == "time"]
    at_100 = time[time["x"] == 100].groupby("kernel")["value"].sum()
    assert at_100["main"] > at_100.drop("main").sum()      # what fools the values' test
    assert resolve(points(measurements, ["x"]), ["x"], None).note.startswith(
        "call-path values are inclusive")
    assert resolve(points(measurements, ["x"]), ["x"], None, values="exclusive").note == ""

    table = tmp_path / "mm.csv"
    assert cli("import", "cube", *runs, "-o", table).code == 0
    fitted = cli("fit", table, "--param", "x", "y", "z", "-o", tmp_path / "mm.json")
    assert fitted.code == 0 and "call-path values are inclusive" not in fitted.out + fitted.err
    predicted = cli("predict", tmp_path / "mm.json", "--at", "p=1,x=100,y=1,z=1",
                    "-o", tmp_path / "p.csv")
    assert predicted.code == 0
    rows = pd.read_csv(tmp_path / "p.csv").set_index(["kernel", "metric"])
    assert rows.at[(APP_KERNEL, "time"), "predicted"] == pytest.approx(at_100.sum(), rel=0.1)
    # the user's word wins over the import's
    cli("fit", table, "--param", "x", "y", "z", "--call-path-values", "inclusive",
        "-o", tmp_path / "inclusive.json")
    assert '"call_path_values": "inclusive"' in (tmp_path / "inclusive.json").read_text()


def test_overlapping_flat_regions_beside_the_application_time() -> None:
    """The loop holds the solver: beside main, one of them is nested; setup is top-level."""
    flat = table({"main": lambda p: 10 / p + 1.0, "loop": lambda p: 10 / p + 0.8,
                  "solver": lambda p: 9 / p, "setup": lambda p: 0.15})
    found = resolve(flat, [], "main")
    assert found.nested == ["solver"] and "1 regions" in found.note
    model = build_model(check_table(flat.drop(columns="reps"), "t"), [], source="t",
                        app_kernel="main")
    classes = {k["kernel"]: k["class"] for k in model.kernels}
    assert classes["solver"] == "nested" and classes["loop"] == "key"
    assert {e.kernel for e in model.series} >= {"solver", "loop", "main"}
    parts = predict(model, pd.DataFrame({"p": [4]})).set_index(["kernel", "metric"])
    assert parts.at[(APP_KERNEL, "comp_time"), "predicted"] <= \
        parts.at[(APP_KERNEL, "time"), "predicted"] * 1.05


def test_flat_regions_without_an_application_time_are_taken_as_given() -> None:
    flat = table({"a": lambda p: 10 / p, "b": lambda p: 9 / p, "c": lambda p: 0.1})
    assert resolve(flat, [], None).nested == []
