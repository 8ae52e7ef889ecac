"""The report folder: what may be written into it, and the staged report moved into place.

A report is written into a hidden staging folder inside ``out`` that this run creates
(:func:`make_staging`) and moved into place at the end, ``report.html`` last.

Nothing found in ``out`` is trusted to say what may be deleted or replaced. :data:`MANIFEST`
lists the files a report wrote *with the identity each got on disk* (device, inode, size,
modification and status-change times in nanoseconds), recorded after the move. A later report
treats a listed file as its own only while the file on disk still has that identity: a
manifest that came with a downloaded folder, a copied report, or a file edited or replaced
since, does not match, and is then one of the folder's "other files" (refused without
``--force``, never removed). The status-change time cannot be set by a user program, and a
copied or extracted file gets a new inode, so a manifest cannot be forged into deleting
someone's files.

Staging folders left by a run that was killed (SIGKILL, a power cut) carry a marker with
the folder's own inode and the process id; the next run removes such a folder when its
process is gone, and otherwise leaves it alone without counting it as another file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from evalstats.errors import OutputError

__all__ = [
    "MANIFEST",
    "STAGING_PREFIX",
    "check_output",
    "make_staging",
    "move_into_place",
    "remove_leftovers",
]

#: File in a report folder listing the files the report wrote, each with its identity on disk.
MANIFEST = ".evalstats-report.json"

#: Name prefix of the staging folder a report is written into before it is moved into place.
STAGING_PREFIX = ".evalstats-partial-"

#: Marker inside a staging folder: who made it (process, host) and the folder's own identity.
_MARKER = ".evalstats-staging"

#: Names a report writes at the top of its folder, and its subfolders.
_TOP_FILES = ("report.html", "report.md", "results.json", MANIFEST)
_SUBFOLDERS = ("figures", "tables")


# --- what a file is --------------------------------------------------------------------------


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _proven_files(out: Path) -> set[str]:
    """Relative paths of the files of an earlier report in ``out`` that are provably its own.

    A file listed in the manifest counts only when it is a regular file (not a link) inside
    ``out`` whose identity on disk is the one recorded when the report moved it into place.
    """
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    listed = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(listed, list):
        return set()
    proven: set[str] = set()
    for entry in listed:
        if not isinstance(entry, dict):
            continue  # an older manifest (names only) proves nothing
        rel, ident = entry.get("path"), entry.get("id")
        if not isinstance(rel, str) or not _safe_relative(rel):
            continue
        try:
            st = os.lstat(out / rel)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and ident == _identity(st):
            proven.add(rel)
    return proven


def _safe_relative(rel: str) -> bool:
    """A path of the report's own layout: ``name`` or ``figures/name`` or ``tables/name``."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        return False
    return len(parts) == 1 or (len(parts) == 2 and parts[0] in _SUBFOLDERS)


# --- staging folders -------------------------------------------------------------------------


def make_staging(out: Path) -> Path:
    """Create this run's staging folder inside ``out`` and mark it as this process's."""
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    st = os.lstat(staging)
    marker = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "dev": st.st_dev,
        "ino": st.st_ino,
    }
    try:
        (staging / _MARKER).write_text(json.dumps(marker), encoding="utf-8")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process (or a pid we cannot ask about): assume alive
    except OSError:
        return True
    return True


def _has_entries(path: Path) -> bool:
    with os.scandir(path) as it:
        return any(it)


