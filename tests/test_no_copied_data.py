"""The project carries no copy of another repository's file: real data stay in ../shared/data.

Every file of the project tree (git's tracked and untracked-but-not-ignored files, or a walk
without ``.git``/``.venv`` when git is not there), and every member of the project's own
archives, is hashed and compared with every file of ../shared/data, including the members of its
``.tgz``/``.zip``/``.eval`` archives. A gzip-compressed project file is compared by its content
too (a ``.csv.gz`` of a shared CSV is still a copy). Empty files carry nothing and are ignored.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PROJECT

ZIP_SUFFIXES = (".zip", ".eval")
TAR_SUFFIXES = (".tgz", ".tar.gz", ".tar")
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "site"}


def _members(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of the file and, recursively, of the members of an archive."""
    yield name, data
    lower = name.lower()
    try:
        if lower.endswith(ZIP_SUFFIXES):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                for info in z.infolist():
                    if not info.is_dir():
                        yield from _members(f"{name}!{info.filename}", z.read(info))
        elif lower.endswith(TAR_SUFFIXES):
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for m in tar.getmembers():
                    f = tar.extractfile(m) if m.isfile() else None
                    if f is not None:
                        yield from _members(f"{name}!{m.name}", f.read())
        elif lower.endswith(".gz"):
            yield f"{name} (gunzipped)", gzip.decompress(data)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError):
        pass  # not a readable archive: the file itself was compared


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _project_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=PROJECT,
            capture_output=True,
            check=True,
        ).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for dirpath, dirnames, filenames in os.walk(PROJECT):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            rel = Path(dirpath).relative_to(PROJECT)
            names += [(rel / f).as_posix() for f in filenames]
    return sorted(n for n in names if (PROJECT / n).is_file())  # deleted, not yet committed


@pytest.fixture(scope="module")
def shared_digests(shared_data) -> dict[str, str]:
    """sha256 -> one shared file (or archive member) with that content."""
    digests: dict[str, str] = {}
    for path in sorted(shared_data.rglob("*")):
        if path.is_file():
            rel = path.relative_to(shared_data).as_posix()
            for name, data in _members(rel, path.read_bytes()):
                if data:
                    digests.setdefault(_digest(data), name)
    return digests


def test_the_shared_data_are_seen_with_their_archive_members(shared_digests):
    """The comparison below is only as good as this list: archive members are in it."""
    names = list(shared_digests.values())
    assert any(n.startswith("llm-stability/strict_json_schema_runs.tgz!") for n in names)
    assert any(n.startswith("llm-stability/fine_tuned_data.tgz!") for n in names)
    assert any(".eval!" in n for n in names)


def test_no_project_file_is_a_copy_of_a_shared_file(shared_digests):
    copies = []
    for rel in _project_files():
        for name, data in _members(rel, (PROJECT / rel).read_bytes()):
            hit = shared_digests.get(_digest(data)) if data else None
            if hit is not None:
                copies.append(f"{name} = ../shared/data/{hit}")
    assert not copies, (
        "real public data is read in place from ../shared/data, never copied into the project "
        "(see tests/conftest.py); copies found:\n" + "\n".join(copies)
    )


def test_the_check_finds_a_copy(shared_digests, shared_data, tmp_path):
    """A copy, a gzip of a copy and a copy inside a zip are all found."""
    src = shared_data / "llm-stability" / "strict_json_schema_stability_eval.csv"
    data = src.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("inner/x.csv", data)
    for name, blob in [
        ("a.csv", data),
        ("a.csv.gz", gzip.compress(data)),
        ("a.zip", buf.getvalue()),
    ]:
        hits = [shared_digests.get(_digest(d)) for _, d in _members(name, blob)]
        assert "llm-stability/strict_json_schema_stability_eval.csv" in hits, name
