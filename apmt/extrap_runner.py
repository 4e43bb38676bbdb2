"""Extra-P's side of apmt.extrap_peer: run under Extra-P's own interpreter (its virtualenv,
numpy<2). apmt imports it only for its exit code.

    extrap-python -E extrap_runner.py JOB.json

JOB.json names the text files to read (Extra-P's input format), the points to predict and the
output file. Each file is read with Extra-P's text reader and modelled with the modeler Extra-P
picks by default (as its command line does); the output holds, per file, each series' model
string and its predictions, or why it has none. Exit code 3: Extra-P cannot be imported.
Only the standard library, numpy and extrap: apmt is not installed in that environment.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

MISSING_EXIT_CODE = 3


def load_extrap() -> tuple:
    """Extra-P's measure, text reader and model generator (ImportError if not installed)."""
    from extrap.entities.measurement import Measure
    from extrap.fileio.file_reader.text_file_reader import TextFileReader
    from extrap.modelers.model_generator import ModelGenerator
    return Measure, TextFileReader, ModelGenerator


def describe(model: object, parameters: list, targets: np.ndarray) -> dict:
    """A model's function as text and its predictions at the targets (one column each)."""
    function = model.hypothesis.function
    with np.errstate(all="ignore"):
        predicted = np.asarray(function.evaluate(targets), dtype=float)
    predicted = np.broadcast_to(predicted, (targets.shape[1],))
    return {"model": function.to_string(*parameters), "predicted": predicted.tolist()}


def fit(experiment: object, generator: object) -> dict:
    """All series at once, as Extra-P does; one at a time only if that fails, to isolate
    errors: (callpath, metric) -> (model or None, error or None)."""
    try:
        generator.model_all()
        return {key: (model, None) for key, model in generator.models.items()}
    except Exception:
        pass
    models = {}
    for key, series in experiment.measurements.items():
        try:
            models[key] = (generator.modeler.model([series])[0], None)
        except Exception as error:
            models[key] = (None, f"Extra-P failed: {type(error).__name__}: {error}")
    return models


def model_file(task: tuple[str, list]) -> dict:
    """Read with Extra-P's text reader; ModelGenerator picks the default modeler, as the CLI
    does. Series name REGION|METRIC -> its model and predictions, or its error."""
    path, targets = task
    Measure, TextFileReader, ModelGenerator = load_extrap()
    targets = np.array(targets, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            experiment = TextFileReader().read_experiment(path)
            generator = ModelGenerator(experiment, modeler="Default", use_measure=Measure.MEAN)
            models = fit(experiment, generator)
        except Exception as error:
            return {"__error__": f"Extra-P failed: {type(error).__name__}: {error}"}
        out = {}
        for (callpath, metric), (model, error) in models.items():
            name = callpath.name + "|" + metric.name
            out[name] = ({"error": error} if model is None
                         else describe(model, experiment.parameters, targets))
        return out


def worker_count(files: int) -> int:
    """One worker process per file, at most one per CPU this process may use."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, files))


def main() -> int:
    """Model every file of the job (argv[1]) and write the results; the exit code."""
    with open(sys.argv[1]) as stream:
        job = json.load(stream)
    try:
        load_extrap()
    except ImportError as error:
        sys.stderr.write(f"cannot import Extra-P: {error}\n")
        return MISSING_EXIT_CODE
    tasks = [(path, job["targets"]) for path in job["files"]]
    workers = worker_count(len(tasks))
    if workers == 1:
        results = [model_file(task) for task in tasks]
    else:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(model_file, tasks))
    with open(job["output"], "w") as stream:
        json.dump(results, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
