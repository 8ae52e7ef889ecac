"""Shared fixtures: seeded data, paths to fixtures, real public data, hypothesis profiles.

Real public data
----------------
Files that other people published (the llm-stability runs and the authors' metrics, the State of
What Art paraphrase accuracies and metric tables, lm-eval / Inspect / OpenAI-evals logs) are
never copied into the project: they stay in ``../shared/data`` beside the project root (its
README says where each comes from and under which licence) and the tests read them there. Set
``EVALSTATS_SHARED_DATA`` to read them from another folder.

- A test that reads them asks for the ``shared_data`` fixture (the folder, a ``Path``) or for a
  fixture built on it, or carries the ``shared_data`` marker (module-level paths built with
  :func:`shared`, e.g. in ``parametrize``). Either way the test is **skipped**, with
  :data:`NO_SHARED_DATA` as the reason, when the folder is absent (a clone with nothing beside
  it), and ``-m "not shared_data"`` deselects them all.
- Archives (``llm-stability/*.tgz``) are extracted once per session into pytest's temporary
  folder (``tarfile``'s ``data`` filter: no absolute paths, no ``..``, no links leaving the
  folder) and removed at the end of the session; never into the project.
- Where a test needs a subset (the first records of a log, a few models of a table), the subset
  is derived from the shared file at test time, into a temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "fixtures"

#: Environment variable naming the shared data folder (default: ``../shared/data``).
SHARED_DATA_ENV = "EVALSTATS_SHARED_DATA"

#: Why a real-data test is skipped.
NO_SHARED_DATA = (
    "../shared/data not found beside the project: real public data is read in place, never "
    "copied; see tests/conftest.py"
)

#: Marker for tests that read ``../shared/data`` through module-level paths (see :func:`shared`).
needs_shared_data = pytest.mark.shared_data

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nightly", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("EVALSTATS_HYPOTHESIS_PROFILE", "ci"))


# --- real public data, read in place ------------------------------------------------------------


def shared_data_root() -> Path:
    """Where the shared data are looked for: ``$EVALSTATS_SHARED_DATA`` or ``../shared/data``."""
    env = os.environ.get(SHARED_DATA_ENV)
    return Path(env).expanduser().resolve() if env else PROJECT.parent / "shared" / "data"


def has_shared_data() -> bool:
    """Whether the shared data folder is present."""
    return shared_data_root().is_dir()


def shared(*parts: str) -> Path:
    """``../shared/data/<parts>``, usable at module level and in ``parametrize``.

    The path need not exist: a test that reads it carries the ``shared_data`` marker
    (:data:`needs_shared_data`), which skips it when the folder is absent.
    """
    return shared_data_root().joinpath(*parts)


def pytest_collection_modifyitems(config, items):
    """Mark every test that uses the ``shared_data`` fixture; skip them all without the data."""
    present = has_shared_data()
    skip = pytest.mark.skip(reason=NO_SHARED_DATA)
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(needs_shared_data)
        if not present and item.get_closest_marker("shared_data") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (``../shared/data``); the test is skipped when it is absent."""
    root = shared_data_root()
    if not root.is_dir():
        pytest.skip(NO_SHARED_DATA)
    return root


@pytest.fixture(scope="session")
def shared_archive(shared_data, tmp_path_factory) -> Iterator[Callable[[str], Path]]:
    """``extract(relative_path)``: a ``.tgz`` of the shared data, extracted once per session.

    Returns the folder it was extracted into (a temporary folder, removed after the session).
    """
    done: dict[str, Path] = {}

    def extract(rel: str) -> Path:
        if rel not in done:
            dest = tmp_path_factory.mktemp(Path(rel).name.split(".")[0])
            with tarfile.open(shared_data / rel) as tar:
                tar.extractall(dest, filter="data")
            done[rel] = dest
        return done[rel]

    yield extract
    for path in done.values():
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def llm_stability_runs(shared_archive) -> Path:
    """The llm-stability ``strict_json_schema`` runs: gpt-4o, 7 tasks x 5 runs, one CSV per run.

    ``runs/`` of ``llm-stability/strict_json_schema_runs.tgz`` (Apache-2.0; its
    geometric_shapes folder is empty upstream). The authors' metrics for them are
    ``llm-stability/strict_json_schema_stability_eval.csv``.
    """
    return shared_archive("llm-stability/strict_json_schema_runs.tgz") / "runs"