def _leftover_state(path: Path) -> str:
    """``'dead'`` (a killed run's, removable), ``'live'`` (a running one's) or ``'foreign'``.

    An empty staging folder is ``'dead'`` (removing it with ``rmdir`` can lose nothing).
    """
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            return "foreign"
        if not _has_entries(path):
            return "dead"
        marker = json.loads((path / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return "foreign"
    if not isinstance(marker, dict) or [marker.get("dev"), marker.get("ino")] != [
        st.st_dev,
        st.st_ino,
    ]:
        return "foreign"  # copied or extracted: not the folder evalstats created
    pid = marker.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return "foreign"
    if marker.get("host") != socket.gethostname() or pid == os.getpid():
        return "live"  # another machine's run (a shared disk), or this very process
    return "live" if _process_alive(pid) else "dead"


def _leftovers(out: Path) -> dict[Path, str]:
    try:
        names = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
    except OSError:
        return {}
    return {p: _leftover_state(p) for p in names}


def remove_leftovers(out: Path) -> list[Path]:
    """Remove the staging folders that runs killed earlier left in ``out``; return them.

    Only folders proven to be a staging folder evalstats created here (its marker names the
    folder's own inode) whose process is gone are removed; others are left alone.
    """
    removed = []
    for path, state in _leftovers(out).items():
        if state != "dead":
            continue
        with contextlib.suppress(OSError):
            if _has_entries(path):
                shutil.rmtree(path)
            else:
                path.rmdir()
            removed.append(path)
    return removed


# --- the checks before any work --------------------------------------------------------------


def _others(out: Path) -> tuple[list[str], list[str]]:
    """What ``out`` holds besides provable evalstats files: (other entries, report-named ones).

    The second list holds the other files a new report could overwrite (its page names, or a
    file in ``figures/`` or ``tables/``).
    """
    proven = _proven_files(out)
    leftovers = _leftovers(out)
    others: list[str] = []
    clashing: list[str] = []
    for entry in sorted(out.iterdir()):
        name = entry.name
        if entry in leftovers and leftovers[entry] != "foreign":
            continue
        if name == MANIFEST and proven:
            continue
        if name in _SUBFOLDERS and entry.is_dir() and not entry.is_symlink():
            rest = [f"{name}/{n}" for n in sorted(os.listdir(entry))]
            rest = [r for r in rest if r not in proven]
            others += rest
            clashing += rest
            continue
        if name in proven:
            continue
        others.append(name)
        if name in _TOP_FILES or name in _SUBFOLDERS:
            clashing.append(name)
    return others, clashing


def _shown(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names[:3]) + (
        f" and {len(names) - 3} more" if len(names) > 3 else ""
    )


def check_output(out: Path, *, force: bool = False) -> None:
    """Check, before any work, that a report can be written into the folder ``out``.

    ``out`` may be missing (it is created), empty, or hold an earlier evalstats report that
    this machine wrote (its files are replaced). Files an earlier report cannot be proven to
    have written are "other files": a folder with such files and no provable report is refused
    unless ``force``; a provable report next to other files is replaced, the other files left
    alone, unless one of them has a name the report writes (``report.html``, a file in
    ``figures/``...), which is refused unless ``force``. Staging folders of a killed run are
    neither refused nor counted.

    Raises
    ------
    OutputError
        ``out`` is a file, a folder with other files (without ``force``), or not writable.
    """
    if out.exists() and not out.is_dir():
        raise OutputError(f"`out` {str(out)!r} is a file; name a folder for the report.")
    if out.is_dir() and not force:
        try:
            others, clashing = _others(out)
            has_report = bool(_proven_files(out))
        except OSError as exc:
            raise OutputError(f"cannot read the folder {str(out)!r}: {exc.strerror}.") from None
        if others and not has_report:
            raise OutputError(
                f"`out` {str(out)!r} holds other files ({_shown(others)}) and no evalstats "
                "report written here; name a new or empty folder, or pass --force to write the "
                "report among them (files of the same name are replaced, nothing else is "
                "removed)."
            )
        if clashing:
            raise OutputError(
                f"`out` {str(out)!r} holds files named like the report's that no evalstats "
                f"report here wrote ({_shown(clashing)}); name a new folder, or pass --force to "
                "replace them (nothing else is removed)."
            )
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():  # `file/report`: a file where a folder is needed
        raise OutputError(
            f"cannot write the report into {str(out)!r}: {str(existing)!r} is a file, where a "
            "folder is needed."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write the report into {str(out)!r}: {str(existing)!r} is read-only."
        )


# --- the move --------------------------------------------------------------------------------


def move_into_place(staging: Path, out: Path) -> None:
    """Replace the earlier report in ``out`` by the staged one; ``report.html`` comes last.

    Files of the earlier report are removed only when provably its own (see the module
    docstring) and the new report does not write them again; the manifest of the new report is
    written last, with the identity each file got in ``out``.
    """
    staged = sorted(
        p.relative_to(staging).as_posix()
        for p in staging.rglob("*")
        if p.is_file() and p.name != _MARKER and p.name != MANIFEST
    )
    proven = _proven_files(out)
    # the old page goes first, so no report.html ever points at a mix of old and new files
    if "report.html" in proven:
        (out / "report.html").unlink(missing_ok=True)
    for rel in sorted(proven - set(staged) - {MANIFEST}):
        (out / rel).unlink(missing_ok=True)
    for sub in _SUBFOLDERS:
        with contextlib.suppress(OSError):
            (out / sub).rmdir()  # only when the old report left it empty
    for rel in sorted(staged, key=lambda r: r == "report.html"):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, target)
    entries = [{"path": rel, "id": _identity(os.lstat(out / rel))} for rel in staged]
    tmp = staging / MANIFEST
    tmp.write_text(json.dumps({"version": 2, "files": entries}, indent=1) + "\n", "utf-8")
    os.replace(tmp, out / MANIFEST)
    shutil.rmtree(staging, ignore_errors=True)
