"""Sampling validity (Eq. 1 of the APMT paper): per-function shares from perf cpu-clock sampling
against two references, on one LAMMPS LJ run at P=1.

Usage: python benchmarks/sampling_validity.py [--size 1] [--steps 100] [--top 12]
                                              [--results DIR]

Two runs of the shipped LAMMPS study, each made and parsed by apmt's own backends (as
``apmt profile --backend perf-clock`` and ``--backend cachegrind`` make them):
1. perf-clock: the share t_i of each function in the sampled on-CPU time;
2. cachegrind: the share r_i of each function in the simulated instruction count (Ir).
Eq. 1, NRMSE = sqrt(sum_i t_i (t_i - r_i)^2) / (max_i(t_i u r_i) - min_i(t_i u r_i)), is
computed over the functions present in both, each side's shares renormalised to that common
set (the kernel's time, which cachegrind cannot see, drops out). Functions below 0.1% in both
are summed into one entry, "(below 0.1% in both)": at ~1,000 samples per second they hold a
sample or two each, and as separate terms they would only add noise of weight ~0.

Instruction shares are not time shares: a function's time is its instructions times its
cycles per instruction, and CPI differs between functions (a cache-missing loop against a
compute-bound one), so this NRMSE bounds the sum of the sampling error and of the CPI
differences, not the sampling error alone. The script also prints the NRMSE that sampling
noise alone would give (binomial error of each share from the number of samples).

Second reference, one that is time: LAMMPS' own timers ("MPI task timing breakdown": Pair,
Neigh, Comm, Output, Modify, Other, measured in the same sampled run). Sampled functions are
grouped into those sections by name (PairLJCut::compute -> Pair, NPair*/NBin* -> Neigh,
Comm*/AtomVec pack-unpack/MPI_* -> Comm, Fix* -> Modify, Thermo/Compute* -> Output,
Verlet/Domain::pbc -> Other; set-up code, libraries, loader and kernel stay out) and the NRMSE
is taken over the sections. LAMMPS times only the loop, while sampling also sees the set-up's
one force computation and one neighbour build; the NRMSE is also printed with those taken out
(Pair x steps/(steps+1), Neigh x builds/(builds+1)).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from overhead import apmt_run, lammps_clocks, lammps_study

from apmt.collect.backends.perf import DEFAULT_CLOCK_HZ
from apmt.collect.runner import STDOUT, load_study_machine, make_backends
from apmt.diagnose.sampling import canonical, common, noise_nrmse, nrmse, shares
from apmt.errors import ApmtError
from apmt.names import MPI_NAME
from apmt.study import Study, with_backend

SECTIONS = ("Pair", "Neigh", "Comm", "Output", "Modify", "Other")
SECTION_OF = (
    ("Pair", re.compile(r"^LAMMPS_NS::Pair\w*::")),
    ("Neigh", re.compile(r"^LAMMPS_NS::(NPair|NBin|NStencil|NTopo|Neighbor|NeighList)\w*::")),
    ("Comm", re.compile(r"^LAMMPS_NS::(Comm\w*::|Irregular::|AtomVec\w*::((un)?pack_\w+|grow)$"
                        r"|Atom::sort$)")),
    ("Modify", re.compile(r"^LAMMPS_NS::(Fix\w*|Modify)::")),
    ("Output", re.compile(r"^LAMMPS_NS::(Output|Thermo|Compute\w*|Dump\w*)::")),
    ("Other", re.compile(r"^LAMMPS_NS::(Verlet::(run|force_clear)|Domain::pbc)$")),
)
BREAKDOWN = re.compile(r"^(Pair|Neigh|Comm|Output|Modify|Other)\s*\|(.*)$", re.MULTILINE)
BUILDS = re.compile(r"^Neighbor list builds = (\d+)", re.MULTILINE)


# --------------------------------------------------------------------------- function totals

def totals(table: pd.DataFrame, metric: str) -> dict[str, float]:
    """Per function (canonical name), the metric summed over ranks."""
    rows = table[table["metric"] == metric]
    names = rows["kernel"].map(canonical)
    return rows.groupby(names)["value"].sum().to_dict()


# ------------------------------------------------------------------------- LAMMPS' timers

def breakdown(text: str) -> dict[str, float]:
    """LAMMPS' "MPI task timing breakdown": section -> average seconds over ranks."""
    out = {}
    for section, rest in BREAKDOWN.findall(text):
        cells = [cell.strip() for cell in rest.split("|")]
        out[section] = float(cells[1]) if cells[1] else 0.0
    if set(out) != set(SECTIONS):
        raise ApmtError(f"LAMMPS printed no full timing breakdown (found {sorted(out)})")
    return out


