"""Rank uncertainty: rank confidence sets (Mogstad et al.) and P(best); Friedman + Nemenyi CD."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from evalstats._ordered import dense_inverse
from evalstats.compare._paired import (
    _nothing_left,
    _warn_skipped,
    check_pair_count,
    paired_matrix,
)
from evalstats.design._frames import analysis_input
from evalstats.errors import DesignWarning, InsufficientDataError, ParameterError, SchemaError
from evalstats.results import check_confidence_level, check_positive_int
from evalstats.schema import (
    directions,
    higher_is_better,
    metric_info,
    validate_by,
    validate_observations,
    validate_units,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["FriedmanResult", "friedman_nemenyi", "rank_intervals"]


_RANK_METHODS = ("paired", "simultaneous", "marginal", "bootstrap")


#: The groups of the analysis when ``by`` is not given (settings held are added).
_BY = ("dataset", "metric")


def _paired_decisions(observations, *, by, level, seed, over, cluster, variant_factors):
    """The paired tests of :func:`compare_models` (Holm within each group), per group.

    Returns ``{group key: {(a, b): +1 | -1}}``: +1 when ``a`` scores significantly higher than
    ``b`` after the correction, -1 when lower; pairs not decided are absent.
    """
    from evalstats.compare._paired import compare_models

    with warnings.catch_warnings():
        # the report's comparison (or the user's own call) says these; the ranks say their own
        warnings.simplefilter("ignore", DesignWarning)
        try:
            pairs = compare_models(
                observations,
                by=by,
                correction="holm",
                family="group",
                confidence_level=level,
                seed=seed,
                over=over,
                cluster=cluster,
                variant_factors=variant_factors,
            )
        except InsufficientDataError:
            return {}  # no pair to test anywhere: the ranks say why in their own words
    return _decisions_of(pairs, by, level)


def _decisions_of(pairs: pl.DataFrame, by: Sequence[str], level: float) -> dict:
    """``{group key: {(a, b): +1 | -1}}`` from a table of :func:`compare_models` (Holm, group)."""
    need = ("model_a", "model_b", "difference", "reject", "correction", "family")
    missing = [c for c in need if c not in pairs.columns]
    if missing:
        raise ParameterError(
            f"`pairs` must be a table of compare_models(); it lacks column {missing[0]!r}."
        )
    if pairs.height:
        corrections = set(pairs["correction"].unique().to_list())
        groups = pairs.select([c for c in by if c in pairs.columns]).n_unique()
        families = set(pairs["family"].unique().to_list())
        if corrections != {"holm"} or (families != {"group"} and groups > 1):
            raise ParameterError(
                "`pairs` must come from compare_models(correction='holm', family='group') "
                f"for the rank sets to hold; got correction {sorted(corrections)} and family "
                f"{sorted(families)}."
            )
        if "confidence_level" in pairs.columns:
            levels = set(pairs["confidence_level"].unique().to_list())
            if levels != {level}:
                raise ParameterError(
                    f"`pairs` were decided at confidence level {sorted(levels)}, the rank sets "
                    f"are asked at {level}."
                )
    keys = [c for c in by if c in pairs.columns]
    out: dict[tuple, dict[tuple[str, str], int]] = {}
    for row in pairs.filter(pl.col("reject")).iter_rows(named=True):
        key = tuple(row[c] for c in keys)
        sign = 1 if row["difference"] > 0 else -1
        out.setdefault(key, {})[(row["model_a"], row["model_b"])] = sign
    return out


def _rank_sets_from_decisions(
    models: list[str], decided: dict[tuple[str, str], int], hib: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Rank sets from pairwise decisions: rank_low = 1 + #above, rank_high = M - #below."""
    index = {m: i for i, m in enumerate(models)}
    above = np.zeros(len(models), dtype=np.int64)  # models significantly better than j
    below = np.zeros(len(models), dtype=np.int64)  # models significantly worse than j
    for (a, b), sign in decided.items():
        if a not in index or b not in index:
            continue
        a_better = (sign > 0) == hib
        better, worse = (a, b) if a_better else (b, a)
        above[index[worse]] += 1
        below[index[better]] += 1
    return 1 + above, len(models) - below


def _two_way_inputs(cells, models: list[str], forced: bool = False):
    """The shared (item, prompt) cells of ``models`` when a group has 3 or more prompts.

    None when the group has fewer (2 with ``forced``, ``over='prompt-space'``), as
    :func:`compare_models` decides per group; ``False`` when
    the models share cells on fewer than 2 items (no prompt in common): they are then ranked
    over their recorded prompts.
    """
    from evalstats.compare._intervals import MIN_PROMPTS

    if cells is None:
        return None
    table, clustered = cells
    if table["__p"].n_unique() < (2 if forced else MIN_PROMPTS):
        return None  # as compare_models: 2 prompt variants in the group, the recorded ones
    index = ["__item", "__p", *(["__g"] if clustered else [])]
    wide = (
        table.with_columns(pl.col("model").cast(pl.String))
        .pivot(on="model", index=index, values="__y", sort_columns=True)
        .drop_nulls(list(models))
        .sort("__item", "__p")
    )
    if wide["__item"].n_unique() < 2:
        return False
    return wide, clustered


