"""apmt diagnose, PerfExpert's half (paper 002): LCPI bars, remedies, validity, two runs.

The runs are real: two MPI programs with a planted bottleneck (tests/mpi_programs/strided.c,
a function whose loads miss every cache; branchy.c, a function whose branches are random),
compiled here with mpicc and measured by ``apmt diagnose -- mpirun -np 2 ...`` with this
machine's backends (perf cpu-clock for time, cachegrind for the counts; there is no PMU). The
diagnosis must name the planted problem, say "not measured" for what cachegrind cannot count,
and show which of two runs is worse. The validity checks run on small crafted tables with a
known answer.
"""

from __future__ import annotations

import html
import json
import math
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_collect import HAVE_MPI

from apmt.collect.backends.cpu import pmu_answers
from apmt.diagnose import compare, diagnose, lcpi, validity
from apmt.diagnose.render import to_html, to_text
from apmt.diagnose.section import SEVERITIES, Section
from apmt.diagnose.study import StudyData, read_study
from apmt.errors import ApmtError
from apmt.machine import load_machine
from apmt.oneoff import parse_command
from apmt.tables import write_table

PROGRAMS = Path(__file__).resolve().parent / "mpi_programs"
MACHINE = "generic-x86-2core-vm"
WIDTH = 100
NOT_COUNTED = ("floating_point", "data_tlb", "instruction_tlb")   # by cachegrind


def why_not_here() -> str | None:
    """The planted runs need MPI, perf and valgrind, and no PMU (auto picks cachegrind)."""
    if not HAVE_MPI:
        return "needs mpicc and mpirun (Open MPI)"
    for tool in ("valgrind", "perf"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    if pmu_answers()[0]:
        return "a PMU answers here: backend auto measures with perf-events, not cachegrind"
    return None


# ----------------------------------------------------------------------- the planted runs

@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cli) -> dict[str, dict]:
    """strided, its compact variant and branchy, each measured and diagnosed in one go."""
    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("planted")
    for name in ("strided", "branchy"):
        subprocess.run(["mpicc", "-O1", "-g", "-o", str(folder / name),
                        str(PROGRAMS / f"{name}.c")], check=True)
    commands = {"strided": ["strided"], "compact": ["strided", "1", "0"],
                "branchy": ["branchy"]}
    out = {}
    for name, (program, *args) in commands.items():
        text, page = folder / f"{name}.txt", folder / f"{name}.html"
        result = cli("diagnose", "--machine", MACHINE, "--results", folder / "results",
                     "--name", name, "-o", text, "--html", page, "--", "mpirun", "-np", "2",
                     folder / program, *args)
        assert result.code == 0, result.err
        study = folder / "results" / "diagnose" / name
        out[name] = {"folder": study, "text": text.read_text(), "html": page.read_text()}
    return out


def kernel_table(run: dict, kernel: str) -> pd.DataFrame:
    table = lcpi.assess(read_study(run["folder"]))
    rows = table[table["kernel"] == kernel].set_index("category")
    assert not rows.empty, f"{kernel} was not assessed: {sorted(set(table['kernel']))}"
    return rows


def worst_category(rows: pd.DataFrame) -> str:
    return rows.drop(lcpi.OVERALL)["lcpi"].idxmax()


def test_strided_function_is_diagnosed_with_data_accesses(runs: dict) -> None:
    rows = kernel_table(runs["strided"], "sweep")
    assert worst_category(rows) == "data_accesses"
    # nearly every load of sweep misses the D1 and the last level: far beyond the scale
    assert rows.at["data_accesses", "lcpi"] > 10 * lcpi.load_config().good_cpi
    assert rows.at["data_accesses", "assessment"] == "problematic"
    assert "derived" in rows.at[lcpi.OVERALL, "formula"]        # no cycles counted here
    assert rows.at[lcpi.OVERALL, "lcpi"] > 1.0                  # it waits on memory, natively
    text = runs["strided"]["text"]
    assert "sweep: worst category: data accesses" in text
    assert "Remedies for data accesses (worst in sweep" in text
    assert "default used: penalty_cycles.branch_miss" in text  # the machine file lacks it


