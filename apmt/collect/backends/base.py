"""The interface every counter backend implements.

A backend measures each rank of a run: each rank starts through apmt's exec shim
(``apmt.collect.rank_exec``), which finds the rank (``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``,
``SLURM_PROCID`` or ``PMIX_RANK``), fills it in for ``{rank}`` in the words of
``rank_prefix(run_dir)`` and execs those words followed by the application's, without a
shell, so that each rank writes its own files into the run folder. After the run,
``parse(run_dir)`` reads them back as per-rank rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pandas as pd


class Backend(Protocol):
    """A way to measure per-function counters of every rank."""

    name: str            # "perf-events", "perf-clock", "cachegrind"
    simulated: bool      # counts come from a simulator (cachegrind), not the hardware

    def check(self) -> None:
        """Raise ApmtError (one line) if the tool or an event is not usable here."""

    def rank_prefix(self, run_dir: Path) -> list[str]:
        """Words put before the application's; ``{rank}`` in a word is the rank."""

    def parse(self, run_dir: Path) -> pd.DataFrame:
        """Rows of the measurements table without run columns: kernel, metric, rank, value."""

    def provenance(self) -> dict:
        """What produced the numbers: tool and version, events, sampling period, geometry."""
