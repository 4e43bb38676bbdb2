# Stage 6: the diagnosis of a study: validity of the measurements, scaling (paper 001), the
# PerfExpert assessment of the key kernels with remedies (paper 002); as text and as HTML
# for the report.


rule diagnose:
    input:
        measurements="results/{study}/measurements.csv",
        model="results/{study}/model.json",
        comm=comm_table,
    output:
        text="results/{study}/diagnosis.txt",
        html=report(
            "results/{study}/diagnosis.html",
            caption="../report/diagnosis.rst",
            category="Diagnosis",
            labels={"study": "{study}", "kind": "diagnosis"},
        ),
    log:
        "logs/{study}/diagnose.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt diagnose results/{wildcards.study} -o {output.text} --html {output.html}"
        " > {log} 2>&1"