def test_branchy_function_is_diagnosed_with_branches(runs: dict) -> None:
    rows = kernel_table(runs["branchy"], "branchy")
    assert worst_category(rows) == "branches"
    assert rows.at["branches", "lcpi"] > rows.at["data_accesses", "lcpi"]
    text = runs["branchy"]["text"]
    assert "branchy: worst category: branch instructions" in text
    assert "Remedies for branch instructions (worst in branchy" in text


def test_what_cachegrind_cannot_count_says_not_measured(runs: dict) -> None:
    for name, kernel in (("strided", "sweep"), ("branchy", "branchy")):
        rows = kernel_table(runs[name], kernel)
        for category in NOT_COUNTED:
            assert math.isnan(rows.at[category, "lcpi"])
            assert rows.at[category, "assessment"] == lcpi.NOT_MEASURED
        label_lines = [line for line in runs[name]["text"].splitlines()
                       if line.startswith(("data TLB ", "instruction TLB ", "floating-point"))]
        assert label_lines and all("not measured" in line for line in label_lines)


def test_two_runs_side_by_side(runs: dict) -> None:
    strided, compact = runs["strided"]["folder"], runs["compact"]["folder"]
    result = compare.sections(strided, compact)
    [section] = [s for s in result if s.title.startswith("Compared: sweep")]
    bars = section.table.set_index("category")[section.table.attrs["bar_column"]]
    assert "1" in bars["data accesses"] and "2" not in bars["data accesses"]
    assert any("run 1 is worse in" in f.text and "data accesses" in f.text
               for f in section.findings)
    [swapped] = [s for s in compare.sections(compact, strided)
                 if s.title.startswith("Compared: sweep")]
    bars = swapped.table.set_index("category")[swapped.table.attrs["bar_column"]]
    assert "2" in bars["data accesses"] and "1" not in bars["data accesses"]
    # the whole diagnosis of two folders ends with the comparison
    titles = [s.title for s in diagnose(strided, compact)]
    assert titles[0].startswith("Validity") and titles.index("Two runs compared") > \
        titles.index("PerfExpert assessment (LCPI)")


def test_text_fits_the_terminal_and_html_holds_the_same_findings(runs: dict) -> None:
    for run in runs.values():
        assert all(len(line) <= WIDTH for line in run["text"].splitlines())
        sections = diagnose(run["folder"], machine=MACHINE)   # as the command was given
        check_sections(sections)
        flat_text = "".join(run["text"].split())   # wrapping only adds white space
        for section in sections:
            assert html.escape(section.title) in run["html"]
            for finding in section.findings:
                assert "".join(finding.text.split()) in flat_text, finding.text
                shown = "<br>\n".join(html.escape(p) for p in finding.text.split("\n"))
                assert shown in run["html"], finding.text
        narrow = to_text(sections, 60)
        assert all(len(line) <= 60 for line in narrow.splitlines())


def check_sections(sections: list[Section]) -> None:
    for section in sections:
        assert section.title
        for finding in section.findings:
            assert finding.severity in SEVERITIES and finding.text


def test_one_process_count_leaves_scaling_to_more_runs(runs: dict) -> None:
    [scaling] = [s for s in diagnose(runs["branchy"]["folder"]) if s.title == "Scaling"]
    assert "3 or more process counts" in scaling.note and "P = 2" in scaling.note


# ------------------------------------------------------------------ LCPI, by hand-made numbers

