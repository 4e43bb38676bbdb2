# Stage 5: figures of a study for the report: the kernels' fits, measured vs modelled
# application time, the model's breakdown, the methods' errors and the kernel ranking.


rule figures:
    input:
        measurements="results/{study}/measurements.csv",
        model="results/{study}/model.json",
        evaluation="results/{study}/evaluation.csv",
    output:
        fits=report(
            "results/{study}/figures/fits.png",
            caption="../report/fits.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "fits"},
        ),
        scaling=report(
            "results/{study}/figures/scaling.png",
            caption="../report/scaling.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "scaling"},
        ),
        breakdown=report(
            "results/{study}/figures/breakdown.png",
            caption="../report/breakdown.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "breakdown"},
        ),
        errors=report(
            "results/{study}/figures/errors.png",
            caption="../report/errors.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "errors"},
        ),
        ranking=report(
            "results/{study}/figures/ranking.png",
            caption="../report/ranking.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "ranking"},
        ),
    log:
        "logs/{study}/figures.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "python -m apmt.report results/{wildcards.study} -o results/{wildcards.study}/figures"
        " > {log} 2>&1"
