# apmt: performance models of MPI applications from a few small profiling runs.
#
# For each study in config/config.yaml: run the application at several P (or import existing
# profiles) into tidy measurement and communication tables, fit the model, check it on
# held-out runs next to the baselines, and predict larger runs.
# Run it with `.venv/bin/snakemake --cores 2`; `--report results/report.html` then collects
# the tables. Settings: config/README.md.

from snakemake.utils import min_version

min_version("9.27")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/profile.smk"
include: "workflow/rules/import.smk"
include: "workflow/rules/refine.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/predict.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/diagnose.smk"
include: "workflow/rules/artifact.smk"


rule all:
    input:
        default_targets(),
    default_target: True
