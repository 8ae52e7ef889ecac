"""A synthetic HELM suite in ``helm-run``'s layout, of a chosen size, for benchmarks.

``write_helm_suite(root, ...)`` writes ``root/benchmark_output/runs/<suite>/<run name>/`` per
run: ``run_spec.json`` (the layout of the fixture written by ``helm-run`` in
``fixtures/dumps/helm``, with the model and the run name changed) and
``per_instance_stats.json`` with one entry per (instance, train trial, perturbation) and, in
each, the statistics HELM computes (``exact_match`` 0/1, ``quasi_exact_match``, ``f1_score``,
``num_output_tokens``, ``inference_runtime``...). The perturbations are HELM's robustness and
fairness perturbations (``typos``, ``synonym``, ``dialect``, ...), written as HELM writes them
(``{"name": ..., "robustness": ..., "fairness": ..., "computed_on": "perturbed"}``), plus the
unperturbed entries. Scores are drawn from a seeded generator with a per-model accuracy.

About 10 MB (the size of the suite that made ``report`` run past 300 s, issue 45)::

    write_helm_suite(root, n_models=4, n_instances=120, n_perturbations=16, n_stats=10)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = (
    ROOT
    / "fixtures/dumps/helm/benchmark_output/runs/evalstats-v1"
    / "simple_short_answer_qa:model=simple_model1,data_augmentation=robustness"
)

#: HELM's perturbation names (helm.benchmark.augmentations), robustness then fairness.
PERTURBATIONS = (
    ("typos", True, False),
    ("synonym", True, False),
    ("lowercase", True, False),
    ("contraction", True, False),
    ("expansion", True, False),
    ("space", True, False),
    ("misspelling_sweep", True, False),
    ("filler", True, False),
    ("mild_mix", True, False),
    ("dialect", False, True),
    ("gender", False, True),
    ("person_name", False, True),
    ("race", False, True),
    ("translate", True, False),
    ("cleva_mild_mix", True, False),
    ("extra_space", True, False),
    ("ascii_punct", True, False),
    ("contrast_sets", True, False),
)

#: (name, kind) of the statistics written per entry: 0/1 correctness, a [0, 1] score, a count,
#: a time.
STATS = (
    ("exact_match", "binary"),
    ("quasi_exact_match", "binary"),
    ("prefix_exact_match", "binary"),
    ("f1_score", "unit"),
    ("rouge_l", "unit"),
    ("bleu_4", "unit"),
    ("num_output_tokens", "count"),
    ("num_prompt_tokens", "count"),
    ("inference_runtime", "time"),
    ("logprob", "logprob"),
)


def _stat(name: str, value: float, split: str = "test", perturbation: dict | None = None):
    key = {"name": name, "split": split, **({"perturbation": perturbation} if perturbation else {})}
    return {
        "name": key,
        "count": 1,
        "sum": value,
        "sum_squared": value * value,
        "min": value,
        "max": value,
        "mean": value,
        "variance": 0.0,
        "stddev": 0.0,
    }


def write_helm_suite(
    root: Path,
    *,
    n_models: int = 4,
    n_instances: int = 120,
    n_perturbations: int = 16,
    n_stats: int = 10,
    n_train_trials: int = 1,
    n_scenarios: int = 1,
    suite: str = "synthetic-v1",
    seed: int = 0,
) -> Path:
    """Write the suite under ``root``; return its runs folder (``.../runs/<suite>``)."""
    rng = np.random.default_rng(seed)
    spec = json.loads((FIXTURE / "run_spec.json").read_text())
    runs = Path(root) / "benchmark_output" / "runs" / suite
    # beyond the named ones, the same perturbations at other strengths (HELM's perturbation
    # specs carry their arguments: typos at prob 0.05, 0.1, ...), as a sweep writes them
    perturbations = [
        {
            "name": n,
            "robustness": r,
            "fairness": f,
            "computed_on": "perturbed",
            **(
                {"prob": round(0.05 * (k // len(PERTURBATIONS)), 2)}
                if k >= len(PERTURBATIONS)
                else {}
            ),
        }
        for k in range(n_perturbations)
        for n, r, f in [PERTURBATIONS[k % len(PERTURBATIONS)]]
    ]
    for m, k in ((m, k) for m in range(n_models) for k in range(n_scenarios)):
        model = f"synthetic/model{m}"
        subject = f"subject=s{k}," if n_scenarios > 1 else ""
        name = f"synthetic_qa:{subject}model=synthetic_model{m},data_augmentation=robustness"
        folder = runs / name
        folder.mkdir(parents=True, exist_ok=True)
        run_spec = {
            **spec,
            "name": name,
            "adapter_spec": {
                **spec["adapter_spec"],
                "model": model,
                "model_deployment": model,
                "num_train_trials": n_train_trials,
            },
        }
        (folder / "run_spec.json").write_text(json.dumps(run_spec, indent=2))
        accuracy = 0.4 + 0.1 * m
        entries = []
        for i in range(n_instances):
            difficulty = rng.normal(0, 1)
            for trial in range(n_train_trials):
                for pert in [None, *perturbations]:
                    shift = 0.0 if pert is None else rng.normal(-0.3, 0.2)
                    p = 1 / (1 + np.exp(-(np.log(accuracy / (1 - accuracy)) - difficulty + shift)))
                    correct = float(rng.random() < p)
                    stats = []
                    for stat, kind in STATS[:n_stats]:
                        if kind == "binary":
                            v = correct
                        elif kind == "unit":
                            v = float(np.clip(correct * 0.8 + rng.random() * 0.2, 0, 1))
                        elif kind == "count":
                            v = float(rng.integers(1, 400))
                        elif kind == "time":
                            v = float(rng.gamma(2.0, 0.2))
                        else:
                            v = float(-rng.gamma(1.0, 1.0))
                        stats.append(_stat(stat, v, perturbation=pert))
                    entry = {"instance_id": f"id{i}", "train_trial_index": trial, "stats": stats}
                    if pert is not None:
                        entry["perturbation"] = pert
                    entries.append(entry)
        (folder / "per_instance_stats.json").write_text(json.dumps(entries, indent=2))
    return runs


def suite_bytes(runs: Path) -> int:
    """Bytes of every file under ``runs``."""
    return sum(p.stat().st_size for p in Path(runs).rglob("*") if p.is_file())
