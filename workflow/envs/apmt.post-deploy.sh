#!/usr/bin/env bash
# Runs once in the new conda environment of workflow/envs/apmt.yaml: installs apmt itself
# (without dependencies: the environment has them) from the checkout Snakemake runs in.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation --editable .