def test_lcpi_bounds_follow_the_formulas_of_lcpi_yaml() -> None:
    """Known counts give the bounds the formulas say (machine latencies in cycles)."""
    config = lcpi.load_config()
    machine = load_machine(MACHINE)
    latency = machine.fields["latency_cycles"]
    simulated = pd.Series({"instructions": 1000.0, "mem_loads": 300.0, "mem_stores": 100.0,
                           "l1d_misses": 40.0, "llc_misses": 10.0, "branches": 200.0,
                           "branch_misses": 5.0, "l1i_misses": 2.0, "lli_misses": 0.0,
                           "time": 1e-6})
    bounds = {b.category: b for b in lcpi.kernel_bounds(simulated, machine, config)}
    data = (400 * latency["l1"] + 40 * (latency["l2"] + latency["llc"])
            + 10 * latency["memory"]) / 1000
    assert bounds["data_accesses"].lcpi == pytest.approx(data)
    assert "cachegrind" in bounds["data_accesses"].formula
    branch_miss = config.defaults["penalty_cycles.branch_miss"][0]
    assert bounds["branches"].lcpi == pytest.approx((200 * 1 + 5 * branch_miss) / 1000)
    assert set(bounds["branches"].defaults) == {"penalty_cycles.branch",
                                                "penalty_cycles.branch_miss"}
    assert bounds["overall"].lcpi == pytest.approx(1e-6 * 3.695e9 / 1000)
    for category in NOT_COUNTED:
        assert not bounds[category].measured and bounds[category].missing
    # hardware hit counts choose the first formula; the machine's own penalty wins
    hardware = pd.Series({"instructions": 1000.0, "cycles": 1500.0, "mem_loads": 300.0,
                          "mem_stores": 100.0, "l2_hits": 20.0, "llc_hits": 10.0,
                          "llc_misses": 5.0, "branches": 200.0, "branch_misses": 5.0})
    haswell = load_machine("haswell-e5-2698v3")
    bounds = {b.category: b for b in lcpi.kernel_bounds(hardware, haswell, config)}
    lat = haswell.fields["latency_cycles"]
    expected = (400 * lat["l1"] + 35 * lat["l2"] + 15 * lat["llc"] + 5 * lat["memory"]) / 1000
    assert bounds["data_accesses"].lcpi == pytest.approx(expected)
    assert bounds["overall"].lcpi == pytest.approx(1.5)
    assert "penalty_cycles.branch_miss" not in bounds["branches"].defaults


def test_bars_and_labels_follow_the_good_cpi_threshold() -> None:
    config = lcpi.load_config()
    good = config.good_cpi
    assert lcpi.bar(good, config) == ">" * config.chars_per_label
    assert lcpi.bar(100.0, config) == ">" * (config.bar_width - 1) + "+"
    assert lcpi.bar(float("nan"), config) == lcpi.NOT_MEASURED
    labels = [lcpi.assessment(lcpi.Bound("x", "x", v * good, ""), config)
              for v in (0.5, 1.0, 1.5, 3.5, 9)]
    assert labels == ["great", "great", "good", "bad", "problematic"]
    assert compare.comparison_bar(2 * good, good, config) == \
        ">" * config.chars_per_label + "1" * config.chars_per_label
    assert compare.comparison_bar(good, 2 * good, config).endswith("2" * config.chars_per_label)
    assert compare.comparison_bar(good, float("nan"), config) == "run 1 only"
    assert compare.worse_run(good, good * 1.01, config) is None


def test_every_category_has_remedies_with_flags_for_three_compilers() -> None:
    config, catalogue = lcpi.load_config(), lcpi.load_remedies()
    for category in config.categories:
        texts = lcpi.remedy_texts(catalogue[category.key])
        assert texts, category.key
    flags = [remedy.get("flags") or {} for entry in catalogue.values()
             for sub in entry["subcategories"] for remedy in sub["remedies"]]
    assert any({"gcc", "clang", "oneapi"} <= set(f) for f in flags)
    assert all(set(f) <= {"gcc", "clang", "oneapi"} for f in flags)


# -------------------------------------------------------------------- validity, crafted tables