@pytest.fixture(scope="session")
def fine_tuned_data(shared_archive) -> Path:
    """``llm-stability/fine_tuned_data.tgz`` extracted as upstream ships it.

    ``runs/`` (gpt-35-turbo and the fine-tuned gpt-35_OAI on navigate and logical_deduction,
    6-10 runs) and ``cross_trained/``, with macOS AppleDouble ``._*`` files.
    """
    return shared_archive("llm-stability/fine_tuned_data.tgz")


#: Four BBH tasks x five models of State of What Art for the headline tests. minotaur-15b's
#: column is left out of hyperbaton, so that one dataset lacks one model (Friedman must name the
#: block it drops).
SOWA_HEADLINE_MODELS = ("falcon-7b-instruct", "flan-t5-xxl", "t0pp", "vicuna-13b", "minotaur-15b")
SOWA_HEADLINE_TASKS = ("snarks", "navigate", "hyperbaton", "sports_understanding")


@pytest.fixture(scope="session")
def sowa_headline(shared_data, tmp_path_factory) -> Path:
    """A small State of What Art dump derived from ``state-of-what-art/paraphrases accuracies``.

    The first 30 paraphrases (rows) of four BBH tasks, five models' columns, values unchanged
    (CDLA-Permissive-2.0); see :data:`SOWA_HEADLINE_MODELS`. Layout ``paraphrases
    accuracies/BBH/<task>.csv`` under the returned folder, no paraphrase metadata.
    """
    import polars as pl

    src = shared_data / "state-of-what-art" / "paraphrases accuracies" / "BBH"
    root = tmp_path_factory.mktemp("sowa_headline")
    dst = root / "paraphrases accuracies" / "BBH"
    dst.mkdir(parents=True)
    for task in SOWA_HEADLINE_TASKS:
        models = [
            m for m in SOWA_HEADLINE_MODELS if not (task, m) == ("hyperbaton", "minotaur-15b")
        ]
        columns = ["paraphrase idx", *(f"{m}_acc" for m in models)]
        pl.read_csv(src / f"{task}.csv").select(columns).head(30).write_csv(dst / f"{task}.csv")
    return root


def _head_lines(src: Path, dst: Path, n: int) -> None:
    dst.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:n]))


@pytest.fixture(scope="session")
def lm_eval_subsets(shared_data, tmp_path_factory) -> Path:
    """Small real lm-eval logs derived from ``real-logs/lm-eval`` (MIT; see SOURCES.md there).

    - ``SlurmEvals/llama/{winogrande,truthfulqa_gen}_write_out_info.json``: the first 100
      records of the 0.3 ``--write_out`` files, dumped with ``json.dumps(indent=4)`` as the
      harness wrote them;
    - ``african_nlp_benchmarks/``: the two ``masakhaner_luo_prompt_2_0shot`` results files
      whole and the first 20 lines of their ``samples_*.jsonl`` (corpus-level f1 only);
    - ``results__truthfulqa/``: the first 60 of 817 lines of the full truthfulqa_gen run and
      the whole 20-document ``--limit`` run.
    """
    src = shared_data / "real-logs" / "lm-eval"
    root = tmp_path_factory.mktemp("lm_eval_subsets")
    slurm = root / "SlurmEvals" / "llama"
    slurm.mkdir(parents=True)
    for name in ("winogrande_write_out_info.json", "truthfulqa_gen_write_out_info.json"):
        records = json.loads((src / "SlurmEvals" / "llama" / name).read_text())
        (slurm / name).write_text(json.dumps(records[:100], indent=4))
    african = root / "african_nlp_benchmarks"
    african.mkdir()
    for stamp in ("2026-01-16T16-37-38.713565", "2026-01-16T17-35-22.033409"):
        results = f"masakhaner_luo_prompt_2_0shot_{stamp}.json"
        shutil.copyfile(src / "african_nlp_benchmarks" / results, african / results)
        samples = f"samples_masakhaner_luo_prompt_2_{stamp}.jsonl"
        _head_lines(src / "african_nlp_benchmarks" / samples, african / samples, 20)
    tqa = root / "results__truthfulqa"
    tqa.mkdir()
    for stamp, n in (("2025-05-31T13-51-32.759677", 60), ("2025-05-31T14-30-51.983293", 20)):
        name = f"samples_truthfulqa_gen_{stamp}.jsonl"
        _head_lines(src / "results__truthfulqa" / name, tqa / name, n)
    return root


# --- the project's own fixtures and seeded data ---------------------------------------------------


@pytest.fixture
def fixtures() -> Path:
    """The repository's fixtures folder."""
    return FIXTURES


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator."""
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _close_figures():
    """Close matplotlib figures after each test (plots tests run on Agg)."""
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        plt.close("all")
