# Stage 4: the fitted model at the larger runs listed under the study's `predict`.


rule predict:
    input:
        model=study_file(MODEL),
    output:
        predictions=report(
            study_file(PREDICTIONS),
            caption="../report/predictions.rst",
            category="Predictions",
            labels={"study": "{study}", "table": "predictions"},
        ),
    params:
        points=prediction_points,
    log:
        "logs/{study}/predict.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt predict {input.model} {params.points} -o {output.predictions} > {log} 2>&1"
