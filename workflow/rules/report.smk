# Stage 5: figures of a study for the report: the kernels' fits, measured vs modelled
# application time, the model's breakdown, the methods' errors and the kernel ranking.


rule figures:
    input:
        measurements=study_file(MEASUREMENTS),
        model=study_file(MODEL),
        evaluation=study_file(EVALUATION),
    output:
        fits=report(
            figure_file("fits"),
            caption="../report/fits.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "fits"},
        ),
        scaling=report(
            figure_file("scaling"),
            caption="../report/scaling.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "scaling"},
        ),
        breakdown=report(
            figure_file("breakdown"),
            caption="../report/breakdown.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "breakdown"},
        ),
        errors=report(
            figure_file("errors"),
            caption="../report/errors.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "errors"},
        ),
        ranking=report(
            figure_file("ranking"),
            caption="../report/ranking.rst",
            category="Figures",
            labels={"study": "{study}", "figure": "ranking"},
        ),
    params:
        folder=lambda wildcards: layout.study_dir(wildcards.study),
        figures=lambda wildcards, output: Path(output.fits).parent,
    log:
        "logs/{study}/figures.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "python -m apmt.report {params.folder:q} -o {params.figures:q} > {log} 2>&1"
