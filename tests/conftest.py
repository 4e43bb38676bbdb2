"""Shared fixtures: the real measurement data, and the command line run in-process."""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (see its README); tests that need it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} not present")
    return SHARED_DATA


@dataclass
class CliResult:
    """What one in-process run of the command line gave."""

    code: int
    out: str
    err: str


@pytest.fixture(scope="session")
def cli() -> Callable[..., CliResult]:
    """Run ``apmt.cli.main`` in-process with stdout and stderr captured."""
    from apmt.cli import main

    def run(*args: object) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main([str(arg) for arg in args])
        return CliResult(code, out.getvalue(), err.getvalue())

    return run