def crafted(folder: Path, rows: list[tuple], rate: float | None = 1000.0) -> Path:
    """A study folder: a measurements table (kernel, metric, rep, value, and P where given,
    else 2; rank 0 and 1 alike) and a provenance naming perf-clock's sampling rate."""
    records = [{"kernel": k, "metric": m, "p": p, "rep": rep, "rank": rank, "value": v}
               for k, m, rep, v, p in (row if len(row) == 5 else (*row, 2) for row in rows)
               for rank in (0, 1)]
    folder.mkdir(parents=True, exist_ok=True)
    write_table(pd.DataFrame(records), folder / "measurements.csv")
    backends = [{"name": "perf-clock", "simulated": False,
                 "provenance": {"frequency_hz": rate}}] if rate else []
    (folder / "measurements.csv.provenance.json").write_text(
        json.dumps({"backends": backends, "params": [], "machine": MACHINE}))
    return folder


def test_validity_warns_about_short_varying_and_contradicting_data(tmp_path: Path) -> None:
    folder = crafted(tmp_path / "bad", [
        ("<app>", "time", 1, 0.2), ("<app>", "time", 2, 0.2),
        ("work", "time", 1, 0.05), ("work", "time", 2, 0.075),      # 50% more, 50-75 samples
        ("work", "instructions", 1, 1e8), ("work", "mem_loads", 1, 1e7),
        ("work", "l1_hits", 1, 2e7),                                 # L1 hits above loads
    ])
    [section] = validity.sections(folder)
    warnings = [f.text for f in section.findings if f.severity == "warning"]
    assert any("L1 hits above loads" in w and "work" in w for w in warnings), warnings
    assert any("time of work" in w and "varies by 40%" in w for w in warnings), warnings
    assert any(w.startswith("work at P=2: about 62 samples") for w in warnings), warnings
    # the same kernel measured well: nothing to warn about
    folder = crafted(tmp_path / "good", [
        ("<app>", "time", 1, 2.0), ("<app>", "time", 2, 2.1),
        ("work", "time", 1, 1.0), ("work", "time", 2, 1.05),
        ("work", "instructions", 1, 1e9), ("work", "mem_loads", 1, 3e8),
        ("work", "l1_hits", 1, 2.9e8),
    ])
    [section] = validity.sections(folder)
    assert [f.severity for f in section.findings if f.severity != "info"] == []
    assert section.findings[0].text.startswith("no problem found")


def test_validity_says_once_per_kernel_where_it_is_short_or_varies(tmp_path: Path) -> None:
    """miniFE's five key kernels, short to sample at up to 8 P each, gave 33 warnings of one
    line each, and the diagnosis opened with them: one per kernel now (and one for the runs),
    naming its points and the range."""
    rows = [(kernel, "time", rep, value / p * (1.5 if rep == 2 else 1.0), p)
            for p in (2, 4, 8) for rep in (1, 2)
            for kernel, value in (("<app>", 0.2), ("work", 0.12), ("rest", 0.05))]
    [section] = validity.sections(crafted(tmp_path / "study", rows))
    warnings = [f.text for f in section.findings if f.severity == "warning"]
    short = sorted(w for w in warnings if "samples per rank" in w)
    assert len(short) == 3
    assert short[0].startswith("rest at P=2, 4, 8: about 31 .. 8 samples per rank")
    assert short[1].startswith("runs at P=4, 8 too short to sample: about 53 .. 27 samples")
    assert short[2].startswith("work at P=2, 4, 8: about 75 .. 19 samples per rank")
    varying = [w for w in warnings if w.startswith("time of work")]
    assert len(varying) == 1 and "at P=2, 4, 8 varies by 40% over 2 repetitions" in varying[0]


def test_validity_says_what_apmts_own_tracer_cost(tmp_path: Path, measured_data: Path) -> None:
    """Graph500's search polls MPI_Testany, and apmt's PMPI tracer pays its wrapper per call:
    its bucket's share of the sampled time peaks at 2.1% in a run at P = 32 (bundled data);
    a study without the tracer's samples gets no such line."""
    folder = tmp_path / "graph500"
    folder.mkdir()
    shutil.copy(measured_data / "graph500/measurements.csv", folder / "measurements.csv")
    shutil.copy(measured_data / "graph500/provenance.json",
                folder / "measurements.csv.provenance.json")
    [section] = validity.sections(folder, read_study(folder, machine="generic-x86-2core-vm"))
    [line] = [f.text for f in section.findings if "tracer" in f.text]
    assert line.startswith("apmt's PMPI tracer took up to 2.1% of the sampled time (at P=32")
    rows = [("work", "time", 1, 0.5 / p, p) for p in (2, 4, 8)]
    [plain] = validity.sections(crafted(tmp_path / "plain", rows))
    assert not any("tracer" in f.text for f in plain.findings)


