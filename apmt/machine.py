"""Machine parameters: frequency, load latency per cache level and memory, penalties.

A machine file is YAML (see ``apmt/data/machines/``); it is data, not code, so a site adds
its nodes without touching apmt. ``load_machine`` accepts a path or the name of a shipped file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from apmt.errors import ApmtError
from apmt.resources import shipped

LATENCY_LEVELS = ("l1", "l2", "llc", "memory")


def shipped_machines() -> list[str]:
    """Names of the machine files that come with apmt."""
    return shipped("machines")


def load_machine(name_or_path: str | Path) -> dict:
    """Read and check a machine file; raises ApmtError naming the file and field."""
    path = Path(name_or_path)
    if not path.exists():
        shipped = resources.files("apmt") / "data" / "machines" / f"{name_or_path}.yaml"
        if not shipped.is_file():
            raise ApmtError(f"{name_or_path}: no such machine file (shipped: "
                            f"{', '.join(shipped_machines())})")
        path = Path(str(shipped))
    try:
        machine = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ApmtError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    return check_machine(machine, str(path))


def check_machine(machine: object, source: str) -> dict:
    if not isinstance(machine, dict):
        raise ApmtError(f"{source}: a machine file is a mapping of fields")
    frequency = machine.get("frequency_ghz")
    if not isinstance(frequency, int | float) or frequency <= 0:
        raise ApmtError(f"{source}: field 'frequency_ghz' must be a positive number, "
                        f"not {frequency!r}")
    latencies = machine.get("latency_cycles")
    if not isinstance(latencies, dict):
        raise ApmtError(f"{source}: field 'latency_cycles' must map {', '.join(LATENCY_LEVELS)}"
                        " to cycles")
    for level in LATENCY_LEVELS:
        value = latencies.get(level)
        if not isinstance(value, int | float) or value <= 0:
            raise ApmtError(f"{source}: field 'latency_cycles.{level}' must be a positive "
                            f"number, not {value!r}")
    return machine


def hertz(machine: dict) -> float:
    return float(machine["frequency_ghz"]) * 1e9
