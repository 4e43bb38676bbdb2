# Stage 2, for profiled studies: validate each round's model on its held-out runs and decide
# (a checkpoint: what runs next depends on it) whether to refine, as paper 000 does. A
# communication error above the tolerance adds P where the model is least certain, one to
# refit and one beyond to validate, and the next round extracts and validates again; a
# computation error asks for a rerun of one P at a lower CPU frequency (profile_frequency),
# which the next round solves per kernel for CPI_core and BF_mem (Eq. 5) and takes into the
# model only if the frequency really changed; a machine that cannot change its frequency
# records that instead. Rounds and new P are bounded by the refine budget.
# The last round's tables become the study's.


checkpoint refine_round:
    input:
        measurements=round_file(MEASUREMENTS),
        comm=round_comm,
        previous=previous_decisions,
        frequency=round_frequency_table,
        frequency_record=round_frequency_record,
        machine=machine_file,
        # the P its application accepts (accepts_p): refinement proposes only those
        study=profile_study_file,
    output:
        validation=round_file(VALIDATION),
        evaluation=round_file(EVALUATION),
        decision=round_file(DECISION),
        # per kernel CPI_core and BF_mem (Eq. 5) after a lower-frequency rerun; else a header
        frequency_solution=round_file(FREQUENCY_SOLUTION),
    wildcard_constraints:
        study=study_pattern(PROFILED),
    params:
        comm=comm_option,
        holdout=holdout,
        params=param_options,
        kernels=kernel_options,
        machine=machine_option,
        tolerance=config["tolerance"],
        threshold=config["threshold"],
        refine=refine_options,
        frequency=frequency_table_option,
    log:
        "logs/{study}/refine/r{round}.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt refine round {input.measurements} {params.comm} --holdout {params.holdout:q}"
        " {params.params} {params.kernels} {params.machine} --tolerance {params.tolerance}"
        " --threshold {params.threshold} --study {input.study} {params.refine}"
        " {params.frequency} --frequency-solution {output.frequency_solution}"
        " --validation {output.validation} --evaluation {output.evaluation}"
        " -o {output.decision} > {log} 2>&1"


rule study_tables:
    input:
        measurements=final_round_table(MEASUREMENTS),
        comm=final_round_table(COMM),
        provenance=final_round_table(MEASUREMENTS_PROVENANCE),
        decisions=decisions,
    output:
        measurements=study_file(MEASUREMENTS),
        comm=study_file(COMM),
        provenance=study_file(MEASUREMENTS_PROVENANCE),
        refinement=report(
            study_file(REFINEMENT),
            caption="../report/refinement.rst",
            category="Refinement",
            labels={"study": "{study}", "table": "refinement"},
        ),
    wildcard_constraints:
        study=study_pattern(PROFILED),
    log:
        "logs/{study}/tables.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt refine finish {input.decisions} --tables {input.measurements} {input.comm}"
        " {input.provenance} --out-tables {output.measurements} {output.comm}"
        " {output.provenance} -o {output.refinement} > {log} 2>&1"
