"""The report's worker processes (evalstats._procs): forked from a server with the imports done."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp

import pytest

from evalstats._procs import PRELOAD, adopt, parent_state, start_early, worker_context

pytestmark = pytest.mark.skipif(
    "forkserver" not in mp.get_all_start_methods(), reason="no forkserver start method"
)


def _pool(initializer=None, initargs=()):
    return cf.ProcessPoolExecutor(
        max_workers=1, mp_context=worker_context(), initializer=initializer, initargs=initargs
    )


def test_workers_start_with_the_preloaded_modules():
    start_early()
    with _pool() as pool:
        loaded = pool.submit(
            eval, f"[m for m in {list(PRELOAD)!r} if m in __import__('sys').modules]"
        )
        assert loaded.result() == list(PRELOAD)


def test_workers_take_the_environment_the_main_process_has_when_the_pool_starts(monkeypatch):
    start_early()  # the server exists before the variables change
    monkeypatch.setenv("EVALSTATS_PROBE", "set after the server started")
    monkeypatch.delenv("HOME", raising=False)
    probe = "(__import__('os').environ.get('EVALSTATS_PROBE'), 'HOME' in __import__('os').environ)"
    with _pool() as pool:  # a plain fork of the server: the server's environment
        assert pool.submit(eval, probe).result() == (None, True)
    with _pool(adopt, (parent_state(),)) as pool:
        assert pool.submit(eval, probe).result() == ("set after the server started", False)


def test_adopt_without_a_state_changes_nothing(monkeypatch):
    monkeypatch.setenv("EVALSTATS_PROBE", "x")
    adopt(None)
    adopt({})
    import os

    assert os.environ["EVALSTATS_PROBE"] == "x"


def test_a_server_started_for_figures_also_preloads_the_figure_modules():
    """The server is one per process: checked in a fresh interpreter for each case."""
    import subprocess
    import sys

    from evalstats._procs import FIGURE_PRELOAD

    probe = (
        "import concurrent.futures as cf\n"
        "from evalstats._procs import FIGURE_PRELOAD, worker_context\n"
        "ctx = worker_context(figures=FIGURES)  # starts the server\n"
        "check = f'[m for m in {list(FIGURE_PRELOAD)!r} if m in __import__(\"sys\").modules]'\n"
        "with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:\n"
        "    print(pool.submit(eval, check).result())\n"
    )
    seen = {}
    for figures in (True, False):
        out = subprocess.run(
            [sys.executable, "-c", probe.replace("FIGURES", str(figures))],
            capture_output=True,
            text=True,
            check=True,
        )
        seen[figures] = out.stdout.strip()
    assert seen[True] == str(list(FIGURE_PRELOAD))
    assert "backend_pdf" not in seen[False]


def test_workers_import_the_installed_package_not_a_folder_of_the_working_directory(tmp_path):
    """Issue 41: the server is ``python -c``, which put the working directory first on its
    ``sys.path`` (Python 3.11's server ignores the main process's): standing in a folder with
    an ``evalstats/`` of its own (a clone's parent), the workers imported that one. Here it is
    a decoy regular package; the workers must import the package the main process imports.
    """
    import subprocess
    import sys

    import evalstats

    (tmp_path / "evalstats").mkdir()
    (tmp_path / "evalstats" / "__init__.py").write_text("")  # the decoy
    (tmp_path / "run").mkdir()
    script = tmp_path / "run" / "probe.py"  # a script elsewhere, as the console script is
    script.write_text(
        "import concurrent.futures as cf\n"
        "import pkgutil\n"
        "from evalstats._procs import worker_context\n"
        "if __name__ == '__main__':\n"
        "    with cf.ProcessPoolExecutor(1, mp_context=worker_context()) as pool:\n"
        "        print(pool.submit(pkgutil.resolve_name, 'evalstats:__file__').result())\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == evalstats.__file__
