# The paper artifact: the manifest of every table, model, decision, diagnosis and figure of
# all studies, with checksums. Rebuilt from the stored raw runs alone
#   snakemake --cores 2 --forceall --config stored_runs_only=True -- artifact
# it must come out the same: `diff` the manifests of two builds.


rule artifact:
    input:
        final_outputs(),
    output:
        manifest=str(layout.RESULTS / layout.ARTIFACT),
    params:
        studies=artifact_studies(),
    log:
        "logs/artifact.log",
    conda:
        "../envs/apmt.yaml"
    shell:
        "python -m apmt.artifact {params.studies} -o {output.manifest} > {log} 2>&1"
