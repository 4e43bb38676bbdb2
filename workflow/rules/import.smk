# Stage 1: the study's profiles, in the format they come in, become one tidy measurements
# table (columns: apmt/tables.py); `apmt import` keeps its provenance next to it.


rule import_profiles:
    input:
        profiles=import_paths,
    output:
        measurements=study_file(MEASUREMENTS),
        provenance=study_file(MEASUREMENTS_PROVENANCE),
    wildcard_constraints:
        study=study_pattern(IMPORTED),
    params:
        format=import_format,
        options=import_options,
    log:
        "logs/{study}/import.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt import {params.format} {params.options} {input.profiles:q} -o {output.measurements} "
        "> {log} 2>&1"
