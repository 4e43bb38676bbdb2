# Stage 1, for studies that run their application: one job per P runs the study's runs at
# that P (every repetition; raw runs kept in results/raw/<study>/, never overwritten; a rerun
# redoes only runs without their `done` marker), so that each job asks its executor for P
# MPI tasks. Then the finished runs of a round's P become the per-rank measurements and the
# MPI traces, as tidy tables with their provenance (round 0: the P of the study file;
# refinement rounds add P, see refine.smk).


rule profile_p:
    input:
        study=profile_study_file,
        setup=profile_setup_files,
    output:
        runs=run_summary(),
    wildcard_constraints:
        study=study_pattern(PROFILED),
    # the runs' timings are the data: locally nothing else runs beside them
    threads: workflow.cores
    resources:
        # under Slurm, a P no partition can hold is refused here, before submission
        tasks=profile_tasks,
        mpi=mpi_resource,
        # under Slurm: one CPU per rank (threads above only keeps a local run to itself)
        cpus_per_task=1,
        # the node to the runs (their timings are the data); --overcommit where allowed
        slurm_extra=profile_slurm_extra,
    params:
        stored=stored_option,
        results=results_folder,
    log:
        "logs/{study}/profile/p{p}.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt profile {input.study:q} --p {wildcards.p} --no-extract --summary {output.runs}"
        " --results {params.results} {params.stored} > {log} 2>&1"


rule profile_frequency:
    """Refinement's rerun of one P at a lower CPU frequency (a lower_frequency decision), in
    run folders of its own; the same MPI job as profile_p, plus sbatch --cpu-freq."""
    input:
        study=profile_study_file,
        setup=profile_setup_files,
    output:
        runs=run_summary(mhz="{mhz}"),
    wildcard_constraints:
        study=study_pattern(PROFILED),
        mhz=r"[1-9][0-9]*",
    threads: workflow.cores
    resources:
        tasks=frequency_tasks,
        mpi=mpi_resource,
        cpus_per_task=1,
        # the decision's cpu_freq_option; locally apmt pins the frequency itself
        slurm_extra=frequency_slurm_extra,
    params:
        ghz=lambda wildcards: frequency_ghz_of(wildcards.mhz),
        results=results_folder,
    log:
        "logs/{study}/profile/p{p}_f{mhz}.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt profile {input.study:q} --p {wildcards.p} --frequency {params.ghz}"
        " --summary {output.runs} --results {params.results} > {log} 2>&1"


rule extract_frequency:
    """The round's frequency table: the rerun's runs and the base runs of the same P, each
    with its measured clock (frequency_ghz)."""
    input:
        unpack(frequency_runs),
        study=profile_study_file,
    output:
        table=round_file(FREQUENCY),
        provenance=round_file(FREQUENCY + layout.SIDECAR_SUFFIX),
    wildcard_constraints:
        study=study_pattern(PROFILED),
    params:
        p=lambda wildcards: asked_frequency(wildcards)["p"],
        ghz=lambda wildcards: frequency_ghz_of(asked_frequency(wildcards)["mhz"]),
        results=results_folder,
    log:
        "logs/{study}/extract/r{round}_frequency.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt extract {input.study:q} --p {params.p} --frequency {params.ghz}"
        " --results {params.results} --frequency-table {output.table} > {log} 2>&1"


rule extract_round:
    input:
        study=profile_study_file,
        runs=round_runs,
    output:
        measurements=round_file(MEASUREMENTS),
        comm=round_file(COMM),
        provenance=round_file(MEASUREMENTS_PROVENANCE),
    wildcard_constraints:
        study=study_pattern(PROFILED),
    params:
        p=round_p_option,
        results=results_folder,
        folder=lambda wildcards: layout.round_dir(wildcards.study, wildcards.round),
    log:
        "logs/{study}/extract/r{round}.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt extract {input.study:q} --p {params.p} --results {params.results}"
        " -o {params.folder:q} > {log} 2>&1"