def _two_way(inputs, models: list[str], sign: float, n_resamples: int, rng):
    """Means over the prompt space, two-way bootstrap means and the design's pairwise SEs."""
    from evalstats.compare._design_var import design_variance

    wide, clustered = inputs
    ic = dense_inverse(wide["__item"].to_numpy())[1]
    pc = dense_inverse(wide["__p"].to_numpy())[1]
    n_i, n_p = int(ic.max()) + 1, int(pc.max()) + 1
    y = wide.select(models).to_numpy().astype(float)  # cells x models
    grid = np.zeros((len(models), n_i, n_p))
    grid[:, ic, pc] = y.T
    seen = np.zeros((n_i, n_p))
    seen[ic, pc] = 1.0
    observed = ((grid * seen).sum(axis=2) / seen.sum(axis=1)).mean(axis=1)
    gcodes = None
    if clustered:
        gcodes = np.zeros(n_i, dtype=np.int64)
        gc = dense_inverse(wide["__g"].to_numpy())[1]
        gcodes[ic] = gc
    boot = np.empty((n_resamples, len(models)))
    for start in range(0, n_resamples, 64):
        b = min(64, n_resamples - start)
        if gcodes is None:
            w = np.stack([np.bincount(r, minlength=n_i) for r in rng.integers(0, n_i, (b, n_i))])
        else:
            g = int(gcodes.max()) + 1
            cw = np.stack([np.bincount(r, minlength=g) for r in rng.integers(0, g, (b, g))])
            w = cw[:, gcodes]
        v = np.stack([np.bincount(r, minlength=n_p) for r in rng.integers(0, n_p, (b, n_p))])
        den = v @ seen.T  # b x items: the weight of each item's drawn prompts
        num = np.einsum("kip,bp->bki", grid * seen, v)
        ok = den > 0
        m = np.where(ok[:, None, :], num / np.where(ok, den, 1.0)[:, None, :], 0.0)
        wk = (w * ok).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):  # no item under a drawn prompt: NaN
            boot[start : start + b] = (
                sign * (m * wk[:, None, :]).sum(axis=2) / wk.sum(axis=1)[:, None]
            )
    k = len(models)
    se = np.zeros((k, k))
    clusters = wide["__g"].to_numpy() if clustered else None
    from evalstats.compare._paired import pool_prompt_part

    index = [(j, j2) for j in range(k) for j2 in range(j + 1, k)]
    designs = pool_prompt_part(  # the pairs' prompt part floored as compare_models does
        [(design_variance(ic, pc, y[:, j] - y[:, j2], clusters=clusters),) for j, j2 in index]
    )
    for (j, j2), (mv,) in zip(index, designs, strict=True):
        se[j, j2] = se[j2, j] = math.sqrt(max(mv.var, 0.0))
    return observed, boot, se, n_p


