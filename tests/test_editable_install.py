"""The README's install, used from the folder that holds the clone (issue 41).

``git clone ... evalstats`` leaves ``./evalstats/``, the repository: a folder without an
``__init__.py`` that holds the package ``evalstats/``. Standing in its parent, a script's
``import evalstats`` and the report's workers found that folder first and imported it as an
empty namespace package, because setuptools' editable install was an import hook consulted
after every ``sys.path`` entry. With ``package-dir = {"" = "."}`` the editable install is a
.pth file that puts the project root on ``sys.path``, and a regular package found anywhere on
``sys.path`` wins over a namespace portion.

The fast test copies the project's tree (pyproject.toml, README.md, the package) and installs
it with this environment's pip and setuptools (no build isolation, no index); the slow one
clones the repository and runs ``pip install -e .`` as the README does (dependencies aside:
the new environment borrows this one's through a .pth file).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import polars as pl
import pytest

import evalstats

ROOT = Path(evalstats.__file__).resolve().parent.parent

#: The README's first example, as a script saved next to the clone.
SCRIPT = """\
import polars as pl
import evalstats
from evalstats.simulate import observations

print(evalstats.__file__)
out = evalstats.intervals(observations(n_models=2, n_items=30, n_variants=1, seed=0))
print(out.height)
"""


def _environment(tmp: Path) -> Path:
    """A new virtual environment (no pip) that borrows this one's packages; its python."""
    env = tmp / "venv"
    venv.create(env, with_pip=False, symlinks=sys.platform != "win32")
    python = env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # sorted after setuptools' __editable__ .pth: the clone comes before this environment
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(site, "zz_borrowed.pth").write_text("\n".join(borrowed) + "\n")
    return python


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _run_from_the_parent(tmp: Path, python: Path, clone: Path) -> None:
    """The script and ``evalstats report --workers 2`` from the folder that holds the clone."""
    (tmp / "use_it.py").write_text(SCRIPT)
    done = subprocess.run(
        [str(python), "use_it.py"], cwd=tmp, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(clone / "evalstats" / "__init__.py"), "2"]

    from evalstats.simulate import observations

    observations(n_models=2, n_items=30, n_variants=3, seed=0).write_csv(tmp / "dump.csv")
    command = python.parent / ("evalstats.exe" if sys.platform == "win32" else "evalstats")
    done = subprocess.run(
        [str(command), "report", "dump.csv", "--out", "rep", "--workers", "2"]
        + ["--figure-format", "none", "--quiet"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert pl.read_csv(tmp / "rep" / "tables" / "intervals.csv").height == 2


def test_an_editable_install_is_not_shadowed_by_the_clone_folder(tmp_path):
    clone = tmp_path / "evalstats"
    clone.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, clone / name)
    shutil.copytree(
        ROOT / "evalstats", clone / "evalstats", ignore=shutil.ignore_patterns("__pycache__")
    )
    python = _environment(tmp_path)
    _pip(python, "--no-deps", "--no-build-isolation", "--no-index", "-e", str(clone))
    _run_from_the_parent(tmp_path, python, clone)


@pytest.mark.slow
def test_the_readme_install_from_a_clone_is_not_shadowed(tmp_path):
    """``git clone`` of this repository and the README's ``pip install -e .`` (build isolation:
    setuptools from the index), then the same uses from the clone's parent."""
    if not (ROOT / ".git").exists():
        pytest.fail(f"{ROOT} is not a git checkout; the fast test covers the copied tree")
    clone = tmp_path / "evalstats"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=300)
    python = _environment(tmp_path)
    _pip(python, "--no-deps", "-e", str(clone))
    _run_from_the_parent(tmp_path, python, clone)
