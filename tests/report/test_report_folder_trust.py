"""The report folder (issue 28): nothing is deleted that this machine's report did not write.

A manifest found in ``--out`` is input: it proves nothing by itself. A file of an earlier
report is removed (or replaced without ``--force``) only while it is the very file that report
moved into place (same inode, size and times); staging folders of a killed run are removed
when their process is gone, and never make a fresh folder "hold other files".
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalstats.errors import OutputError
from evalstats.report import audit_report
from evalstats.report._staging import MANIFEST, STAGING_PREFIX, check_output, make_staging
from evalstats.simulate import observations
from tests._cli import cli as _cli
from tests._cli import one_line_error as _one_line

ROOT = Path(__file__).resolve().parents[2]
SKIP = ["nstar", "converge", "attribution", "anova", "ranks", "friedman", "compare", "noise"]


@pytest.fixture(scope="module")
def small():
    return audit_report(observations(n_models=2, n_items=10, n_variants=3, seed=0), skip=SKIP)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def _data_folder(tmp_path: Path) -> Path:
    """A downloaded data folder: a table, a file of the user, and a report manifest."""
    data = tmp_path / "data"
    data.mkdir()
    observations(n_models=2, n_items=10, n_variants=3, seed=0).write_csv(data / "d.csv")
    (data / "precious.txt").write_text("keep me")
    (data / "figures").mkdir()
    (data / "figures" / "mine.png").write_bytes(b"not a report figure")
    return data


@pytest.mark.parametrize(
    "manifest",
    [
        # the old format: names only
        {"files": ["precious.txt", "figures/mine.png", "d.csv", ".evalstats-report.json"]},
        # the new format with made-up identities
        {
            "version": 2,
            "files": [
                {"path": "precious.txt", "id": [1, 2, 7, 0, 0]},
                {"path": "figures/mine.png", "id": [0, 0, 19, 1, 1]},
            ],
        },
    ],
    ids=["names", "forged_ids"],
)
def test_a_manifest_in_a_data_folder_deletes_nothing_and_is_refused(tmp_path, manifest):
    data = _data_folder(tmp_path)
    (data / MANIFEST).write_text(json.dumps(manifest))
    before = _snapshot(data)
    line = _one_line(*_cli("report", str(data), "--out", str(data), "--quiet")[::2])
    assert "holds other files" in line and "d.csv" in line
    assert _snapshot(data) == before


def test_a_forged_manifest_with_force_replaces_only_the_reports_own_names(tmp_path, small):
    data = _data_folder(tmp_path)
    # what a folder's author can know of a file once it is unpacked elsewhere: its size and
    # modification time (tar keeps it); not the inode and status-change time it gets there
    ids = {}
    for rel in ("precious.txt", "figures/mine.png", "d.csv"):
        st = os.lstat(data / rel)
        ids[rel] = [12345, 67890, st.st_size, st.st_mtime_ns, st.st_mtime_ns]
    (data / MANIFEST).write_text(
        json.dumps({"version": 2, "files": [{"path": k, "id": v} for k, v in ids.items()]})
    )
    small.write(data, figure_formats=["png"], force=True)
    assert (data / "precious.txt").read_text() == "keep me"
    assert (data / "figures" / "mine.png").read_bytes() == b"not a report figure"
    assert (data / "d.csv").is_file() and (data / "report.html").is_file()


def test_a_copied_report_is_not_the_copys_own_report(tmp_path, small):
    first = tmp_path / "first"
    small.write(first, figure_formats=["png", "svg"])
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    with pytest.raises(OutputError, match="holds other files"):
        check_output(copy)
    stale = sorted((copy / "figures").glob("*.svg"))
    small.write(copy, figure_formats=["png"], force=True)
    # the copy's svg files were not written here: with --force they stay
    assert stale and all(p.is_file() for p in stale)


def test_an_edited_report_file_is_not_deleted_and_blocks_a_rewrite(tmp_path, small):
    out = tmp_path / "r"
    small.write(out, figure_formats=["png", "svg"])
    svgs = sorted((out / "figures").glob("*.svg"))
    edited = svgs[0]
    edited.write_text("<svg>my annotated version</svg>")
    with pytest.raises(OutputError, match="named like the report's"):
        check_output(out)
    small.write(out, figure_formats=["png"], force=True)
    assert edited.read_text() == "<svg>my annotated version</svg>"
    # the untouched svg files of the earlier report were its own: removed as stale
    assert all(not p.exists() for p in svgs[1:])


def test_an_earlier_report_of_this_machine_is_replaced_without_force(tmp_path, small):
    out = tmp_path / "r"
    small.write(out, figure_formats=["png", "svg"])
    (out / "notes.txt").write_text("mine")
    check_output(out)  # recognised: no --force needed
    small.write(out, figure_formats=["png"])
    assert not list((out / "figures").glob("*.svg"))
    assert (out / "notes.txt").read_text() == "mine"


def test_a_manifest_entry_that_is_a_link_is_never_followed(tmp_path, small):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "r"
    small.write(out, figure_formats=["png"])
    doc = json.loads((out / MANIFEST).read_text())
    link = out / "figures" / "zz.png"
    link.symlink_to(victim)
    st = os.lstat(link)
    doc["files"].append(
        {
            "path": "figures/zz.png",
            "id": [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns],
        }
    )
    (out / MANIFEST).write_text(json.dumps(doc))
    small.write(out, figure_formats=["png"], force=True)
    assert victim.read_text() == "keep" and link.is_symlink()


# --- staging folders of killed runs ----------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _killed_staging(out: Path) -> Path:
    """A staging folder as a SIGKILLed run leaves it: marker of a process that is gone."""
    out.mkdir(exist_ok=True)
    staging = make_staging(out)
    (staging / "figures").mkdir()
    (staging / "figures" / "half.png").write_bytes(b"\x89PNG half")
    marker = staging / ".evalstats-staging"
    doc = json.loads(marker.read_text())
    doc["pid"] = _dead_pid()
    marker.write_text(json.dumps(doc))
    return staging


def test_a_fresh_folder_that_only_saw_a_killed_run_is_not_refused(tmp_path, small):
    out = tmp_path / "r"
    staging = _killed_staging(out)
    check_output(out)
    small.write(out, figure_formats=["png"])
    assert not staging.exists()
    assert not [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_a_running_reports_staging_folder_is_left_alone(tmp_path, small):
    out = tmp_path / "r"
    out.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        staging = make_staging(out)
        marker = staging / ".evalstats-staging"
        doc = json.loads(marker.read_text())
        doc["pid"] = sleeper.pid
        marker.write_text(json.dumps(doc))
        check_output(out)  # not another file
        small.write(out, figure_formats=["png"])
        assert staging.is_dir(), "the staging folder of a live run was removed"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_foreign_partial_folder_is_never_removed(tmp_path, small):
    out = tmp_path / "r"
    out.mkdir()
    foreign = out / f"{STAGING_PREFIX}abc"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputError, match="holds other files"):
        check_output(out)
    # copied from another folder, with its marker: the marker names another inode
    src = _killed_staging(tmp_path / "elsewhere")
    shutil.copytree(src, out / src.name)
    small.write(out, figure_formats=["png"], force=True)
    assert (foreign / "thesis.tex").read_text() == "years of work"
    assert (out / src.name / "figures" / "half.png").is_file()


def _report_process(data: Path, out: Path) -> subprocess.Popen:
    code = textwrap.dedent(
        f"""
        import sys
        from evalstats.cli import main
        sys.exit(main(["report", {str(data)!r}, "--out", {str(out)!r}, "--quiet",
                       "--workers", "1", "--figure-format", "png", "--figure-format", "pdf"]))
        """
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_staging(out: Path, proc: subprocess.Popen, timeout: float = 240) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if out.is_dir():
            found = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
            if found:
                return found[0]
        if proc.poll() is not None:
            raise AssertionError(f"the report ended first: {proc.stderr.read()[-2000:]}")
        time.sleep(0.05)
    raise AssertionError("no staging folder appeared")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_report_leaves_a_folder_the_next_run_accepts(tmp_path, sig):
    data = tmp_path / "d.csv"
    observations(n_models=6, n_items=300, n_variants=8, n_runs=3, seed=0).write_csv(data)
    out = tmp_path / "r"
    proc = _report_process(data, out)
    _wait_for_staging(out, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    leftovers = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
    if sig == signal.SIGTERM:
        # unwound: one line, exit 143, the staging folder removed on the way out
        assert proc.returncode == 143, err[-2000:]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert lines == ["evalstats: error: terminated (SIGTERM); nothing more was written."]
        assert not leftovers
    else:
        assert proc.returncode == -signal.SIGKILL and leftovers
    assert not (out / "report.html").exists()
    code, _, err = _cli(
        "report", str(data), "--out", str(out), "--quiet", "--skip", ",".join(SKIP),
        "--figure-format", "png",
    )  # fmt: skip
    assert code == 0, err
    assert (out / "report.html").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
