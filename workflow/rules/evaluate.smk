# Stage 3: hold out runs (the largest P by default), fit on the rest with apmt and with each
# baseline, record every method's error at the held-out points, and validate the assembled
# model: does its application time stay within the tolerance, else which part to refine.


rule evaluate_model:
    input:
        measurements=study_file(MEASUREMENTS),
        comm=comm_table,
        # where the table came from: an imported one cannot be refined with new runs
        provenance=study_file(MEASUREMENTS_PROVENANCE),
        machine=machine_file,
    output:
        evaluation=report(
            study_file(EVALUATION),
            caption="../report/evaluation.rst",
            category="Accuracy",
            labels={"study": "{study}", "table": "evaluation"},
        ),
        validation=study_file(VALIDATION),
    params:
        comm=comm_option,
        holdout=holdout,
        params=param_options,
        kernels=kernel_options,
        machine=machine_option,
        baselines=baselines,
        metrics=metrics_option,
        tolerance=config["tolerance"],
        threshold=config["threshold"],
    log:
        "logs/{study}/evaluate.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt evaluate {input.measurements} {params.comm} --holdout {params.holdout:q}"
        " {params.params} {params.metrics}"
        " {params.kernels} {params.machine} --baselines {params.baselines:q}"
        " --tolerance {params.tolerance} --threshold {params.threshold}"
        " --validation {output.validation} -o {output.evaluation} > {log} 2>&1"
