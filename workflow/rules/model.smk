# Stage 2: classify the kernels and fit every series the application model needs.


rule fit_model:
    input:
        measurements=study_file(MEASUREMENTS),
        comm=comm_table,
        provenance=study_file(MEASUREMENTS_PROVENANCE),
        frequency_solution=accepted_frequency_solution,
        machine=machine_file,
    output:
        model=report(
            study_file(MODEL),
            caption="../report/model.rst",
            category="Models",
            labels={"study": "{study}", "table": "model"},
        ),
    params:
        comm=comm_option,
        frequency_solution=frequency_solution_option,
        params=param_options,
        kernels=kernel_options,
        machine=machine_option,
        threshold=config["threshold"],
    log:
        "logs/{study}/fit.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "apmt fit {input.measurements} {params.comm} {params.frequency_solution}"
        " {params.params} {params.kernels} {params.machine}"
        " --threshold {params.threshold} -o {output.model} > {log} 2>&1"