def _pairwise_rank_sets(
    x: np.ndarray,
    boot_means: np.ndarray,
    level: float,
    simultaneous: bool,
    clusters: np.ndarray | None = None,
    se: np.ndarray | None = None,
    theta: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rank sets from max-t intervals of all pairwise differences (Mogstad et al. 2024).

    ``x``: items x models, oriented so that larger is better; ``boot_means``: resampled model
    means (same orientation). Returns ``(rank_low, rank_high)``.
    """
    n, k = x.shape
    if se is not None:  # the design's SEs of the pairwise differences (prompt space)
        return _rank_sets_from(np.asarray(theta, dtype=float), boot_means, se, level, simultaneous)
    theta = x.mean(axis=0)
    if clusters is None:
        cov = np.cov(x, rowvar=False, ddof=1).reshape(k, k) / n
    else:  # cluster-robust (CR1): the covariance of the means from the cluster sums
        g = int(clusters.max()) + 1
        dev = x - theta
        sums = np.stack([np.bincount(clusters, weights=dev[:, j], minlength=g) for j in range(k)])
        cov = (sums @ sums.T) * g / max(g - 1, 1) / n**2
    var_d = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    se = np.sqrt(np.maximum(var_d, 0.0))  # SE of the paired mean difference j - k
    return _rank_sets_from(theta, boot_means, se, level, simultaneous)


def _rank_sets_from(
    theta: np.ndarray, boot_means: np.ndarray, se: np.ndarray, level: float, simultaneous: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Rank sets from studentized bootstrap max-t over pairwise differences (SEs given)."""
    k = theta.size
    diff = theta[:, None] - theta[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        # bootstrap deviations of every difference, studentized by the sample SE
        dev = (boot_means[:, :, None] - boot_means[:, None, :]) - diff[None]
        t = np.abs(dev) / se[None]
    t = np.where(se[None] > 0, t, 0.0)  # identical models: their difference is exactly 0
    q = level
    if simultaneous:
        return _stepdown_rank_sets(theta, dev, se, level)
    else:
        crit = np.array(
            [np.quantile(np.delete(t[:, j, :], j, axis=1).max(axis=1), q) for j in range(k)]
        )
    # k significantly better than j: theta_k - theta_j - c se > 0
    c = crit[:, None]
    better = (-diff - c * se > 0) & (se > 0)  # [j, k]: model k above model j
    worse = (diff - c * se > 0) & (se > 0)  # [j, k]: model j above model k
    low = 1 + better.sum(axis=1)
    high = k - worse.sum(axis=1)
    return low.astype(np.int64), high.astype(np.int64)


def _stepdown_rank_sets(
    theta: np.ndarray, dev: np.ndarray, se: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Rank sets from the step-down max-t test of the directional claims (Romano-Wolf).

    Hypotheses :math:`H_{jk}: \theta_j \le \theta_k` for every ordered pair, statistics
    :math:`T_{jk} = (\hat\theta_j - \hat\theta_k)/\hat\sigma_{jk}`. Step 1 rejects those above
    the ``level`` quantile of :math:`\max_{(j,k)} D^*_{jk}/\hat\sigma_{jk}` over all ordered
    pairs (:math:`D^*` the bootstrap deviation of the difference), which is the single-step
    max-t of Mogstad et al.; each further step takes the quantile over the hypotheses not yet
    rejected, until none is added. It controls the family-wise error of the claims "j above
    k" as the single step does (Romano and Wolf 2005; the stepwise refinement in Mogstad et
    al. 2024, Section 3.3), and rejects at least as many.
    """
    k = theta.size
    diff = theta[:, None] - theta[None, :]
    ok = se > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(ok, diff / np.where(ok, se, 1.0), -np.inf)
        null = np.where(ok[None], dev / np.where(ok, se, 1.0)[None], -np.inf)
    active = ok & ~np.eye(k, dtype=bool)
    above = np.zeros((k, k), dtype=bool)  # [j, m]: model j significantly above model m
    while active.any():
        crit = np.quantile(np.where(active[None], null, -np.inf).max(axis=(1, 2)), level)
        new = active & (stat > crit)
        if not new.any():
            break
        above |= new
        active &= ~new
    low = 1 + above.sum(axis=0)  # models above j
    high = k - above.sum(axis=1)  # models below j
    return low.astype(np.int64), high.astype(np.int64)


def rank_intervals(
    observations: TableLike,
    *,
    method: str = "paired",
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    by: Sequence[str] | None = None,
    cluster: str | None = None,
    over: str = "auto",
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
    pairs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    r"""Rank of each model with a confidence set and the probability of being best.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Item-level observation table; see :mod:`evalstats.schema`.
    method : {'paired', 'simultaneous', 'marginal', 'bootstrap'}, default 'paired'
        ``'paired'``: rank sets from the paired tests of :func:`compare_models` with Holm's
        correction over all pairs of the group (the same test, design and interval target), so
        a rank set separates two models exactly when their paired comparison does; they hold
        for every model of a group at once with probability ``confidence_level`` (a step-down
        version of Mogstad et al.'s construction). ``'simultaneous'``: rank sets that hold for every model of a group at once with
        probability ``confidence_level`` (Mogstad, Romano, Shaikh and Wilhelm 2024), from
        the step-down max-t test of the directional claims (its first step the simultaneous
        max-t intervals of all pairwise differences). ``'marginal'``: each model's
        rank set holds with that probability on its own (max-t over the pairs involving the
        model). ``'bootstrap'``: quantiles of the model's rank over bootstrap resamples (no
        coverage guarantee: see Notes).
    confidence_level : float, default 0.95
        Level of the rank sets.
    n_resamples : int, default 1000
        Bootstrap resamples of the items.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, optional
        Columns that define the groups; models are ranked within each group. Default:
        ``('dataset', 'metric')`` and every setting held fixed that varies (see
        :mod:`evalstats.factors`). Given explicitly, exactly these groups.
    cluster : str, optional
        Column naming the cluster of each item (default: the ``cluster`` column when the table
        has one, as the design gives it). With clusters the bootstrap resamples whole clusters
        (items of one passage together) and the pairwise differences are studentized by their
        cluster-robust standard errors; ``n_clusters`` says how many.
    over : {'auto', 'recorded-prompts', 'prompt-space'}, default 'auto'
        With three or more prompt variants in a group (two with ``'prompt-space'``; with two
        ``'auto'`` ranks over the recorded prompts, as :func:`compare_models` compares), ``'auto'`` ranks the models' means over
        the prompt space: the bootstrap resamples items (or clusters) and prompt variants
        independently (a two-way bootstrap, Owen 2007; slightly conservative) and the pairwise
        differences are studentized by the design's variance (model x prompt interaction
        included, as :func:`compare_models`) on the (item, prompt) cells every model of the
        group has; ``n_prompts`` says how many prompts. When the models share no prompt
        variant on 2 or more items, the group is ranked over the recorded prompts instead
        (``n_prompts`` null) and a :class:`DesignWarning` names it.
        ``'recorded-prompts'`` ranks the means over the recorded prompts (items resampled).
    variant_factors : sequence of str, str or None, default None
        Which factor columns make the prompt variants (settings are not prompts; see
        :mod:`evalstats.factors`).
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.
    pairs : polars.DataFrame, optional
        For ``method='paired'``: the table of :func:`compare_models` with
        ``correction='holm'`` and ``family='group'`` on the same table and groups, whose
        decisions the rank sets then follow instead of running the tests again (the report
        passes its per-dataset comparison).

    Returns
    -------
    polars.DataFrame
        One row per group and model with ``n_items, n_items_dropped, score, rank, rank_low,
        rank_high, p_best, higher_is_better, method, confidence_level, n_resamples, seed``; rank 1
        is the best: the highest mean score, or the lowest for a metric where lower is better.
        ``n_items_dropped`` counts the group's items left out because some model lacks them.

    Raises
    ------
    InsufficientDataError
        No group has 2 models sharing 2 items. A group with a single model (or fewer than 2
        items every model has) is left out with a :class:`DesignWarning`, and the others
        are ranked.

    Warns
    -----
    DesignWarning
        Items that not every model of a group has are left out (``n_items_dropped``): the
        ranking is over the shared items only. Models that share no prompt variant are ranked
        over their recorded prompts.

    Notes
    -----
    Items are resampled **jointly** across models (one index draw per resample applied to
    every model), which keeps the item pairing. With :math:`\hat\theta_j` the model means,
    :math:`\hat\sigma_{jk}` the standard error of the paired mean difference over items and
    :math:`c` the ``confidence_level`` quantile of
    :math:`\max_{(j,k)} |(\hat\theta^*_j - \hat\theta^*_k) - (\hat\theta_j - \hat\theta_k)|
    / \hat\sigma_{jk}` over resamples (all pairs for ``'simultaneous'``, the pairs of model
    :math:`j` for ``'marginal'``), model :math:`k` is significantly above :math:`j` when
    :math:`\hat\theta_k - \hat\theta_j > c\,\hat\sigma_{jk}`, and

    .. math:: \text{rank\_low}_j = 1 + \#\{k: k \text{ above } j\},\quad
                ext{rank\_high}_j = M - \#\{k: j \text{ above } k\}.

    These sets cover the true ranks (ties sharing the rank set) with probability at least the
    level, asymptotically, because they follow from simultaneous intervals of the
    differences [1]_. ``'simultaneous'`` then steps down (their stepwise refinement): the
    quantile is recomputed over the one-sided claims not yet made until none is added, which
    keeps the family-wise error of the claims and never gives a wider set.
    ``'paired'`` (the default) uses the same formula with "above" read from the paired tests
    of :func:`compare_models` (``correction='holm'``, ``family='group'``): exact McNemar for
    0/1 scores, the design-aware t otherwise, on the pair's shared items. Holm controls the
    family-wise error of the directional claims, so the sets cover jointly as above, and they
    cannot disagree with the paired table: at 3 shared items no pair is decided and every set
    is ``1..M``, where a bootstrap max-t (``'simultaneous'``) claims separations from 3 items.
    ``'bootstrap'`` takes the ``(1 - level)/2`` quantiles of each model's rank over resamples
    (ties share the best rank, ``method='min'``, ``inverted_cdf``). It is the usual heuristic,
    but bootstrap ranks are inconsistent when models are close (Hall and Miller 2009), and it
    has no joint guarantee. ``p_best`` is the share of resamples in which the model has the
    best mean (ties split evenly). Only items every model answered are used.
    Checked against: planted rankings and a coverage simulation
    (``tests/compare/test_ranks.py``).

    References
    ----------
    .. [1] M. Mogstad, J. P. Romano, A. M. Shaikh and D. Wilhelm, "Inference for ranks with
       applications to mobility across neighbourhoods and academic achievement across
       countries", Review of Economic Studies 91 (2024).
    .. [2] P. Hall and H. Miller, "Using the bootstrap to quantify the authority of an
       empirical ranking", Annals of Statistics 37 (2009).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=3, n_items=200, model_accuracy=(0.5, 0.68, 0.7), seed=0)
    >>> cols = ("model", "rank", "rank_low", "rank_high")
    >>> rank_intervals(obs, n_resamples=200, over="recorded-prompts").select(cols).rows()
    [('m0', 3, 3, 3), ('m1', 2, 2, 2), ('m2', 1, 1, 1)]
    >>> rank_intervals(obs, n_resamples=200).select(cols).rows()  # over the 20 prompts' space
    [('m0', 3, 3, 3), ('m1', 2, 1, 2), ('m2', 1, 1, 2)]
    """
    _input = analysis_input(observations, roles=roles, design=design)
    given_factors = variant_factors
    observations, variant_factors = _input.table, _input.variant_factors(variant_factors)
    from evalstats.results import check_choice

    check_choice("method", method, _RANK_METHODS)
    level = check_confidence_level(confidence_level)
    n_resamples = check_positive_int("n_resamples", n_resamples)
    by = (
        _input.held_by(_BY, given_factors)
        if by is None
        else ((by,) if isinstance(by, str) else tuple(by))
    )
    if method == "paired" and pairs is None:
        # every pair is tested: refused before the wide table of one column per model is
        # built (a pivot of 20,000 models took 26 s before the same refusal)
        check_pair_count(observations, by, what="ranking models")
    wide = paired_matrix(observations, paired_on="items", by=by)
    obs = validate_observations(observations, check_values=False)
    direction = directions(obs, by)
    names = obs.collect_schema().names()
    if cluster is None and "cluster" in names:
        cluster = "cluster"
    elif cluster is None:
        from evalstats.compare._intervals import warn_cluster_candidates

        warn_cluster_candidates(obs)
    cluster_of = None
    if cluster is not None:
        if cluster not in names:
            raise SchemaError(f"`cluster` names {cluster!r}, which is not a column of the table.")
        cluster_of = (
            obs.group_by("dataset", "item")
            .agg(pl.col(cluster).first().cast(pl.String).alias("__g"))
            .collect()
        )
    from evalstats.compare._paired import _design_cells

    check_choice("over", over, ("auto", "recorded-prompts", "prompt-space"))
    prompt_cells = (
        _design_cells(observations, by, "model", cluster, variant_factors)
        if over != "recorded-prompts"
        else {}
    )
    if method != "paired":
        decisions = {}
    elif pairs is not None:
        decisions = _decisions_of(pairs, by, level)
    else:
        decisions = _paired_decisions(
            observations,
            by=by,
            level=level,
            seed=seed,
            over=over,
            cluster=cluster,
            variant_factors=variant_factors,
        )
    rng = np.random.default_rng(seed)
    q = (1 - level) / 2
    frames = []
    dropped: list[str] = []
    recorded: list[str] = []
    skipped: list[str] = []
    n_dropped_total = 0
    for key, w in wide.items():
        unit = [c for c in ("dataset", "item") if c in w.columns and c not in by]
        models = [c for c in w.columns if c not in unit]
        complete = w.drop_nulls(models)
        x = complete.select(models).to_numpy()
        n = x.shape[0]
        codes = None
        if cluster_of is not None:
            # items are keyed by (dataset, item): the same item id in two datasets is two items
            # (the group's dataset, when grouped by it, is the key's, not a column of `w`)
            fixed = {b_: k for b_, k in zip(by, key) if b_ == "dataset"}
            keyed = complete.with_columns(
                *(pl.lit(v, dtype=cluster_of.schema[b_]).alias(b_) for b_, v in fixed.items())
            )
            on = [c for c in ("dataset", "item") if c in keyed.columns]
            labels = keyed.select(on).join(cluster_of.select(*on, "__g"), on=on, how="left")
            _, codes = np.unique(labels["__g"].fill_null("").to_numpy(), return_inverse=True)
        n_dropped = w.height - n
        where = ", ".join(f"{b}={k!r}" for b, k in zip(by, key))
        if n < 2 or len(models) < 2:
            # a dataset with one model (or no shared items) leaves the others' ranks as they are
            skipped.append(
                f"rank intervals need at least 2 models and 2 shared items"
                f"{' in ' + where if where else ''}; got {len(models)} model(s) "
                f"({', '.join(map(str, models))}) and {n} shared item(s)"
            )
            continue
        if n_dropped:
            n_dropped_total += n_dropped
            dropped.append(f"{where or 'all'}: {n_dropped} of {w.height}")
        observed = x.mean(axis=0)
        hib = higher_is_better(direction, key)
        sign = 1.0 if hib else -1.0  # rank 1 is the best: the highest, or the lowest error
        two_way = _two_way_inputs(prompt_cells.get(key), models, over == "prompt-space")
        if two_way is False:
            recorded.append(", ".join(f"{b}={k!r}" for b, k in zip(by, key)) or "all")
            two_way = None
        n_prompts = None
        se = None
        if two_way is not None:
            observed, boot_means, se, n_prompts = _two_way(two_way, models, sign, n_resamples, rng)
        ranks_obs = stats.rankdata(-sign * observed, method="min")
        if two_way is not None:
            pass  # drawn above, items and prompts together
        elif codes is None:
            boot_means = np.empty((n_resamples, len(models)))
            chunk = max(1, int(2e7 // max(n * len(models), 1)))
            for start in range(0, n_resamples, chunk):
                b = min(chunk, n_resamples - start)
                idx = rng.integers(0, n, size=(b, n))
                boot_means[start : start + b] = sign * x[idx].mean(axis=1)  # larger wins
        else:  # whole clusters resampled: the items of one passage stay together
            boot_means = np.empty((n_resamples, len(models)))
            g = int(codes.max()) + 1
            sums = np.stack([np.bincount(codes, weights=x[:, j], minlength=g) for j in
                             range(x.shape[1])], axis=1)  # fmt: skip
            sizes = np.bincount(codes, minlength=g).astype(float)
            for start in range(0, n_resamples, 4096):
                b = min(4096, n_resamples - start)
                draw = rng.integers(0, g, size=(b, g))
                counts = np.stack([np.bincount(r, minlength=g) for r in draw]).astype(float)
                boot_means[start : start + b] = sign * (counts @ sums) / (counts @ sizes)[:, None]
        # a two-way resample can draw prompts no drawn item was run under (a sparse grid): it
        # has no means and is left out of P(best) and the bootstrap rank sets
        usable = np.isfinite(boot_means).all(axis=1)
        n_usable = int(usable.sum())
        boot_means = boot_means[usable]
        best = boot_means == boot_means.max(axis=1, keepdims=True)
        p_best = (best / best.sum(axis=1, keepdims=True)).sum(axis=0)
        if method == "paired":
            low, high = _rank_sets_from_decisions(models, decisions.get(key, {}), hib)
        elif method == "bootstrap":
            boot_ranks = stats.rankdata(-boot_means, method="min", axis=1)
            low = np.quantile(boot_ranks, q, axis=0, method="inverted_cdf")
            high = np.quantile(boot_ranks, 1 - q, axis=0, method="inverted_cdf")
        else:
            low, high = _pairwise_rank_sets(
                sign * x,
                boot_means,
                level,
                simultaneous=method == "simultaneous",
                clusters=codes,
                se=se,
                theta=None if se is None else sign * observed,
            )
        frames.append(
            pl.DataFrame(
                {
                    **{b_: [k] * len(models) for b_, k in zip(by, key)},
                    "model": models,
                    "n_items": [n] * len(models),
                    "n_clusters": [None if codes is None else int(codes.max()) + 1] * len(models),
                    "n_prompts": [n_prompts] * len(models),
                    "n_items_dropped": [n_dropped] * len(models),
                    "score": observed.astype(float),
                    "rank": ranks_obs.astype(np.int64),
                    "rank_low": low.astype(np.int64),
                    "rank_high": high.astype(np.int64),
                    "p_best": p_best / n_usable if n_usable else np.full(len(models), np.nan),
                    "higher_is_better": [hib] * len(models),
                }
            )
        )
    if not frames:
        raise InsufficientDataError(_nothing_left(skipped, "no models to rank"))
    _warn_skipped(
        skipped,
        "rank intervals skipped where there is nothing to rank",
        "the other groups are ranked",
    )
    if n_dropped_total:
        shown = "; ".join(dropped[:3]) + (" ..." if len(dropped) > 3 else "")
        warnings.warn(
            f"rank intervals: {n_dropped_total} item(s) that not every model has are left out "
            f"(counted in `n_items_dropped`; {shown}); models are ranked on the shared items.",
            DesignWarning,
            stacklevel=2,
        )
    if recorded:
        shown = "; ".join(recorded[:3]) + (" ..." if len(recorded) > 3 else "")
        warnings.warn(
            f"rank intervals: in {len(recorded)} group(s) the models share no prompt variant on "
            f"2 or more items ({shown}): they are ranked over their own recorded prompts "
            "(`n_prompts` is null), where a prompt effect cannot be told from a model's.",
            DesignWarning,
            stacklevel=2,
        )
    out = pl.concat(frames, how="vertical_relaxed").with_columns(
        pl.lit(method).alias("method"),
        pl.lit(level).alias("confidence_level"),
        pl.lit(n_resamples, dtype=pl.Int64).alias("n_resamples"),
        pl.lit(seed, dtype=pl.Int64).alias("seed"),
    )
    return out.sort([*by, "model"])


@dataclass(frozen=True, slots=True)
class FriedmanResult:
    """Friedman test across blocks (chi-square and Iman-Davenport F) with the Nemenyi CD."""

    statistic: float
    pvalue: float
    f_statistic: float
    f_pvalue: float
    n_blocks: int
    n_models: int
    critical_difference: float
    confidence_level: float
    blocks: tuple[str, ...]
    column: str
    ranks: pl.DataFrame
    #: Blocks left out because some compared values have no score there: the block columns and
    #: ``missing`` (the values without a score, comma-separated); empty when none was dropped.
    dropped_blocks: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def n_dropped_blocks(self) -> int:
        """Blocks left out (some compared value has no score in them)."""
        return self.dropped_blocks.height

    def to_frame(self) -> pl.DataFrame:
        """One row per compared value: ``model, mean_rank, score`` plus the tests' fields."""
        return self.ranks.with_columns(
            pl.lit(self.statistic).alias("statistic"),
            pl.lit(self.pvalue).alias("pvalue"),
            pl.lit(self.f_statistic).alias("f_statistic"),
            pl.lit(self.f_pvalue).alias("f_pvalue"),
            pl.lit(self.critical_difference).alias("critical_difference"),
            pl.lit(self.n_blocks, dtype=pl.Int64).alias("n_blocks"),
            pl.lit(self.confidence_level).alias("confidence_level"),
            pl.lit(", ".join(self.blocks)).alias("blocks"),
            pl.lit(self.column).alias("compared"),
        )


def iman_davenport(chi2: float, n: int, k: int) -> tuple[float, float]:
    """Iman-Davenport ``F_F = (N-1) chi2 / (N(k-1) - chi2)`` and its p-value on (k-1, (k-1)(N-1)).

    Examples
    --------
    >>> f, p = iman_davenport(9.28, 14, 4)  # Demsar (2006), Section 3.2.2: F_F = 3.69
    >>> round(f, 2)
    3.69
    """
    if math.isnan(chi2):
        return math.nan, math.nan
    denom = n * (k - 1) - chi2
    if denom <= 0:  # every block ranks the models identically
        return math.inf, 0.0
    f_stat = (n - 1) * chi2 / denom
    return float(f_stat), float(stats.f.sf(f_stat, k - 1, (k - 1) * (n - 1)))


def _higher_is_better(frame: pl.DataFrame, blocks: Sequence[str]):
    """``key -> bool``: whether higher scores are better in the block ``key`` (its metric's)."""
    infos = metric_info(frame)
    hib = {name: info.higher_is_better for name, info in infos.items()}
    position = list(blocks).index("metric") if "metric" in blocks else None
    if position is None and len(set(hib.values())) > 1:
        raise ParameterError(
            f"the table mixes metrics where higher is better and where lower is better "
            f"({', '.join(map(repr, hib))}); add 'metric' to `blocks` to rank them apart."
        )

    def of(key: Sequence[object]) -> bool:
        if position is not None:
            return hib.get(str(key[position]), True)
        return next(iter(hib.values()), True)

    return of


#: Demsar (2006): the chi-square approximation is for "N > 10 and k > 5"; fewer blocks warn
_FRIEDMAN_MIN_BLOCKS = 10


def friedman_nemenyi(
    units: TableLike,
    *,
    blocks: Sequence[str] = ("dataset", "metric"),
    column: str = "model",
    confidence_level: float = 0.95,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> FriedmanResult:
    r"""Friedman test of model ranks across blocks, Iman-Davenport F and the Nemenyi CD.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table, or observation table (needed when ``blocks`` includes ``item``); see
        :mod:`evalstats.schema`.
    blocks : tuple of str, default ('dataset', 'metric')
        Columns whose combinations are the blocks: ``('dataset', 'metric')`` (benchmarks as
        blocks) or ``('dataset', 'metric', 'item')`` (items as blocks: the usual omnibus test of
        several models on one benchmark). Within each block the best score ranks 1: the highest,
        or the lowest for a metric where lower is better. Each block's score is the mean over everything else (variants, runs).
        Blocks must be **independent units**: prompt variants of one task share its items, so
        ``('dataset', 'variant')`` blocks are not independent (a warning says so) and make the
        test and the critical difference far too optimistic.
    column : str, default 'model'
        The column whose values are ranked within each block: models, or any factor (prompt
        templates, providers).
    confidence_level : float, default 0.95
        ``1 - alpha`` of the Nemenyi critical difference.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    FriedmanResult
        ``statistic``, ``pvalue`` (:func:`scipy.stats.friedmanchisquare`, tie-corrected),
        ``f_statistic``, ``f_pvalue`` (Iman-Davenport), ``critical_difference`` and ``ranks``
        (mean rank per compared value, 1 = best; its ``model`` column holds the values of
        ``column``); ``dropped_blocks`` (blocks left out because some compared value has no
        score there, with the values missing).

    Raises
    ------
    InsufficientDataError
        Fewer than 3 compared values or 2 blocks where every value has a score.

    Warns
    -----
    DesignWarning
        Fewer than 10 blocks (the chi-square approximation is poor; prefer ``f_pvalue``), or
        variant blocks without items (not independent), or blocks left out because some
        compared value has no score there (named, with the values missing).

    Notes
    -----
    Demšar (2006): with :math:`k` models and :math:`N` blocks, Friedman's :math:`\chi^2_F` and
    the Iman-Davenport statistic :math:`F_F = (N-1)\chi^2_F / (N(k-1) - \chi^2_F)` on
    :math:`(k-1, (k-1)(N-1))` degrees of freedom, which Demšar recommends over the
    conservative :math:`\chi^2_F`. Nemenyi: :math:`CD = q_\alpha \sqrt{k(k+1)/(6N)}` where
    :math:`q_\alpha` is the studentized range quantile :math:`q_{1-\alpha}(k, \infty)/\sqrt 2`.
    Two models whose mean ranks differ by more than CD differ significantly. Only blocks in
    which every model has a score are used; the others are named in ``dropped_blocks`` and a
    DesignWarning. Ties (e.g. 0/1 item scores) get mid-ranks and
    scipy's tie correction of :math:`\chi^2_F`.
    Checked against: Demšar's Table 5 values of :math:`q_{0.05}`, scipy's Friedman test, and the
    Iman-Davenport formula (``tests/compare/test_ranks.py``).

    References
    ----------
    .. [1] J. Demšar, "Statistical comparisons of classifiers over multiple data sets",
       JMLR 7 (2006).
    .. [2] R. L. Iman and J. M. Davenport, "Approximations of the critical region of the
       Friedman statistic", Communications in Statistics 9 (1980).

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=4, n_datasets=12, n_items=50, n_variants=2, seed=0)
    >>> res = friedman_nemenyi(units)
    >>> res.n_blocks, round(res.critical_difference, 4)
    (12, 1.354)
    """
    units = analysis_input(units, roles=roles, design=design).table
    level = check_confidence_level(confidence_level)
    frame = units.lazy() if isinstance(units, pl.DataFrame) else units
    blocks = (blocks,) if isinstance(blocks, str) else tuple(blocks)
    names = frame.collect_schema().names()
    if "item" in names:
        lf = validate_observations(frame, require_item="item" in blocks)
    else:
        lf = validate_units(frame)
    names = lf.collect_schema().names()
    table = "observation table" if "item" in names else "unit table"
    blocks = validate_by(names, blocks, table=table)
    validate_by(names, (column,), table=table)
    if column in blocks:
        raise ParameterError(f"`column` {column!r} is also a block column.")
    if "variant" in blocks and "item" not in blocks:
        warnings.warn(
            "blocks include 'variant' but not 'item': prompt variants of one task share its "
            "items, so such blocks are not independent and the test is too optimistic. Use "
            "blocks=('dataset',) or ('dataset', 'item').",
            DesignWarning,
            stacklevel=2,
        )
    # units collected first and blocks sorted: the same floats are added in the same order on
    # every call (inside one lazy plan polars may order them differently, moving the last bit)
    collected = lf.collect()
    hib_of = _higher_is_better(collected, blocks)
    scores = (
        collected.select([*blocks, column, "score"])
        .with_columns(pl.col(column).cast(pl.String))
        .group_by([*blocks, column])
        .agg(pl.col("score").mean())
        .sort([*blocks, column])
    )
    wide = scores.pivot(on=column, index=list(blocks), values="score", sort_columns=True)
    models = [c for c in wide.columns if c not in blocks]
    x = wide.select(models).drop_nulls().to_numpy()
    keys = wide.drop_nulls(models).select(blocks).rows()
    dropped = _dropped_blocks(wide, list(blocks), models)
    if dropped.height:
        shown = "; ".join(
            f"{'/'.join(str(r[b]) for b in blocks)} (no {r['missing']})"
            for r in dropped.head(5).iter_rows(named=True)
        )
        more = f" and {dropped.height - 5} more" if dropped.height > 5 else ""
        warnings.warn(
            f"Friedman ranks over {x.shape[0]} of {wide.height} blocks: {dropped.height} left "
            f"out because some values of {column!r} have no score there: {shown}{more}.",
            DesignWarning,
            stacklevel=2,
        )
    sign = np.array([1.0 if hib_of(k) else -1.0 for k in keys])
    x = sign[:, None] * x  # oriented so that larger is better in every block
    k, n = len(models), x.shape[0]
    if k < 3 or n < 2:
        raise InsufficientDataError(
            f"the Friedman test needs at least 3 values of {column!r} and 2 complete blocks; "
            f"got {k} and {n} blocks ({', '.join(blocks)})."
        )
    if n < _FRIEDMAN_MIN_BLOCKS:
        warnings.warn(
            f"Friedman test on {n} blocks: below {_FRIEDMAN_MIN_BLOCKS} the chi-square "
            "approximation is poor; read the Iman-Davenport `f_pvalue`, and treat both as "
            "approximate.",
            DesignWarning,
            stacklevel=2,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-tied blocks: scipy divides by 0
        res = stats.friedmanchisquare(*x.T)
    chi2 = float(res.statistic)
    f_stat, f_p = iman_davenport(chi2, n, k)
    ranks = stats.rankdata(-x, axis=1)  # rank 1 is the best in each block
    q = stats.studentized_range.ppf(level, k, np.inf) / math.sqrt(2)
    cd = float(q * math.sqrt(k * (k + 1) / (6 * n)))
    rank_frame = pl.DataFrame(
        {"model": models, "mean_rank": ranks.mean(axis=0), "score": (sign[:, None] * x).mean(0)}
    ).sort("model")
    return FriedmanResult(
        statistic=chi2,
        pvalue=float(res.pvalue),
        f_statistic=float(f_stat),
        f_pvalue=float(f_p),
        n_blocks=n,
        n_models=k,
        critical_difference=cd,
        confidence_level=level,
        blocks=tuple(blocks),
        column=column,
        ranks=rank_frame,
        dropped_blocks=dropped,
    )


def _dropped_blocks(wide: pl.DataFrame, blocks: list[str], models: list[str]) -> pl.DataFrame:
    """Blocks with a missing score, and which compared values are missing there."""
    incomplete = wide.filter(pl.any_horizontal(pl.col(m).is_null() for m in models))
    missing = [
        ", ".join(m for m in models if row[m] is None) for row in incomplete.iter_rows(named=True)
    ]
    return incomplete.select(blocks).with_columns(pl.Series("missing", missing, dtype=pl.String))
