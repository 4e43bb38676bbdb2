"""CPU frequency control for measurement: whether this machine can set the clock, and how
(cpupower or sysfs as root, or Slurm's --cpu-freq for a job's steps), and holding every CPU
at one frequency for the duration of a run.

Refinement's lower-frequency rerun (apmt.refine decides it, apmt.collect.frequency runs it)
uses it; it lives with measurement so that measuring never imports modeling.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from apmt.errors import ApmtError

SYSFS_CPU = Path("/sys/devices/system/cpu")
KHZ_PER_GHZ = 1e6


def frequency_control(root: Path = SYSFS_CPU, environ: Mapping[str, str] | None = None,
                      use_cpupower: bool = True) -> dict:
    """Whether this machine can set the CPU frequency, how, and to what; why not if not.

    Keys: can_set, method (slurm | cpupower | sysfs | None), frequencies_ghz (the driver's
    list, empty when it gives a range only), min_ghz, max_ghz, current_ghz, driver,
    governor, writable, cpupower (path or None), slurm_job, sysfs, reason.
    """
    environ = os.environ if environ is None else environ
    cpufreq = root / "cpu0" / "cpufreq"
    info = {"can_set": False, "method": None, "frequencies_ghz": [], "min_ghz": None,
            "max_ghz": None, "current_ghz": None, "driver": None, "governor": None,
            "writable": False, "cpupower": shutil.which("cpupower") if use_cpupower else None,
            "slurm_job": environ.get("SLURM_JOB_ID"), "sysfs": str(cpufreq)}
    if not cpufreq.is_dir():
        where = f" (Slurm job {info['slurm_job']}: --cpu-freq has nothing to set on this " \
                "node)" if info["slurm_job"] else ""
        return {**info, "reason": f"no cpufreq driver: {cpufreq} does not exist (a virtual "
                                  f"machine or a kernel without cpufreq){where}"}
    info.update(_read_cpufreq(cpufreq))
    info["writable"] = os.geteuid() == 0 and os.access(cpufreq / "scaling_max_freq", os.W_OK)
    if info["min_ghz"] is None or info["max_ghz"] is None or info["min_ghz"] >= info["max_ghz"]:
        return {**info, "reason": f"{cpufreq}: no range of frequencies to choose from "
                                  f"(min {info['min_ghz']}, max {info['max_ghz']} GHz)"}
    if info["slurm_job"]:
        method = "slurm"
    elif info["writable"]:
        method = "cpupower" if info["cpupower"] else "sysfs"
    else:
        return {**info, "reason": f"{cpufreq}/scaling_max_freq is not writable: run as root "
                                  "or inside a Slurm job (srun --cpu-freq)"}
    return {**info, "can_set": True, "method": method,
            "reason": f"{method} sets {info['min_ghz']:g}-{info['max_ghz']:g} GHz "
                      f"(driver {info['driver']}, governor {info['governor']})"}


def _read_cpufreq(cpufreq: Path) -> dict:
    """The driver's frequencies (kHz in sysfs) in GHz."""
    def read(name: str) -> str | None:
        with contextlib.suppress(OSError):
            return (cpufreq / name).read_text().strip()
        return None

    def ghz(name: str) -> float | None:
        text = read(name)
        try:
            return float(text) / KHZ_PER_GHZ if text else None
        except ValueError:
            raise ApmtError(f"{cpufreq / name}: {text!r} is not a frequency in kHz") from None

    listed = (read("scaling_available_frequencies") or "").split()
    try:
        frequencies = sorted(float(khz) / KHZ_PER_GHZ for khz in listed)
    except ValueError:
        raise ApmtError(f"{cpufreq / 'scaling_available_frequencies'}: {listed!r} is not a "
                        "list of frequencies in kHz") from None
    low = ghz("cpuinfo_min_freq") or ghz("scaling_min_freq")
    high = ghz("cpuinfo_max_freq") or ghz("scaling_max_freq")
    return {"frequencies_ghz": frequencies,
            "min_ghz": frequencies[0] if frequencies else low,
            "max_ghz": frequencies[-1] if frequencies else high,
            "current_ghz": ghz("scaling_cur_freq"), "driver": read("scaling_driver"),
            "governor": read("scaling_governor")}


def cpu_freq_option(ghz: float) -> str:
    """Slurm's option for a job step at this frequency (Slurm takes kHz)."""
    return f"--cpu-freq={round(ghz * KHZ_PER_GHZ)}"


@contextlib.contextmanager
def pinned_frequency(ghz: float, control: dict | None = None) -> Iterator[dict]:
    """Run the body with every CPU's frequency held at ``ghz`` (scaling min = max), with
    cpupower or by writing sysfs, and restore the previous limits afterwards."""
    control = frequency_control() if control is None else control
    if not control["can_set"] or not control["writable"]:
        why = control["reason"] if not control["can_set"] else (
            f"in Slurm job {control['slurm_job']} the frequency is set per job step: run it "
            f"with srun {cpu_freq_option(ghz)}")
        raise ApmtError(f"cannot pin the CPU frequency at {ghz:g} GHz: {why}")
    if not control["min_ghz"] <= ghz <= control["max_ghz"]:
        raise ApmtError(f"cannot pin the CPU frequency at {ghz:g} GHz: this machine sets "
                        f"{control['min_ghz']:g} to {control['max_ghz']:g} GHz")
    cpus = sorted(Path(control["sysfs"]).parent.parent.glob("cpu[0-9]*/cpufreq"))
    saved = {cpu: (_khz(cpu / "scaling_min_freq"), _khz(cpu / "scaling_max_freq")) for cpu in cpus}
    khz = round(ghz * KHZ_PER_GHZ)
    _set_limits(control, saved, {cpu: (khz, khz) for cpu in cpus})
    try:
        yield {**control, "current_ghz": ghz}
    finally:
        _set_limits(control, {cpu: (khz, khz) for cpu in cpus}, saved)


def _khz(path: Path) -> int:
    return int(path.read_text().strip())


def _set_limits(control: dict, current: dict, wanted: dict) -> None:
    """Move each CPU's (min, max) in kHz without ever writing min above max."""
    if control["method"] == "cpupower":
        lows, highs = {v[0] for v in wanted.values()}, {v[1] for v in wanted.values()}
        if len(lows) == 1 and len(highs) == 1:
            _cpupower("-d", f"{lows.pop()}kHz", "-u", f"{highs.pop()}kHz")
            return
    for cpu, (low, high) in wanted.items():
        order = [("scaling_max_freq", high), ("scaling_min_freq", low)]
        if high < current[cpu][0]:
            order.reverse()
        for name, value in order:
            try:
                (cpu / name).write_text(f"{value}\n")
            except OSError as error:
                raise ApmtError(f"{cpu / name}: cannot write {value} kHz ({error})") from None


def _cpupower(*args: str) -> None:
    command = ["cpupower", "-c", "all", "frequency-set", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ApmtError(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout}")
