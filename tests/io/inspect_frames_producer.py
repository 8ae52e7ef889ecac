"""inspect_ai's analysis frames of logs its own writer made, written as Parquet.

Run as ``python inspect_frames_producer.py OUT``: writes the logs of
``tests/io/inspect_producer.py`` under ``OUT`` and, for the folders ``zstd``, ``dict`` and
``design``, ``OUT/frames/<folder>_samples.parquet`` (``inspect_ai.analysis.samples_df``, its
default columns), ``<folder>_evals.parquet`` (``evals_df``) and ``<folder>_joined.parquet``
(``samples_df`` with ``SampleSummary + EvalInfo + EvalModel + EvalTask``), with pandas'
``to_parquet``. ``tests/io/test_inspect_frames.py`` runs it in a subprocess (importing
inspect_ai patches ``zipfile``) and reads the frames back with pandas.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from inspect_ai.analysis import (  # noqa: E402
    EvalInfo,
    EvalModel,
    EvalTask,
    SampleSummary,
    evals_df,
    samples_df,
)
from inspect_producer import design, main  # noqa: E402 (the producer beside this file)


def frames(out: Path) -> None:
    target = out / "frames"
    target.mkdir(parents=True, exist_ok=True)
    for folder in ("zstd", "dict", "design"):
        logs = str(out / folder)
        samples_df(logs).to_parquet(target / f"{folder}_samples.parquet")
        evals_df(logs).to_parquet(target / f"{folder}_evals.parquet")
        joined = samples_df(logs, columns=SampleSummary + EvalInfo + EvalModel + EvalTask)
        joined.to_parquet(target / f"{folder}_joined.parquet")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    main(out)
    design(out)
    frames(out)
