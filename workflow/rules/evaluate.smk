# Stage 3: hold out runs (the largest P by default), fit on the rest with apmt and with each
# baseline, and record every method's error at the held-out points.


rule evaluate_model:
    input:
        measurements="results/{study}/measurements.csv",
    output:
        evaluation=report(
            "results/{study}/evaluation.csv",
            caption="../report/evaluation.rst",
            category="Accuracy",
            labels={"study": "{study}", "table": "evaluation"},
        ),
    params:
        holdout=holdout,
        params=param_options,
        baselines=baselines,
    log:
        "logs/{study}/evaluate.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt evaluate {input.measurements} --holdout {params.holdout:q} {params.params}"
        " --baselines {params.baselines:q} -o {output.evaluation} > {log} 2>&1"
