"""The interface every counter backend implements.

A backend measures each rank of a run: the runner writes a small shell wrapper per run that
finds the rank (``OMPI_COMM_WORLD_RANK``, ``PMI_RANK`` or ``SLURM_PROCID``) into the shell
variable ``$rank`` and then runs ``rank_prefix(run_dir)`` followed by the application's
command, so that each rank writes its own files into the run folder. After the run,
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

    def rank_prefix(self, run_dir: Path) -> str:
        """Shell words put before the application's command; may use ``$rank``."""

    def parse(self, run_dir: Path) -> pd.DataFrame:
        """Rows of the measurements table without run columns: kernel, metric, rank, value."""

    def provenance(self) -> dict:
        """What produced the numbers: tool and version, events, sampling period, geometry."""
