"""Stability benchmark: ``stability_table`` against a pandas loop in the authors' style.

Generates an observation table of ``models x tasks x items x runs`` rows (default 10 x 20 x 500 x
50 = 5,000,000) with one configuration per (model, task): each later run redraws an item's
answer with probability 0.1 and rewrites the raw response with probability 0.05. Then, in one
process and on the same data:

- ``ours``: :func:`evalstats.stability.stability_table` on the polars DataFrame (median of
  ``--repeat`` runs);
- ``pandas groupby loop``: a straightforward pandas implementation in the style of the authors'
  ``evaluate.py`` (breckbaldwin/llm-stability): loop over the configurations, then over the
  items of each, collect the set of answers and of raw responses per item, count correct
  answers per run and the items correct in some / every run. It already uses ``groupby`` and
  column lists where the authors use a boolean mask per item and ``iterrows``; this is the
  ratio that must be at least 20x;
- ``pandas authors' row loop``: the authors' inner loop as written (a boolean mask per item, a
  loop over rows with ``iterrows``), timed on ``--authors-configs`` configurations only because
  it takes minutes on the whole table, and extrapolated linearly (labelled as such).

All results are compared with ours (they must agree) and the wall-clock ratios are printed.
Every timing runs in this one process on the same data.

    python benchmarks/bench_stability.py                  # 5,000,000 rows
    python benchmarks/bench_stability.py --items 50       # quick (500,000 rows)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import polars as pl

from evalstats.stability import stability_table

LETTERS = np.array(["(A)", "(B)", "(C)", "(D)"])


def generate(models: int, tasks: int, items: int, runs: int, seed: int = 0) -> pl.DataFrame:
    """Observation table with planted instability, sorted by model, task, run, item."""
    rng = np.random.default_rng(seed)
    n_cfg = models * tasks
    shape = (n_cfg, runs, items)
    base = rng.integers(0, 4, size=(n_cfg, 1, items))
    redraw = rng.random(shape) < 0.1
    redraw[:, 0, :] = False
    ans = np.where(redraw, rng.integers(0, 4, size=shape), base)
    gold = rng.integers(0, 4, size=(n_cfg, 1, items))
    gold = np.where(rng.random((n_cfg, 1, items)) < 0.7, base, gold)  # ~75% accuracy
    alt = rng.random(shape) < 0.05
    cfg = np.repeat(np.arange(n_cfg), runs * items)
    answer = LETTERS[ans.reshape(-1)]
    letter = np.char.strip(answer, "()")
    response = np.where(
        alt.reshape(-1),
        np.char.add(np.char.add('{"Answer": "', answer), '"}'),
        np.char.add(np.char.add('{"Answer":"', letter), '"}'),
    )
    return pl.DataFrame(
        {
            "model": np.array([f"model_{i:02d}" for i in range(models)])[cfg // tasks],
            "dataset": np.array([f"task_{j:02d}" for j in range(tasks)])[cfg % tasks],
            "variant": "temperature=0.0|seed=12",
            "item": np.tile(np.arange(items), n_cfg * runs).astype(str),
            "run": np.tile(np.repeat(np.arange(runs), items), n_cfg),
            "score": (ans == np.broadcast_to(gold, shape)).reshape(-1).astype(np.float64),
            "answer": answer,
            "response": response,
        }
    )


def _result(model, dataset, variant, correct, n_q, agree_raw, agree_answer, any_c, all_c):
    acc = [c / n_q for c in correct]
    return {
        "model": model,
        "dataset": dataset,
        "variant": variant,
        "n_runs": len(correct),
        "n_items": n_q,
        "acc_per_run": acc,
        "acc_min": min(acc),
        "acc_median": float(np.median(acc)),
        "acc_max": max(acc),
        "tar_a": agree_answer / n_q,
        "tar_r": agree_raw / n_q,
        "best_possible": any_c / n_q,
        "worst_possible": all_c / n_q,
    }


def pandas_authors(df: pd.DataFrame) -> pd.DataFrame:
    """The authors' loop: per configuration, per item a boolean mask, then a loop over its rows.

    As in evaluate.py, except that configurations come from ``groupby`` rather than one boolean
    mask over the whole table per configuration (which would be slower still).
    """
    results = []
    for (model, dataset, variant), exp_df in df.groupby(["model", "dataset", "variant"]):
        num_runs = exp_df["run"].max() + 1
        correct = [0] * num_runs
        agree_raw = agree_answer = any_correct = all_correct = 0
        rubric_ids = exp_df["item"].unique()
        for rubric_id in rubric_ids:
            question_df = exp_df[exp_df["item"] == rubric_id]
            if len(question_df.index) != num_runs:
                raise IndexError("runs not matching expected length")
            raw, answer = set(), set()
            corrects_for_rubric = 0
            for idx, row in question_df.iterrows():
                raw.add(row["response"])
                answer.add(row["answer"] if row["answer"] is not None else idx)
                if row["score"] == 1.0:
                    correct[row["run"]] += 1
                    corrects_for_rubric += 1
            agree_raw += len(raw) == 1
            agree_answer += len(answer) == 1
            any_correct += corrects_for_rubric > 0
            all_correct += corrects_for_rubric == num_runs
        results.append(
            _result(
                model,
                dataset,
                variant,
                correct,
                len(rubric_ids),
                agree_raw,
                agree_answer,
                any_correct,
                all_correct,
            )
        )
    return pd.DataFrame(results)


def pandas_groupby(df: pd.DataFrame) -> pd.DataFrame:
    """A leaner loop: ``groupby`` for configurations and items, column lists instead of rows."""
    results = []
    for (model, dataset, variant), exp_df in df.groupby(["model", "dataset", "variant"]):
        num_runs = exp_df["run"].max() + 1
        correct = [0] * num_runs
        agree_raw = agree_answer = any_correct = all_correct = 0
        num_questions = 0
        for _, question_df in exp_df.groupby("item"):
            num_questions += 1
            if len(question_df.index) != num_runs:
                raise IndexError("runs not matching expected length")
            raw = set(question_df["response"].tolist())
            answers = question_df["answer"].tolist()
            answer = {a for a in answers if a is not None}
            unparsed = any(a is None for a in answers)
            n_correct = 0
            for run, score in zip(question_df["run"].tolist(), question_df["score"].tolist()):
                if score == 1.0:
                    correct[run] += 1
                    n_correct += 1
            agree_raw += len(raw) == 1
            agree_answer += len(answer) == 1 and not unparsed
            any_correct += n_correct > 0
            all_correct += n_correct == num_runs
        results.append(
            _result(
                model,
                dataset,
                variant,
                correct,
                num_questions,
                agree_raw,
                agree_answer,
                any_correct,
                all_correct,
            )
        )
    return pd.DataFrame(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument(
        "--authors-configs",
        type=int,
        default=2,
        help="configurations on which to time the authors' row loop (0: skip it); its time is "
        "extrapolated linearly to the whole table and labelled so",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    t0 = time.perf_counter()
    obs = generate(args.models, args.tasks, args.items, args.runs, args.seed)
    pdf = obs.to_pandas()
    print(
        f"generated {obs.height:,} rows ({args.models} models x {args.tasks} tasks x "
        f"{args.items} items x {args.runs} runs) in {time.perf_counter() - t0:.1f} s"
    )

    times = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        ours = stability_table(obs)
        times.append(time.perf_counter() - t0)
    t_ours = float(np.median(times))
    print(
        f"evalstats stability_table:         {t_ours:8.2f} s  (median of {len(times)}; "
        f"{obs.height / t_ours:,.0f} rows/s)",
        flush=True,
    )
    t0 = time.perf_counter()
    theirs = pandas_groupby(pdf)
    t_pandas = time.perf_counter() - t0
    _check(ours, theirs, "groupby")
    print(
        f"pandas groupby loop (full table):  {t_pandas:8.2f} s  ratio pandas / ours "
        f"{t_pandas / t_ours:6.1f}x  (results identical)",
        flush=True,
    )
    if args.authors_configs > 0:
        configs = pdf[["model", "dataset", "variant"]].drop_duplicates().head(args.authors_configs)
        part = pdf.merge(configs, on=["model", "dataset", "variant"])
        n_cfg = len(pdf[["model", "dataset", "variant"]].drop_duplicates())
        t0 = time.perf_counter()
        theirs = pandas_authors(part)
        t_part = time.perf_counter() - t0
        _check(ours, theirs, "authors")
        t_full = t_part * n_cfg / len(configs)
        print(
            f"pandas authors' row loop:          {t_part:8.2f} s on {len(configs)} of {n_cfg} "
            f"configurations ({len(part):,} rows); extrapolated {t_full:,.0f} s, ratio "
            f"{t_full / t_ours:,.0f}x",
            flush=True,
        )


def _check(ours: pl.DataFrame, theirs: pd.DataFrame, name: str) -> None:
    theirs = pl.from_pandas(theirs)
    joined = theirs.join(ours, on=["model", "dataset", "variant"], suffix="_ours")
    if joined.height != theirs.height:
        raise SystemExit(f"{name}: configurations differ")
    for col in (
        "n_runs",
        "n_items",
        "tar_a",
        "tar_r",
        "best_possible",
        "worst_possible",
        "acc_min",
        "acc_median",
        "acc_max",
    ):
        a = joined[f"{col}_ours"].cast(pl.Float64).to_numpy()
        b = joined[col].cast(pl.Float64).to_numpy()
        if not np.allclose(a, b, rtol=0, atol=1e-12):
            raise SystemExit(f"{name}: results differ in column {col!r}")


if __name__ == "__main__":
    main()
