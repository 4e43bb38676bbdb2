#!/usr/bin/env bash
# Install apmt for running the workflow and the tests. Idempotent: run it as often as you like.
#
#   .venv/          apmt (editable) with the extras `workflow` and `test`
#   .venv-extrap/   Extra-P, the peer modeler apmt is compared with; it pins numpy<2 and so
#                   lives in its own environment. .venv/bin/extrap-python starts its Python,
#                   which is where apmt.extrap_peer looks for it.
#
# Each step leaves a stamp in <venv>/.install-stamps/ holding the hash of what it installed
# (pyproject.toml, the Extra-P requirement): a step whose stamp matches is skipped, so a second
# run takes seconds. Delete .venv (or .venv-extrap) to start over.
#
# Environment:
#   PYTHON=/path/to/python3   use this interpreter (3.11 or newer) instead of searching PATH
#   APMT_SKIP_EXTRAP=1        do not install Extra-P (the tests that need it are skipped)
#   CI=true                   no prompts, no progress bars
set -euo pipefail

MIN_PYTHON="3.11"
EXTRAP_REQUIREMENT="extrap>=4.2,<5"  # its API (text reader, ModelGenerator) as used by apmt
# Debian packages the project needs, checked with dpkg and installed with apt-get when running
# as root (others are told what to install):
#   openmpi-bin libopenmpi-dev  mpirun and mpicc (the PMPI tracing library is built with it)
#   gfortran                    the Fortran MPI bindings' test programs
#   valgrind                    cachegrind, the simulated counters where no PMU answers
#   linux-perf                  perf record/stat: sampling and hardware counters
#   lammps                      the real MPI application of the default study
DEBIAN_PACKAGES=(openmpi-bin libopenmpi-dev gfortran valgrind linux-perf lammps)

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd -P)"
VENV=".venv"
EXTRAP_VENV=".venv-extrap"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if [[ "${CI:-}" == "true" ]]; then
    export PIP_PROGRESS_BAR=off DEBIAN_FRONTEND=noninteractive
fi

say() { printf '[install] %s\n' "$*"; }
fail() { printf '[install] ERROR: %s\n' "$*" >&2; exit 1; }
hash_of() { printf '%s' "$*" | sha256sum | cut -d' ' -f1; }
# stamp_matches VENV STEP KEY / write_stamp VENV STEP KEY: has STEP been done for KEY in VENV?
stamp_matches() { [[ -f "$1/.install-stamps/$2" && "$(cat "$1/.install-stamps/$2")" == "$3" ]]; }
write_stamp() { mkdir -p "$1/.install-stamps" && printf '%s' "$3" > "$1/.install-stamps/$2"; }

