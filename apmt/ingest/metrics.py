"""Tools' metric names -> apmt's (``apmt/data/metric_aliases.yaml``), shared by the importers.

apmt knows a metric by its own name: ``time`` is what kernel classes, the application's time
and the diagnosis use. A tool's name for it (Score-P's and PAPI's, an Extra-P text file's
``runtime``) is read as apmt's where the alias file says the meaning is the same.
"""

from __future__ import annotations

import logging
from functools import cache
from importlib import resources

import pandas as pd
import yaml

log = logging.getLogger(__name__)


@cache
def metric_aliases() -> dict[str, str]:
    """Lower-cased tool metric name -> apmt metric name, from apmt/data/metric_aliases.yaml."""
    text = resources.files("apmt").joinpath("data/metric_aliases.yaml").read_text()
    return {str(key).lower(): str(value) for key, value in yaml.safe_load(text).items()}


def metric_name(name: str) -> str:
    """apmt's name for a Score-P/PAPI metric: its alias, or its own name lower-cased."""
    return metric_aliases().get(name.lower(), name.lower())


def with_aliases(table: pd.DataFrame, source: str) -> pd.DataFrame:
    """``table`` with each metric that has an alias under that alias, where no other metric of
    the table takes the same name (a file with both ``time`` and ``runtime`` keeps both as
    they are: which one is apmt's time is the user's to say); others keep their names as
    written. Each renaming is said once, naming ``source``."""
    names = table["metric"].drop_duplicates().tolist()
    targets = {name: metric_aliases().get(str(name).lower()) for name in names}
    taken = pd.Series([target or name for name, target in targets.items()]).value_counts()
    renamed = {name: target for name, target in targets.items()
               if target is not None and target != name and taken[target] == 1}
    for name, target in renamed.items():
        log.warning("%s: metric %r read as apmt's %r", source, name, target)
    return table.assign(metric=table["metric"].replace(renamed)) if renamed else table