def test_validity_says_what_it_could_not_check(tmp_path: Path) -> None:
    folder = crafted(tmp_path / "norate", [("work", "time", 1, 0.001),
                                           ("work", "instructions", 1, 1e6)], rate=None)
    [section] = validity.sections(folder)
    texts = [f.text for f in section.findings]
    assert any("sampling rate" in t for t in texts)
    assert any("one repetition per point" in t for t in texts)
    assert not any("samples per rank" in t for t in texts)


# --------------------------------------------------------------------- the command's input

def test_command_lines_are_taken_apart() -> None:
    command = parse_command(["mpirun", "--bind-to", "core", "-np", "4", "--oversubscribe",
                             "./app", "-x", "1"])
    assert (command.launcher, command.p, command.program) == ("mpirun", 4, "./app")
    assert command.launcher_args == ("--bind-to", "core")      # apmt adds --oversubscribe
    assert command.args == ("-x", "1")
    command = parse_command(["srun", "--ntasks=3", "--mpi=pmix", "lmp", "-in", "in.lj"])
    assert (command.launcher, command.p, command.srun_mpi) == ("srun", 3, "pmix")
    assert parse_command(["./app"]).launcher == "mpirun" and parse_command(["./app"]).p is None


@pytest.mark.parametrize(("words", "fragments"), [
    (["--", "mpirun", "-np", "two", "./app"], ["-np 'two'", "not a number"]),
    (["--", "mpirun", "-np", "2"], ["no program"]),
    (["--", "mpirun", "-np", "2", "./no-such-program-x"], ["./no-such-program-x", "not found"]),
    ([], ["give a study folder"]),
])
def test_bad_commands_are_one_line(cli, tmp_path: Path, words: list[str],
                                   fragments: list[str]) -> None:
    result = cli("diagnose", "--results", tmp_path, *words)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    for fragment in fragments:
        assert fragment in result.err, result.err


def test_one_command_needs_no_machine_file(tmp_path: Path, cli, own_cache_folder: Path) -> None:
    """PerfExpert's users type one command: without --machine this host is measured once
    (the real probe), its file kept in apmt's cache folder, and the diagnosis goes on with it;
    the next command uses that file without measuring again."""
    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    program = tmp_path / "branchy"
    subprocess.run(["mpicc", "-O1", "-g", "-o", str(program), str(PROGRAMS / "branchy.c")],
                   check=True)
    words = ("diagnose", "--results", tmp_path / "results", "--", "mpirun", "--oversubscribe",
             "-np", "2", program)
    first = cli(*words)
    assert first.code == 0, first.err
    [machine_file] = (own_cache_folder / "apmt" / "machines").glob("*.yaml")
    study = yaml.safe_load((tmp_path / "results" / "diagnose" / "branchy" / "study.yaml")
                           .read_text())
    assert study["machine"] == str(machine_file)
    probed = load_machine(machine_file)
    assert probed.fields["source"].startswith("measured by apmt machine probe")
    assert probed.fields["latency_cycles"]["memory"] > probed.fields["latency_cycles"]["l1"] > 0
    assert "LCPI of branchy" in first.out and "needs a machine file" not in first.out
    measured_at = machine_file.stat().st_mtime_ns
    second = cli(*words)
    assert second.code == 0, second.err
    assert "measuring this host" not in second.out + second.err
    assert machine_file.stat().st_mtime_ns == measured_at