def section_of(name: str) -> str | None:
    """The LAMMPS timer section a sampled function's time falls into, or None (set-up,
    libraries, loader, kernel: outside LAMMPS' timed loop or not attributable)."""
    if MPI_NAME.match(name):
        return "Comm"
    for section, pattern in SECTION_OF:
        if pattern.match(name):
            return section
    return None


def sampled_sections(seconds: dict[str, float]) -> tuple[dict[str, float], float]:
    """Sampled seconds per section, and the seconds no section takes."""
    out = dict.fromkeys(SECTIONS, 0.0)
    outside = 0.0
    for name, value in seconds.items():
        section = section_of(name)
        if section is None:
            outside += value
        else:
            out[section] += value
    return out, outside


def without_setup(sections: dict[str, float], steps: int, builds: int) -> dict[str, float]:
    """Sampled sections less the set-up's one force computation and one neighbour build,
    which LAMMPS' loop timers do not see."""
    out = dict(sections)
    out["Pair"] *= steps / (steps + 1)
    out["Neigh"] *= builds / (builds + 1)
    return out


# ------------------------------------------------------------------------------- printing

def function_lines(t: dict[str, float], r: dict[str, float], top: int) -> list[str]:
    lines = [f"{'function':<52}{'sampled %':>10}{'Ir %':>9}{'diff':>8}"]
    for name in sorted(t, key=t.get, reverse=True)[:top]:
        shown = name if len(name) <= 50 else name[:47] + "..."
        lines.append(f"{shown:<52}{100 * t[name]:10.2f}{100 * r[name]:9.2f}"
                     f"{100 * (t[name] - r[name]):+8.2f}")
    return lines


def left_out(all_shares: dict[str, float], kept: set[str], count: int = 3) -> str:
    """The largest functions of one side that the other side lacks."""
    missing = sorted((n for n in all_shares if n not in kept), key=all_shares.get,
                     reverse=True)[:count]
    return ", ".join(f"{n} {100 * all_shares[n]:.1f}%" for n in missing) or "none"


def section_lines(sampled: dict[str, float], lammps: dict[str, float]) -> list[str]:
    t, r = shares(sampled), shares(lammps)
    lines = [f"{'section':<9}{'sampled s':>10}{'LAMMPS s':>10}{'sampled %':>11}"
             f"{'LAMMPS %':>10}"]
    for name in SECTIONS:
        lines.append(f"{name:<9}{sampled[name]:10.3f}{lammps[name]:10.3f}"
                     f"{100 * t[name]:11.2f}{100 * r[name]:10.2f}")
    return lines


# ----------------------------------------------------------------------------------- main

def measure(study: Study, backend: str, results: Path) -> tuple[pd.DataFrame, Path, float]:
    """One apmt run with a backend, parsed by that backend: (rows, run folder, wall s)."""
    trace = backend == "perf-clock"              # the cachegrind pass of auto runs untraced
    record = apmt_run(study, backend, trace, results / backend)
    (parser,) = make_backends(with_backend(study, backend), load_study_machine(study))
    return parser.parse(record.run_dir), record.run_dir, float(record.wall_time_s or 0.0)


