"""The report folder: what may be written into it, and the staged report moved into place.

A report is written into a hidden staging folder inside ``out`` and moved into place at the end,
``report.html`` last; :data:`MANIFEST` lists the files a report wrote so the next report into
the same folder replaces exactly those.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from evalstats.errors import OutputError

__all__ = ["MANIFEST", "check_output", "move_into_place"]

#: File in a report folder listing the files the report wrote (so the next report into the same
#: folder replaces exactly those, and leaves anything else there alone).
MANIFEST = ".evalstats-report.json"


def check_output(out: Path, *, force: bool = False) -> None:
    """Check, before any work, that a report can be written into the folder ``out``.

    ``out`` may be missing (it is created), empty, or hold an earlier evalstats report (its
    files are replaced). A folder with other files is refused unless ``force`` (the report's
    files are then written among them, replacing files of the same name only).

    Raises
    ------
    OutputError
        ``out`` is a file, a folder with other files (without ``force``), or not writable.
    """
    if out.exists() and not out.is_dir():
        raise OutputError(f"`out` {str(out)!r} is a file; name a folder for the report.")
    if out.is_dir() and not force and not (out / MANIFEST).is_file():
        try:
            others = any(out.iterdir())
        except OSError as exc:
            raise OutputError(f"cannot read the folder {str(out)!r}: {exc.strerror}.") from None
        if others:
            raise OutputError(
                f"`out` {str(out)!r} holds other files and no evalstats report; name a new or "
                "empty folder, or pass --force to write the report among them (files of the "
                "same name are replaced, nothing else is removed)."
            )
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write the report into {str(out)!r}: {str(existing)!r} is read-only."
        )


def _previous_files(out: Path) -> list[Path]:
    """Files the earlier report in ``out`` wrote (from its manifest), each inside ``out``."""
    try:
        listed = json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    root = out.resolve()
    files = []
    for name in listed if isinstance(listed, list) else []:
        if not isinstance(name, str):
            continue
        path = (out / name).resolve()
        # never follow a (tampered) manifest out of the folder
        if path.is_relative_to(root) and path != root and path.is_file():
            files.append(path)
    return files


def move_into_place(staging: Path, out: Path) -> None:
    """Replace the earlier report in ``out`` by the staged one; ``report.html`` comes last."""
    staged = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
    old = _previous_files(out)
    # the old page goes first, so no report.html ever points at a mix of old and new files
    for path in sorted(old, key=lambda p: p.name != "report.html"):
        path.unlink(missing_ok=True)
    for sub in ("figures", "tables"):
        with contextlib.suppress(OSError):
            (out / sub).rmdir()  # only when the old report left it empty
    for rel in sorted(staged, key=lambda p: p.as_posix() == "report.html"):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, target)
    shutil.rmtree(staging, ignore_errors=True)