# A Python interpreter's version (X.Y.Z) if it runs and is at least MIN_PYTHON, else nothing.
good_version() {
    local version
    version="$("$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)" \
        || return 0
    [[ "$version" =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || return 0
    local major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
    if ((major > ${MIN_PYTHON%.*} || (major == ${MIN_PYTHON%.*} && minor >= ${MIN_PYTHON#*.})))
    then
        printf '%s' "$version"
    fi
}

find_python() {
    local candidate version
    if [[ -n "${PYTHON:-}" ]]; then
        version="$(good_version "$PYTHON")"
        [[ -n "$version" ]] || fail "PYTHON=$PYTHON is not a Python $MIN_PYTHON or newer"
        printf '%s' "$PYTHON"
        return
    fi
    for candidate in python3 python3.14 python3.13 python3.12 python3.11; do
        command -v "$candidate" >/dev/null 2>&1 || continue
        if [[ -n "$(good_version "$candidate")" ]]; then
            command -v "$candidate"
            return
        fi
    done
    fail "no Python $MIN_PYTHON or newer found on PATH (tried python3, python3.14 ... python3.11).
  Install one (Debian/Ubuntu: apt-get install python3 python3-venv; or pyenv, conda, uv)
  and run again, or point PYTHON=/path/to/python3 at it."
}

# --- Debian packages ---------------------------------------------------------------------------
install_debian_packages() {
    local missing=() package
    for package in "${DEBIAN_PACKAGES[@]}"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    if ((${#missing[@]} == 0)); then
        return
    fi
    if [[ "$(id -u)" -eq 0 ]]; then
        say "installing Debian packages: ${missing[*]}"
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
        fail "missing Debian packages: ${missing[*]}
  Install them (as root: apt-get install ${missing[*]}) and run this script again."
    fi
}

# A virtualenv is usable if its Python runs and is new enough; otherwise (re)create it.
ensure_venv() {
    local venv="$1" python="$2"
    if [[ -x "$venv/bin/python" && -n "$(good_version "$venv/bin/python")" ]]; then
        say "$venv: exists ($("$venv/bin/python" --version 2>&1))"
    else
        "$python" -c "import ensurepip, venv" 2>/dev/null || fail "$python cannot create
  virtualenvs (Debian/Ubuntu: apt-get install python3-venv, or python3.X-venv for your version)."
        say "$venv: creating with $python ($("$python" --version 2>&1))"
        "$python" -m venv --clear "$venv"
        rm -rf "${venv:?}/.install-stamps"
    fi
    if ! stamp_matches "$venv" pip done; then
        say "$venv: upgrading pip"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        write_stamp "$venv" pip done
    fi
}

install_apmt() {
    local key location
    key="$(sha256sum pyproject.toml | cut -d' ' -f1)"
    location="$("$VENV/bin/python" -c "import pathlib, apmt
print(pathlib.Path(apmt.__file__).resolve().parent)" 2>/dev/null || true)"
    if stamp_matches "$VENV" apmt "$key" && [[ "$location" == "$ROOT/apmt" ]]; then
        say "$VENV: apmt and its extras already installed for this pyproject.toml"
        return
    fi
    say "$VENV: installing apmt (editable) with extras workflow,test"
    "$VENV/bin/python" -m pip install --quiet --editable ".[workflow,test]"
    write_stamp "$VENV" apmt "$key"
}

install_extrap() {
    local key link="$VENV/bin/extrap-python" wrapper
    if [[ "${APMT_SKIP_EXTRAP:-}" == "1" ]]; then
        say "$EXTRAP_VENV: skipped (APMT_SKIP_EXTRAP=1); the Extra-P comparisons will be skipped"
        return
    fi
    ensure_venv "$EXTRAP_VENV" "$PYTHON_FOUND"
    key="$(hash_of "$EXTRAP_REQUIREMENT" "$("$EXTRAP_VENV/bin/python" --version 2>&1)")"
    if stamp_matches "$EXTRAP_VENV" extrap "$key" \
        && "$EXTRAP_VENV/bin/python" -c "import extrap" 2>/dev/null; then
        say "$EXTRAP_VENV: Extra-P already installed"
    else
        say "$EXTRAP_VENV: installing $EXTRAP_REQUIREMENT (a few minutes: it pulls numpy<2 and Qt)"
        "$EXTRAP_VENV/bin/python" -m pip install --quiet "$EXTRAP_REQUIREMENT" || fail \
            "installing Extra-P failed. It needs numpy<2, which has wheels up to Python 3.12:
  run with PYTHON=/path/to/python3.12 (or 3.11), or with APMT_SKIP_EXTRAP=1 to do without it."
        write_stamp "$EXTRAP_VENV" extrap "$key"
    fi
    # A symlink would not do: Python finds its environment next to the path it was started
    # by, so a link in .venv/bin would start .venv's environment. A wrapper starts the real one.
    wrapper='#!/bin/sh
# Extra-P'"'"'s Python, in its own virtualenv (written by scripts/install.sh)
exec "$(dirname "$0")/../../.venv-extrap/bin/python" "$@"'
    if [[ -L "$link" || ! -f "$link" || "$(cat "$link")" != "$wrapper" ]]; then
        say "$link: pointing it at $EXTRAP_VENV/bin/python"
        rm -f "$link"
        printf '%s\n' "$wrapper" > "$link"
        chmod +x "$link"
    fi
}

# --- PMPI tracing library ----------------------------------------------------------------------
# apmt's MPI tracer (C sources in apmt/pmpi/) is compiled with mpicc into .venv/lib/apmt/, where
# apmt.collect.pmpi.library_path() finds it. build() keeps a hash stamp beside the library and
# compiles only when the sources changed, so a rerun of this script skips it. (mpi4py, which
# the library's tests use, comes with the `test` extra.)
build_pmpi_library() {
    local library
    library="$("$VENV/bin/python" -c "import sys
from apmt.collect.pmpi import library_path
from apmt.errors import ApmtError
try:
    print(library_path())
except ApmtError as error:
    sys.exit(str(error))")" || fail "the PMPI tracing library could not be built (see above)"
    say "$VENV: PMPI tracing library ready: ${library#"$ROOT/"}"
}

main() {
    local started=$SECONDS
    say "repository: $ROOT"
    install_debian_packages
    PYTHON_FOUND="$(find_python)"
    ensure_venv "$VENV" "$PYTHON_FOUND"
    install_apmt
    build_pmpi_library
    install_extrap
    say "done in $((SECONDS - started)) s. Next: .venv/bin/snakemake --cores 2, or .venv/bin/python -m pytest"
}

main "$@"