def report(study: Study, steps: int, results: Path, top: int) -> None:
    """Both runs, then both comparisons."""
    perf_rows, perf_dir, perf_s = measure(study, "perf-clock", results)
    cg_rows, cg_dir, cg_s = measure(study, "cachegrind", results)
    seconds = totals(perf_rows, "time")
    samples = sum(seconds.values()) * DEFAULT_CLOCK_HZ
    print(f"LAMMPS LJ at P=1: perf cpu-clock {DEFAULT_CLOCK_HZ} Hz, ~{samples:.0f} samples "
          f"(wall {perf_s:.1f} s, loop {lammps_clocks(perf_dir)[0]:.2f} s); cachegrind "
          f"(wall {cg_s:.1f} s, loop {lammps_clocks(cg_dir)[0]:.1f} s)")
    print_functions(seconds, totals(cg_rows, "instructions"), top)
    print_sections(seconds, (perf_dir / STDOUT).read_text(errors="replace"), steps)


def print_functions(seconds: dict[str, float], instructions: dict[str, float],
                    top: int) -> None:
    """Comparison 1: sampled time shares against cachegrind's instruction shares."""
    t_all, r_all = shares(seconds), shares(instructions)
    t, r = common(t_all, r_all)
    kept = set(t_all) & set(r_all)
    samples = sum(seconds.values()) * DEFAULT_CLOCK_HZ
    print(f"\n1) sampled time shares t_i against cachegrind instruction shares r_i, "
          f"{len(kept)} functions in both ({len(t)} terms)")
    print("\n".join(function_lines(t, r, top)))
    print(f"common functions hold {100 * sum(t_all[n] for n in kept):.1f}% of the sampled "
          f"time and {100 * sum(r_all[n] for n in kept):.1f}% of the instructions")
    print(f"sampled only: {left_out(t_all, kept)}")
    print(f"cachegrind only: {left_out(r_all, kept)}")
    print(f"NRMSE (Eq. 1), time vs instruction shares: {nrmse(t, r):.4f}  (sampling noise "
          f"alone: ~{noise_nrmse(t, samples):.4f})")
    print("   instruction shares are not time shares (CPI differs between functions): this "
          "bounds sampling error plus CPI differences")


def print_sections(seconds: dict[str, float], stdout: str, steps: int) -> None:
    """Comparison 2: sampled time grouped into LAMMPS' timer sections against the timers."""
    lammps = breakdown(stdout)
    builds = BUILDS.search(stdout)
    sampled, outside = sampled_sections(seconds)
    print(f"\n2) sampled time grouped into LAMMPS' timer sections against LAMMPS' own timers "
          f"(same run; {outside:.3f} s of samples outside any section left out)")
    print("\n".join(section_lines(sampled, lammps)))
    loop = without_setup(sampled, steps, int(builds[1]) if builds else 0)
    noise = noise_nrmse(shares(sampled), sum(sampled.values()) * DEFAULT_CLOCK_HZ)
    print(f"NRMSE (Eq. 1), sampled vs LAMMPS timer shares: "
          f"{nrmse(shares(sampled), shares(lammps)):.4f}; without the set-up's force "
          f"computation and neighbour build: {nrmse(shares(loop), shares(lammps)):.4f}  "
          f"(sampling noise alone: ~{noise:.4f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1.0, help="32,000 atoms * size^3")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--top", type=int, default=12, help="functions to print")
    parser.add_argument("--results", type=Path,
                        help="keep the two runs here (default: a temporary folder)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    study = lammps_study(1, args.size, args.steps)
    if args.results:
        report(study, args.steps, args.results, args.top)
    else:
        with tempfile.TemporaryDirectory(prefix="apmt-sampling-") as work:
            report(study, args.steps, Path(work), args.top)
    print(f"\ntook {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
