"""Shared fixtures: the real measurement data, and the command line run in-process."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

MEASURED_DATA = Path(__file__).resolve().parents[1] / "data"
BENCHMARKS = MEASURED_DATA.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """A script of benchmarks/ as a module (they are scripts, not part of the package)."""
    spec = importlib.util.spec_from_file_location(f"apmt_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def measured_data() -> Path:
    """The repository's ``data/`` folder: real measurements made by others (see its README)."""
    return MEASURED_DATA


@pytest.fixture(scope="session", autouse=True)
def own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """apmt's cache folder (compiled probes, this host's machine file) for this session only:
    a test that profiles a study naming no machine measures this host for real, once per
    session, and the user's cache stays as it was. Subprocesses (snakemake) inherit it."""
    folder = tmp_path_factory.mktemp("cache")
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


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
