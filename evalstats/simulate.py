"""Seeded builders of valid observation and unit tables with planted truth.

Tests, doctests, the docs and the bundled demo data all build data here, so a planted effect
means the same thing everywhere. Every builder takes ``seed`` and returns identical output for
the same seed.

The generative model (probability scale, clipped to [0.001, 0.999])::

    p[m, d, i, v] = sigmoid(logit(accuracy[m]) + b[d, i])       item difficulty, b ~ N(0, item_sd)
                    + u[m, d, v]                                 prompt effect, u ~ N(0, prompt_sd)
                    + sum_f effect[f][level_f(v)]                planted factor effects
                    + sum_(f,g) effect[(f, g)][(level_f, level_g)]  planted interactions
                    + model_effects[m][f][level_f(v)]            model-specific effects
                    + provider_effects[provider]

Run 0 draws ``correct ~ Bernoulli(p)``; each later run keeps run 0's answer except with
probability ``instability``, when it draws afresh. Effects are in accuracy points (0.1 = 10
points) so "a factor worth 10 points" is ``{"shots": {0: 0.0, 5: 0.1}}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from evalstats.errors import ParameterError

__all__ = [
    "crossed_scores",
    "demo_observations",
    "judged_observations",
    "observations",
    "unit_table",
]

_LETTERS = "ABCDEFGHIJ"


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1.0 - p))


def _design(
    factors: Mapping[str, Mapping[Any, float]] | None,
    n_variants: int,
    design: str,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    if not factors:
        return [{} for _ in range(n_variants)]
    names = list(factors)
    grid = list(itertools.product(*(list(factors[f]) for f in names)))
    if design == "grid" or (design == "auto" and len(grid) <= n_variants):
        combos = grid
    else:
        if n_variants > len(grid):
            raise ParameterError(
                f"`n_variants` is {n_variants} but the factors have only {len(grid)} combinations."
            )
        idx = np.sort(rng.choice(len(grid), size=n_variants, replace=False))
        combos = [grid[i] for i in idx]
    return [dict(zip(names, c)) for c in combos]


def observations(
    *,
    n_models: int = 3,
    n_datasets: int = 1,
    n_items: int = 100,
    n_variants: int = 20,
    n_runs: int = 1,
    model_accuracy: Sequence[float] | None = None,
    item_sd: float = 1.0,
    prompt_sd: float = 0.05,
    factors: Mapping[str, Mapping[Any, float]] | None = None,
    interactions: Mapping[tuple[str, str], Mapping[tuple[Any, Any], float]] | None = None,
    model_effects: Mapping[str, Mapping[str, Mapping[Any, float]]] | None = None,
    design: str = "auto",
    instability: float = 0.0,
    raw_instability: float = 0.0,
    providers: Sequence[str] | None = None,
    provider_effects: Mapping[str, float] | None = None,
    error_rates: Mapping[str, Mapping[str, float]] | None = None,
    n_choices: int = 4,
    latency: bool = False,
    seed: int = 0,
) -> pl.DataFrame:
    """Item-level observation table with planted effects.

    Parameters
    ----------
    n_models, n_datasets, n_items, n_variants, n_runs : int
        Sizes. Models are ``m0, m1, ...``, datasets ``d0, d1, ...``, items ``"0", "1", ...``.
    model_accuracy : sequence of float, optional
        Baseline accuracy of each model (before item difficulty); default evenly spaced from
        0.55 to 0.75.
    item_sd : float, default 1.0
        Standard deviation of item difficulty on the logit scale.
    prompt_sd : float, default 0.05
        Standard deviation of the per (model, dataset, variant) prompt effect, in accuracy points.
    factors : mapping, optional
        ``{factor: {level: effect}}``. Variants are the factor grid (``design='grid'``) or
        ``n_variants`` distinct combinations sampled from it (``design='sample'``); ``auto`` takes
        the grid when it has at most ``n_variants`` cells. Without factors, variants are
        ``v00, v01, ...`` with no factor columns.
    interactions : mapping, optional
        ``{(f, g): {(level_f, level_g): effect}}``.
    model_effects : mapping, optional
        ``{model: {factor: {level: effect}}}``, effects for one model only (e.g. a default
        configuration that favours it).
    design : {'auto', 'grid', 'sample'}, default 'auto'
    instability : float, default 0.0
        Probability that a later run redraws an item's answer.
    raw_instability : float, default 0.0
        Probability that a later run writes the same answer with different raw formatting
        (lowers TARr but not TARa).
    providers : sequence of str, optional
        Adds a ``provider`` factor; every configuration is served by every provider.
    provider_effects : mapping, optional
        ``{provider: effect}`` in accuracy points.
    error_rates : mapping, optional
        ``{provider: {category: rate}}`` with categories such as ``api_error``, ``empty``,
        ``truncated``, ``timeout``. An errored call scores 0 and gets an ``error`` value; the
        ``error`` column exists only when this is given.
    n_choices : int, default 4
        Answer options (letters ``A``...); the gold answer is drawn per item.
    latency : bool, default False
        Add ``latency_s`` (log-normal, slower for timeouts).
    seed : int, default 0

    Returns
    -------
    polars.DataFrame
        Observation table with ``model, dataset, item, variant, run, score``, factor columns,
        ``answer, response, gold, input_len, output_len`` (and ``latency_s``, ``error``).

    Examples
    --------
    >>> obs = observations(n_models=2, n_items=5, n_variants=3, n_runs=2, seed=0)
    >>> obs.height
    60
    >>> obs.select("model", "dataset", "item", "variant", "run").row(0)
    ('m0', 'd0', '0', 'v00', 0)
    """
    if not 0 <= instability <= 1 or not 0 <= raw_instability <= 1:
        raise ParameterError("`instability` and `raw_instability` must be in [0, 1].")
    if n_choices < 2 or n_choices > len(_LETTERS):
        raise ParameterError(f"`n_choices` must be in [2, {len(_LETTERS)}], got {n_choices}.")
    rng = np.random.default_rng(seed)
    models = [f"m{k}" for k in range(n_models)]
    datasets = [f"d{k}" for k in range(n_datasets)]
    if model_accuracy is None:
        model_accuracy = np.linspace(0.55, 0.75, n_models) if n_models > 1 else [0.65]
    acc = np.asarray(model_accuracy, dtype=float)
    if acc.shape != (n_models,):
        raise ParameterError(f"`model_accuracy` needs {n_models} values, got {acc.size}.")
    variants = _design(factors, n_variants, design, rng)
    V = len(variants)
    vnames = (
        [f"v{k:02d}" for k in range(V)]
        if not factors
        else ["|".join(f"{f}={lv}" for f, lv in v.items()) for v in variants]
    )
    provs = list(providers) if providers else [None]
    P = len(provs)
    M, D, I, R = n_models, n_datasets, n_items, n_runs

    difficulty = rng.normal(0.0, item_sd, size=(D, I))
    gold_idx = rng.integers(0, n_choices, size=(D, I))
    input_len = rng.integers(20, 400, size=(D, I))
    prompt_re = rng.normal(0.0, prompt_sd, size=(M, D, V))
    v_eff = np.zeros((M, V))
    for j, v in enumerate(variants):
        e = 0.0
        for f, lv in v.items():
            e += factors[f][lv]  # type: ignore[index]
        for (f, g), table in (interactions or {}).items():
            e += table.get((v.get(f), v.get(g)), 0.0)
        v_eff[:, j] += e
        for mi, m in enumerate(models):
            for f, lv in v.items():
                v_eff[mi, j] += (model_effects or {}).get(m, {}).get(f, {}).get(lv, 0.0)
    p_eff = np.array([(provider_effects or {}).get(p, 0.0) if p else 0.0 for p in provs])

    base = _expit(_logit(acc)[:, None, None] + difficulty[None, :, :])  # M, D, I
    p = (
        base[:, :, None, :, None]  # M D V I P
        + prompt_re[:, :, :, None, None]
        + v_eff[:, None, :, None, None]
        + p_eff[None, None, None, None, :]
    )
    p = np.clip(p, 0.001, 0.999)
    shape = (M, D, V, I, P, R)
    u0 = rng.random(p.shape)
    correct = np.empty(shape, dtype=bool)
    correct[..., 0] = u0 < p
    wrong0 = rng.integers(1, n_choices, size=p.shape)
    wrong = np.empty(shape, dtype=np.int64)
    wrong[..., 0] = wrong0
    raw_alt = np.zeros(shape, dtype=bool)
    for r in range(1, R):
        redraw = rng.random(p.shape) < instability
        fresh = rng.random(p.shape) < p
        fresh_wrong = rng.integers(1, n_choices, size=p.shape)
        correct[..., r] = np.where(redraw, fresh, correct[..., 0])
        wrong[..., r] = np.where(redraw, fresh_wrong, wrong0)
        raw_alt[..., r] = rng.random(p.shape) < raw_instability
    gold_b = np.broadcast_to(gold_idx[None, :, None, :, None, None], shape)
    ans_idx = np.where(correct, gold_b, (gold_b + wrong) % n_choices)

    # flatten in (M, D, V, I, P, R) order
    n = int(np.prod(shape))
    ix = np.indices(shape).reshape(len(shape), n)
    letters = np.array(list(_LETTERS[:n_choices]))
    answer = letters[ans_idx.reshape(n)]
    alt = raw_alt.reshape(n)
    response = np.where(
        alt,
        np.char.add(np.char.add('{"Answer":"', answer), '"}'),
        np.char.add(np.char.add('{"Answer": "', answer), '"}'),
    ).astype(object)
    score = correct.reshape(n).astype(float)
    cols: dict[str, Any] = {
        "model": np.array(models)[ix[0]],
        "dataset": np.array(datasets)[ix[1]],
        "item": ix[3].astype(str),
        "variant": np.array(vnames)[ix[2]],
        "run": ix[5].astype(np.int64),
    }
    if providers:
        cols["model"] = cols["model"]
        cols["variant"] = np.char.add(
            np.char.add(cols["variant"], "|provider="), np.array(provs)[ix[4]]
        )
    error = None
    latency_s = None
    if error_rates:
        error = np.full(n, None, dtype=object)
        prov_of_row = np.array(provs)[ix[4]]
        u = rng.random(n)
        for prov in provs:
            rates = error_rates.get(prov, {})
            lo = 0.0
            rows = prov_of_row == prov
            for cat, rate in rates.items():
                hit = rows & (u >= lo) & (u < lo + rate)
                error[hit] = cat
                lo += rate
        has_err = np.array([e is not None for e in error])
        score = np.where(has_err, 0.0, score)
        answer = np.where(has_err, None, answer.astype(object))
        for i in np.flatnonzero(has_err):
            cat = error[i]
            response[i] = (
                None if cat in ("api_error", "timeout") else ("" if cat == "empty" else '{"Answ')
            )
    if latency:
        latency_s = rng.lognormal(mean=0.0, sigma=0.5, size=n)
        if error is not None:
            latency_s = np.where(error == "timeout", 60.0, latency_s)
    cols["score"] = score
    if factors:
        for f in factors:
            cols[f] = [variants[j][f] for j in ix[2]]
    if providers:
        cols["provider"] = np.array(provs)[ix[4]]
    cols["answer"] = answer.astype(object)
    cols["response"] = response
    cols["gold"] = letters[gold_idx[ix[1], ix[3]]]
    cols["input_len"] = input_len[ix[1], ix[3]].astype(np.int64)
    resp_s = pl.Series("response", response.tolist(), dtype=pl.String)
    cols["output_len"] = resp_s.str.count_matches(r"\S+").cast(pl.Int64)
    if latency_s is not None:
        cols["latency_s"] = latency_s
    if error is not None:
        cols["error"] = pl.Series("error", error.tolist(), dtype=pl.String)

    def _series(name: str, values: Any) -> pl.Series:
        if isinstance(values, pl.Series):
            return values.alias(name)
        if isinstance(values, np.ndarray) and values.dtype == object:
            return pl.Series(name, values.tolist())
        return pl.Series(name, values)

    df = pl.DataFrame([_series(k, v) for k, v in cols.items()])
    casts = {
        "model": pl.String,
        "dataset": pl.String,
        "item": pl.String,
        "variant": pl.String,
        "answer": pl.String,
        "response": pl.String,
        "gold": pl.String,
    }
    return df.with_columns([pl.col(c).cast(t) for c, t in casts.items()])


def unit_table(**kwargs: Any) -> pl.DataFrame:
    """Unit table aggregated from :func:`observations` (same arguments).

    Examples
    --------
    >>> units = unit_table(n_models=2, n_items=50, n_variants=4, seed=0)
    >>> units.select("model", "variant", "n_items").head(2).rows()
    [('m0', 'v00', 50), ('m0', 'v01', 50)]
    """
    from evalstats.aggregate import to_units

    return to_units(observations(**kwargs)).collect()


#: Planted truth of the bundled demo data (accuracy points).
DEMO_TRUTH: dict[str, Any] = {
    "model_accuracy": (0.58, 0.66, 0.70),
    "factors": {
        "template": {"plain": 0.0, "qa": 0.02, "mcq": -0.04, "expert": 0.03},
        "shots": {0: 0.0, 5: 0.08},
        "cot": {False: 0.0, True: 0.05},
        "temperature": {0.0: 0.0, 0.7: 0.0},
        "enumerator": {"capitals": 0.0, "numbers": 0.0},
    },
    "interactions": {("shots", "cot"): {(5, True): -0.04}},
    # the default configuration (template=plain, shots=0, cot=False) flatters m1
    "model_effects": {"m1": {"template": {"plain": 0.08}}},
    "providers": ("provider_a", "provider_b"),
    "provider_effects": {"provider_a": 0.0, "provider_b": -0.02},
    "error_rates": {
        "provider_a": {"api_error": 0.01, "empty": 0.005},
        "provider_b": {"api_error": 0.04, "empty": 0.02, "truncated": 0.02, "timeout": 0.01},
    },
    "instability": 0.04,
    "raw_instability": 0.05,
}


def demo_observations(seed: int = 0) -> pl.DataFrame:
    """The bundled demo data: 3 models, 2 datasets, 24 configurations, 2 providers, 3 runs.

    Planted truth is :data:`DEMO_TRUTH`: ``shots`` (+8 points), ``cot`` (+5), ``template``
    (up to 7), a ``shots:cot`` interaction (-4); ``temperature`` and ``enumerator`` have no effect;
    the default configuration favours ``m1``; ``provider_b`` has more errors and is 2 points worse.

    Examples
    --------
    >>> demo_observations().shape
    (43200, 19)
    """
    t = DEMO_TRUTH
    return observations(
        n_models=3,
        n_datasets=2,
        n_items=50,
        n_variants=24,
        n_runs=3,
        model_accuracy=t["model_accuracy"],
        prompt_sd=0.02,
        factors=t["factors"],
        interactions=t["interactions"],
        model_effects=t["model_effects"],
        design="sample",
        instability=t["instability"],
        raw_instability=t["raw_instability"],
        providers=t["providers"],
        provider_effects=t["provider_effects"],
        error_rates=t["error_rates"],
        latency=True,
        seed=seed,
    )


def crossed_scores(
    *,
    n_models: int = 1,
    n_datasets: int = 1,
    n_items: int = 200,
    n_variants: int = 10,
    n_runs: int = 3,
    item_sd: float = 0.1,
    variant_sd: float = 0.03,
    item_variant_sd: float = 0.05,
    run_sd: float = 0.04,
    mean: float = 0.5,
    seed: int = 0,
) -> pl.DataFrame:
    """Continuous item scores from the crossed random-effects model with planted components.

    ``score = mean + a_item + b_variant + c_(item, variant) + e_(item, variant, run)``, each term
    normal with the given standard deviation, drawn independently per model and dataset (so the
    difference of two models has the sum of their variances). Scores are clipped to [0, 1]; with
    the default standard deviations (total about 0.12 around 0.5) the clip almost never binds.

    Parameters
    ----------
    n_models, n_datasets, n_items, n_variants, n_runs : int
        Sizes. Models are ``m0, m1, ...``, datasets ``d0, ...``, items ``"0", ...``, variants
        ``v00, ...``.
    item_sd, variant_sd, item_variant_sd, run_sd : float
        Standard deviations of the four planted components.
    mean : float, default 0.5
        Grand mean of every model.
    seed : int, default 0

    Returns
    -------
    polars.DataFrame
        Observation table ``model, dataset, item, variant, run, score``.

    Examples
    --------
    >>> crossed_scores(n_items=3, n_variants=2, n_runs=2, seed=0).shape
    (12, 6)
    """
    rng = np.random.default_rng(seed)
    M, D, I, V, R = n_models, n_datasets, n_items, n_variants, n_runs
    y = (
        mean
        + rng.normal(0.0, item_sd, size=(M, D, I, 1, 1))
        + rng.normal(0.0, variant_sd, size=(M, D, 1, V, 1))
        + rng.normal(0.0, item_variant_sd, size=(M, D, I, V, 1))
        + rng.normal(0.0, run_sd, size=(M, D, I, V, R))
    )
    y = np.clip(y, 0.0, 1.0)
    idx = np.indices((M, D, I, V, R)).reshape(5, -1)
    return pl.DataFrame(
        {
            "model": np.array([f"m{k}" for k in range(M)])[idx[0]],
            "dataset": np.array([f"d{k}" for k in range(D)])[idx[1]],
            "item": np.array([str(k) for k in range(I)])[idx[2]],
            "variant": np.array([f"v{k:02d}" for k in range(V)])[idx[3]],
            "run": idx[4].astype(np.int64),
            "score": y.reshape(-1),
        }
    )


def judged_observations(
    *,
    n_models: int = 2,
    n_items: int = 500,
    n_labelled: int = 100,
    model_accuracy: Sequence[float] | None = None,
    sensitivity: float = 0.9,
    false_positive: float = 0.3,
    seed: int = 0,
) -> pl.DataFrame:
    """Observation table scored by a biased LLM judge, with gold scores on a random subset.

    Each model answers ``n_items`` items of one dataset (true correctness ``gold``-scored
    0/1, with shared item difficulty); the judge calls a correct answer correct with
    probability ``sensitivity`` and a wrong one correct with probability ``false_positive``,
    so the judge's mean is biased. ``gold_score`` is the true correctness on ``n_labelled``
    items drawn at random (the same items for every model), null elsewhere.

    Parameters
    ----------
    n_models, n_items, n_labelled : int
        Sizes.
    model_accuracy : sequence of float, optional
        True accuracy of each model (default evenly spaced in 0.55-0.75).
    sensitivity, false_positive : float
        The judge's P(judge = 1 | correct) and P(judge = 1 | wrong).
    seed : int, default 0
        Seed of the random generator.

    Returns
    -------
    polars.DataFrame
        Columns ``model, dataset, item, variant, run, score, gold_score``.

    Examples
    --------
    >>> obs = judged_observations(n_items=50, n_labelled=10, seed=0)
    >>> obs.height, obs["gold_score"].null_count()
    (100, 80)
    """
    rng = np.random.default_rng(seed)
    acc = (
        np.linspace(0.55, 0.75, n_models) if model_accuracy is None else np.asarray(model_accuracy)
    )
    difficulty = rng.normal(0, 1, n_items)
    labelled = np.zeros(n_items, dtype=bool)
    labelled[rng.choice(n_items, size=n_labelled, replace=False)] = True
    frames = []
    for m, a in enumerate(acc):
        truth = (rng.random(n_items) < _expit(_logit(np.array(a)) - difficulty)).astype(float)
        judge = np.where(
            truth == 1, rng.random(n_items) < sensitivity, rng.random(n_items) < false_positive
        ).astype(float)
        frames.append(
            pl.DataFrame(
                {
                    "model": f"m{m}",
                    "dataset": "d0",
                    "item": [str(i) for i in range(n_items)],
                    "variant": "v00",
                    "run": 0,
                    "score": judge,
                    "gold_score": np.where(labelled, truth, np.nan),
                }
            ).with_columns(pl.col("gold_score").fill_nan(None))
        )
    return pl.concat(frames)
