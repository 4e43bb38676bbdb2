"""Data files shipped inside the package (machine files, event maps), found by name."""

from __future__ import annotations

from importlib import resources


def shipped(kind: str) -> list[str]:
    """Names of the YAML files under ``apmt/data/<kind>/`` (e.g. machines, events)."""
    folder = resources.files("apmt") / "data" / kind
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))
