# Stage 1, for studies that run their application: `apmt profile` runs it at every P and
# repetition of its study file (raw runs kept in results/raw/<study>/, never overwritten; a
# rerun redoes only runs without their `done` marker), then extracts the per-rank
# measurements and the MPI traces into tidy tables with their provenance.


rule profile_study:
    input:
        study=profile_study_file,
        setup=profile_setup_files,
    output:
        measurements="results/{study}/measurements.csv",
        comm="results/{study}/comm.csv",
        provenance="results/{study}/measurements.csv.provenance.json",
    wildcard_constraints:
        study=study_pattern(PROFILED),
    # the runs' timings are the data: nothing else runs beside them
    threads: workflow.cores
    log:
        "logs/{study}/profile.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt profile {input.study:q} --results results > {log} 2>&1"
