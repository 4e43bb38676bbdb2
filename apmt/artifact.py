"""The manifest of a paper artifact: every table, model, decision and figure of the studies,
each with a checksum, so that a rebuild from the stored raw profiles can be compared with the
published one line by line (`diff` of two manifests).

Only what the data decides counts: JSON files are hashed without their ``created`` time
stamps, the one thing a rebuild changes by design. Usage:
    python -m apmt.artifact results/STUDY [results/STUDY ...] -o manifest.tsv
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from apmt.errors import ApmtError
from apmt.tables import write_text_atomic

SUFFIXES = (".csv", ".json", ".png", ".txt", ".html", ".parquet")
VOLATILE_KEYS = frozenset({"created"})
SKIPPED_FOLDERS = frozenset({"raw", "runs"})   # the runs and their records are the input


def artifact_files(study_dir: Path) -> list[Path]:
    """The study's outputs that the artifact holds, in a stable order."""
    if not study_dir.is_dir():
        raise ApmtError(f"{study_dir}: no such study folder")
    return sorted(path for path in study_dir.rglob("*")
                  if path.is_file() and path.suffix in SUFFIXES
                  and not SKIPPED_FOLDERS & set(path.relative_to(study_dir).parts))


def checksum(path: Path) -> str:
    """sha256 of the file; of JSON without its time stamps."""
    data = path.read_bytes()
    if path.suffix == ".json":
        try:
            content = _without_volatile(json.loads(data))
        except ValueError as error:
            raise ApmtError(f"{path}: not JSON ({error})") from None
        data = json.dumps(content, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def _without_volatile(value: object) -> object:
    if isinstance(value, dict):
        return {key: _without_volatile(item) for key, item in value.items()
                if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_without_volatile(item) for item in value]
    return value


def manifest(study_dirs: Sequence[Path], root: Path) -> str:
    """One line per file: its path relative to ``root``, tab, its checksum."""
    lines = ["path\tsha256"]
    for study_dir in study_dirs:
        lines += [f"{path.relative_to(root)}\t{checksum(path)}"
                  for path in artifact_files(study_dir)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apmt.artifact", description=__doc__)
    parser.add_argument("studies", nargs="+", type=Path, metavar="STUDY_DIR")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="paths in the manifest are relative to this folder")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="manifest.tsv")
    args = parser.parse_args(argv)
    try:
        text = manifest(args.studies, args.root)
    except ApmtError as error:
        print(f"apmt: error: {error}", file=sys.stderr)
        return 2
    write_text_atomic(text, args.output)
    print(f"{args.output}: {text.count(chr(10)) - 1} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
