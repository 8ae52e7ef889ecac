"""Real public data for the tutorials, read in place from ``../shared/data``.

The State of What Art paraphrase accuracies, the llm-stability runs and the authors' metric
tables are other repositories' files: the project never copies them. The site is built from the
project root, and the pages read them from ``../shared/data`` beside it (or from the folder named
by ``EVALSTATS_SHARED_DATA``). Archives are extracted once per build into a temporary folder,
which is removed when the build ends. Imported by ``page_setup.py``; not a page.
"""

import atexit
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

SHARED_DATA = Path(os.environ.get("EVALSTATS_SHARED_DATA", "../shared/data"))

_extracted: dict[str, Path] = {}


def shared(*parts: str) -> Path:
    """``../shared/data/<parts>``; a clear error when it is not there."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: this page reads real public data in place from ../shared/data "
            "beside the project (never copied into it); build the site from the project root "
            "with the shared data folder beside it, or set EVALSTATS_SHARED_DATA."
        )
    return path


def extracted(archive: str) -> Path:
    """The folder a ``.tgz`` of the shared data is extracted into, once per build."""
    if archive not in _extracted:
        dest = Path(tempfile.mkdtemp(prefix="evalstats-docs-"))
        atexit.register(shutil.rmtree, dest, ignore_errors=True)
        with tarfile.open(shared(archive)) as tar:
            tar.extractall(dest, filter="data")  # no absolute paths, no links leaving dest
        _extracted[archive] = dest
    return _extracted[archive]


def llm_stability_runs() -> Path:
    """The llm-stability strict_json_schema runs (one folder per task, one CSV per run)."""
    return extracted("llm-stability/strict_json_schema_runs.tgz") / "runs"
