# Stage 6: the diagnosis of a study: validity of the measurements, scaling (paper 001), the
# PerfExpert assessment of the key kernels with remedies (paper 002); as text and as HTML
# for the report.


rule diagnose:
    input:
        measurements=study_file(MEASUREMENTS),
        provenance=study_file(MEASUREMENTS_PROVENANCE),
        model=study_file(MODEL),
        comm=comm_table,
        # the P the study asked to predict, which the scaling part shows too
        predictions=predictions_table,
    output:
        text=study_file(DIAGNOSIS_TEXT),
        html=report(
            study_file(DIAGNOSIS_HTML),
            caption="../report/diagnosis.rst",
            category="Diagnosis",
            labels={"study": "{study}", "kind": "diagnosis"},
        ),
    params:
        folder=lambda wildcards: layout.study_dir(wildcards.study),
        predictions=predictions_option,
    log:
        "logs/{study}/diagnose.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt diagnose {params.folder:q} {params.predictions} -o {output.text}"
        " --html {output.html} > {log} 2>&1"
