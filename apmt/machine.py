"""Machine parameters: frequency, load latency per cache level and memory, penalties.

A machine file is YAML (see ``apmt/data/machines/``); it is data, not code, so a site adds
its nodes without touching apmt. ``load_machine`` accepts a path or the name of a shipped file
and gives a checked Machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from apmt.errors import ApmtError
from apmt.inputs import cut, is_dir, is_file, is_number, read_yaml, shown
from apmt.resources import shipped

LATENCY_LEVELS = ("l1", "l2", "llc", "memory")
MAX_GHZ = 100.0                 # no CPU clock comes near; a larger number is a typo or damage
MAX_CYCLES = 1e7                # a latency or penalty of more than 10 ms is no latency
MAX_CACHE_BYTES = 2 ** 50       # a petabyte of cache
# optional groups of numbers: field -> (largest value, whole numbers only)
OPTIONAL_GROUPS = {"latency_ns": (MAX_CYCLES, False), "penalty_cycles": (MAX_CYCLES, False),
                   "cache_bytes": (MAX_CACHE_BYTES, True), "cache_assoc": (1e6, True)}


@dataclass(frozen=True)
class Machine:
    """A checked machine file: what apmt computes with (clock, load latencies per level, and
    the optional latencies in ns, penalties and cache geometry), and the file's whole mapping
    (``fields``: its name, description, notes, the probe's curves), which to_dict gives back
    as read."""

    frequency_ghz: float
    latency_cycles: dict[str, float]
    fields: dict = field(repr=False)

    @property
    def name(self) -> str | None:
        return self.fields.get("name")

    @property
    def hertz(self) -> float:
        return float(self.frequency_ghz) * 1e9

    def group(self, name: str) -> dict:
        """An optional group of numbers (latency_ns, penalty_cycles, cache_bytes, ...)."""
        return self.fields.get(name) or {}

    def value(self, key: str) -> object:
        """A field by its dotted name (``latency_cycles.l1``), or None."""
        value: object = self.fields
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def to_dict(self) -> dict:
        return self.fields


def shipped_machines() -> list[str]:
    """Names of the machine files that come with apmt."""
    return shipped("machines")


def load_machine(name_or_path: str | Path) -> Machine:
    """Read and check a machine file; raises ApmtError naming the file and field."""
    path = Path(name_or_path)
    if is_dir(path):
        raise ApmtError(f"{path}: is a directory, not a machine file")
    if not is_file(path):
        shipped = Path(str(resources.files("apmt") / "data" / "machines"))
        path = shipped / f"{name_or_path}.yaml"
        if not is_file(path):
            raise ApmtError(f"{cut(str(name_or_path))}: no such machine file "
                            f"(shipped: {', '.join(shipped_machines())})")
    return check_machine(read_yaml(path), str(path))


def check_machine(machine: object, source: str) -> Machine:
    """The fields apmt computes with are finite, positive and plausible: NaN or infinity
    would pass into every model and diagnosis."""
    if not isinstance(machine, dict):
        raise ApmtError(f"{source}: a machine file is a mapping of fields")
    frequency = machine.get("frequency_ghz")
    if not is_number(frequency, high=MAX_GHZ):
        raise ApmtError(f"{source}: field 'frequency_ghz' must be a number of GHz in "
                        f"(0, {MAX_GHZ:g}], not {shown(frequency)}")
    latencies = machine.get("latency_cycles")
    if not isinstance(latencies, dict):
        raise ApmtError(f"{source}: field 'latency_cycles' must map {', '.join(LATENCY_LEVELS)}"
                        " to cycles")
    for level in LATENCY_LEVELS:
        value = latencies.get(level)
        if not is_number(value, high=MAX_CYCLES):
            raise ApmtError(f"{source}: field 'latency_cycles.{level}' must be a number of "
                            f"cycles in (0, {MAX_CYCLES:g}], not {shown(value)}")
    for group, (high, whole) in OPTIONAL_GROUPS.items():
        _check_group(machine.get(group), group, high, whole, source)
    return Machine(float(frequency), latencies, machine)


def _check_group(values: object, group: str, high: float, whole: bool, source: str) -> None:
    """An optional mapping of numbers (cache sizes, penalties): absent, or all good."""
    if values is None:
        return
    if not isinstance(values, dict):
        raise ApmtError(f"{source}: field {group!r} must map names to numbers, "
                        f"not {shown(values)}")
    for key, value in values.items():
        if not is_number(value, high=high) or (whole and not isinstance(value, int)):
            kind = "a whole number" if whole else "a number"
            raise ApmtError(f"{source}: field '{group}.{key}' must be {kind} in (0, {high:g}], "
                            f"not {shown(value)}")