def test_a_study_without_a_machine_file_says_what_the_lcpi_needs(tmp_path: Path) -> None:
    folder = crafted(tmp_path / "nomachine", [("work", "time", 1, 1.0),
                                              ("work", "instructions", 1, 1e9)])
    provenance = folder / "measurements.csv.provenance.json"
    provenance.write_text(json.dumps({**json.loads(provenance.read_text()), "machine": None}))
    [section] = lcpi.sections(folder)
    assert "needs a machine file" in section.note and "--machine" in section.note
    html_page = to_html([section])
    assert html_page.startswith("<!DOCTYPE html>") and html.escape(section.note) in html_page


def test_a_machine_file_beside_the_study_is_found_through_the_study(tmp_path: Path) -> None:
    """The provenance keeps a probed machine's name only; the study file says where it is."""
    machine = load_machine(MACHINE).fields | {"name": "my-node"}
    (tmp_path / "my-node.yaml").write_text(yaml.safe_dump(machine))
    study = tmp_path / "s.yaml"
    study.write_text(yaml.safe_dump({"name": "s", "command": "true", "p": [2],
                                     "machine": "my-node.yaml"}))
    folder = crafted(tmp_path / "s", [("work", "time", 1, 1.0),
                                      ("work", "instructions", 1, 1e9)])
    provenance = folder / "measurements.csv.provenance.json"
    record = {**json.loads(provenance.read_text()), "machine": "my-node",
              "study_file": str(study)}
    provenance.write_text(json.dumps(record))
    assert read_study(folder).machine.fields["name"] == "my-node"
    study.unlink()
    with pytest.raises(ApmtError, match=r"'machine'.*my-node.*--machine"):
        read_study(folder)


def test_the_assessed_run_is_the_largest_p_whose_ranks_had_a_core_each() -> None:
    """Ranks sharing cores share caches and bandwidth too: P=3 and 4 oversubscribed 2 cores."""
    table = pd.DataFrame({"kernel": "k", "metric": "time", "p": [1, 2, 3, 4], "value": 1.0})
    provenance = {"oversubscribed_runs": ["p3_r1", "p4_r1", "p3_r2", "p4_r2"]}
    data = StudyData(Path("."), table, [], provenance, None, None, None)
    assert lcpi.assessed_point(data) == {"p": 2}
    everywhere = {"oversubscribed_runs": [f"p{p}_r1" for p in range(1, 5)]}
    assert lcpi.assessed_point(StudyData(Path("."), table, [], everywhere, None, None,
                                              None)) == {"p": 4}


def test_a_kernel_that_performs_fine_is_not_sent_to_remedies(measured_data: Path,
                                                             tmp_path: Path) -> None:
    """miniWeather as profiled here (data/miniweather): its flux kernels spend 0.3 to 0.4
    cycles per instruction in all, within the good-CPI threshold, while their data accesses'
    upper bounds are bad to problematic (compute_tendencies_x 2.08). No category costs more
    than the kernel spends in all: the bound is said, as information, and sends no remedies;
    glibc's pow, just above the threshold (0.50), still gets them."""
    shutil.copy(measured_data / "miniweather" / "measurements.csv", tmp_path)
    found = lcpi.sections(tmp_path, machine="generic-x86-2core-vm")
    worst = {f.kernel: f for s in found for f in s.findings if "worst category" in f.text}
    good_cpi = lcpi.load_config().good_cpi
    for kernel in ("compute_tendencies_x", "compute_tendencies_z", "semi_discrete_step"):
        finding = worst[kernel]
        assert finding.severity == "info" and "little to gain there" in finding.text
        assert "performs just fine" in next(f.text for s in found for f in s.findings
                                            if f.text.startswith(f"{kernel}: overall"))
    assert worst["pow"].severity == "problem"
    [remedies] = [s for s in found if s.title.startswith("Remedies")]
    assert remedies.title.endswith("(worst in __ieee754_pow_fma, pow)")
    table = lcpi.assess(read_study(tmp_path, "generic-x86-2core-vm"))
    overall = table[table["category"] == lcpi.OVERALL].set_index("kernel")["lcpi"]
    assert (overall[["compute_tendencies_x", "semi_discrete_step"]] <= good_cpi).all()
    assert overall["pow"] > good_cpi

