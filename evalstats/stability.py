"""Run-to-run stability: accuracy spread over identical runs, TARa@N / TARr@N, TAR@k curves.

Atil et al. ("LLM Stability: A detailed analysis with some surprises") run the same inputs N
times under deterministic settings and ask how much the results move. Per configuration (a
group in ``by``) :func:`stability_table` gives the N run accuracies and their spread, the total
agreement rates over the N runs for parsed answers (TARa@N) and raw responses (TARr@N), and the
best and worst accuracy reachable by picking, per item, the best or worst of the N runs.
:func:`tar_curve` estimates TAR@k for every k = 2..N without bias, so studies with different N
compare; :func:`unstable_items` lists the items that move, for error analysis;
:func:`format_stability_table` prints the paper's Table 2.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
import polars as pl

from evalstats._frames import describe_group
from evalstats.design._frames import analysis_input
from evalstats.errors import (
    DegenerateDataWarning,
    EvalstatsWarning,
    MetricScaleError,
    ParameterError,
    SchemaError,
)
from evalstats.results import check_choice
from evalstats.schema import (
    metric_info,
    unit_interval_metrics,
    validate_by,
    validate_observations,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = [
    "STABILITY_COLUMNS",
    "format_stability_table",
    "stability_table",
    "tar_curve",
    "unstable_items",
]

#: Result columns of :func:`stability_table` after the group columns, in order.
STABILITY_COLUMNS: tuple[str, ...] = (
    "n_runs",
    "n_items",
    "acc_per_run",
    "acc_min",
    "acc_median",
    "acc_max",
    "acc_mean",
    "spread",
    "tar_a",
    "tar_r",
    "n_all_unparsed",
    "best_possible",
    "worst_possible",
    "possible_spread",
    "input_len",
    "output_len",
)

#: Result columns of :func:`tar_curve` after the group columns.
CURVE_COLUMNS: tuple[str, ...] = ("k", "n_runs", "n_items", "tar_a", "tar_r")

#: Result columns of :func:`unstable_items` after the group columns.
ITEM_COLUMNS: tuple[str, ...] = (
    "item",
    "n_runs",
    "n_answers",
    "n_unparsed",
    "n_responses",
    "share_correct",
    "answer_agree",
    "response_agree",
    "gold",
    "answers",
)

Normalize = Literal["none", "strip", "lower"]
OnMismatch = Literal["error", "intersect"]
AllUnparsed = Literal["disagree", "agree"]
_DEFAULT_BY = ("model", "dataset", "metric", "variant")


# --- shared preparation --------------------------------------------------------------------


def _text(col: str, present: bool, normalize: str) -> pl.Expr:
    if not present:
        return pl.lit(None, dtype=pl.String)
    e = pl.col(col).cast(pl.String)
    if normalize in ("strip", "lower"):
        e = e.str.strip_chars()
    if normalize == "lower":
        e = e.str.to_lowercase()
    return e


def _effective_answer(has_a: bool, has_r: bool, normalize: str) -> pl.Expr:
    """The answer compared by TARa: an unparsed answer stands for its raw response.

    A parser is a function of the raw response, so identical responses give identical answers,
    unparsed ones included: an unparsed answer is keyed by its response, and agrees with another
    unparsed answer exactly when their responses agree. This keeps TARa >= TARr (every item
    whose responses agree has agreeing answers); without responses, unparsed never agrees.
    """
    answer = _text("answer", has_a, normalize)
    if not (has_a and has_r):
        return answer
    return pl.coalesce(answer, pl.lit("\x00unparsed:") + _text("response", has_r, normalize))


def _prepare(
    observations: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str] | str,
    normalize: str,
    on_mismatch: str,
) -> tuple[pl.LazyFrame, tuple[str, ...], bool, bool, list[str]]:
    """Validate, select, check run coverage; return (frame, by, has_answer, has_response, lens)."""
    check_choice("normalize", normalize, ("none", "strip", "lower"))
    check_choice("on_mismatch", on_mismatch, ("error", "intersect"))
    lf = validate_observations(observations, require_item=True)
    schema = lf.collect_schema()
    by = validate_by(schema.names(), by, table="observation table")
    for bad in ("item", "run"):
        if bad in by:
            raise ParameterError(
                f"`by` must not contain {bad!r}: stability compares the runs of each item within "
                f"a group (got by={by!r})."
            )
    has_a = "answer" in schema
    has_r = "response" in schema
    lens = [c for c in ("input_len", "output_len") if c in schema]
    lf = lf.select(
        *by,
        pl.col("item"),
        pl.col("run"),
        pl.col("score"),
        _text("answer", has_a, normalize).alias("__a"),
        _text("response", has_r, normalize).alias("__r"),
        _effective_answer(has_a, has_r, normalize).alias("__ae"),
        *[pl.col(c) for c in lens],
        (pl.col("gold") if "gold" in schema else pl.lit(None, dtype=pl.String)).alias("__gold"),
    )
    return lf, by, has_a, has_r, lens


def _where(group: dict) -> pl.Expr:
    return pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in group.items()])


def _reduce(
    lf: pl.LazyFrame,
    keys: list[str],
    on_mismatch: str,
    item_aggs: Sequence[pl.Expr] = (),
    run_aggs: Sequence[pl.Expr] = (),
    extra: Sequence[Callable[[pl.LazyFrame], pl.LazyFrame]] = (),
) -> tuple[pl.DataFrame, pl.DataFrame, list[pl.DataFrame]]:
    """Per-item and per-run aggregates (and ``extra`` queries) in one parallel pass.

    Checks on the small aggregated frames that each run scores each item once and that the runs
    of a group cover the same items; with ``on_mismatch='intersect'`` warns and recomputes on
    the items present in every run. ``per_item`` gets ``__n_runs`` (the group's run count).
    """
    item_q = lf.group_by([*keys, "item"]).agg(
        pl.len().alias("__rows"), pl.col("run").n_unique().alias("__runs"), *item_aggs
    )
    run_q = lf.group_by([*keys, "run"]).agg(pl.len().alias("__n"), *run_aggs)
    per_item, per_run, *rest = pl.collect_all([item_q, run_q, *(q(lf) for q in extra)])
    n_runs = per_run.group_by(keys).agg(pl.len().cast(pl.Int64).alias("__n_runs"))
    per_item = per_item.join(n_runs, on=keys, how="left", nulls_equal=True)
    dup = per_item.filter(pl.col("__rows") != pl.col("__runs"))
    if dup.height:
        first = dup.sort([*keys, "item"], nulls_last=True).row(0, named=True)
        group = {k: first[k] for k in keys}
        row = (
            lf.filter(_where(group) & (pl.col("item") == first["item"]))
            .group_by("run")
            .len()
            .filter(pl.col("len") > 1)
            .sort("run")
            .collect()
            .row(0, named=True)
        )
        raise SchemaError(
            f"the observation table has {row['len']} rows for item {first['item']!r}, run "
            f"{row['run']} in the group {describe_group(group)}; each run must score an item once."
        )
    gap = per_item.filter(pl.col("__runs") < pl.col("__n_runs"))
    if not gap.height:
        return per_item, per_run, rest
    totals = per_item.group_by(keys).agg(pl.len().alias("__total"))
    short = (
        per_run.join(totals, on=keys, nulls_equal=True)
        .filter(pl.col("__n") < pl.col("__total"))
        .sort([*keys, "run"], nulls_last=True)
    )
    left_out = (
        gap.group_by(keys)
        .agg(pl.len().alias("n"), pl.col("item").sort().head(3).alias("ex"))
        .sort(keys, nulls_last=True)
    )
    if on_mismatch == "error":
        first = left_out.row(0, named=True)
        group = {k: first[k] for k in keys}
        lacking = "; ".join(
            f"run {r['run']} has {r['__n']} of {r['__total']} items"
            for r in short.filter(_where(group)).iter_rows(named=True)
        )
        raise SchemaError(
            f"the runs of the group {describe_group(group)} cover different items ({lacking}). "
            "Stability compares the same items across runs: pass on_mismatch='intersect' "
            "(CLI: --on-mismatch intersect) to analyse the items present in every run."
        )
    for r in left_out.iter_rows(named=True):
        group = {k: r[k] for k in keys}
        runs = short.filter(_where(group))["run"].to_list()
        warnings.warn(
            f"group {describe_group(group)}: analysed only the items present in every run; left "
            f"out {r['n']} item(s) (e.g. {', '.join(map(repr, r['ex']))}) missing from "
            f"run(s) {', '.join(map(str, runs))}.",
            EvalstatsWarning,
            stacklevel=4,
        )
    complete = per_item.filter(pl.col("__runs") == pl.col("__n_runs")).select(*keys, "item")
    lf = lf.join(complete.lazy(), on=[*keys, "item"], how="semi", nulls_equal=True)
    return _reduce(lf, keys, "error", item_aggs, run_aggs, extra)


def _agree(col: str) -> pl.Expr:
    # every run gave the same non-null text; a null (unparsed) answer never agrees
    # (min == max is a plain reduction, much cheaper than counting distinct strings)
    return (pl.col(col).null_count() == 0) & (pl.col(col).min() == pl.col(col).max())


# --- the stability table -------------------------------------------------------------------


def stability_table(
    observations: TableLike,
    *,
    by: Sequence[str] | str = _DEFAULT_BY,
    normalize: Normalize = "none",
    on_mismatch: OnMismatch = "error",
    all_unparsed: AllUnparsed = "disagree",
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Accuracy spread and total agreement over N identical runs, one row per group.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table with ``item`` and ``run`` (see :mod:`evalstats.schema`); ``answer`` and
        ``response`` give TARa and TARr, ``input_len`` and ``output_len`` the length columns.
    by : tuple of str, default ('model', 'dataset', 'metric', 'variant')
        Group columns: one configuration run N times.
    normalize : {'none', 'strip', 'lower'}, default 'none'
        How answers and responses are compared: exact strings, stripped of surrounding
        whitespace, or stripped and lower-cased.
    on_mismatch : {'error', 'intersect'}, default 'error'
        When the runs of a group cover different items: raise naming the group and the runs,
        or analyse the items present in every run and warn with what was left out.
    all_unparsed : {'disagree', 'agree'}, default 'disagree'
        Whether an item whose answers are unparsed (null) in *every* run counts as agreeing in
        TARa. With ``'disagree'`` unparsed answers agree only where their raw responses agree
        (identical responses parse identically, so TARa >= TARr always); ``'agree'`` is the
        convention of the authors' ``evaluate.py``; use it to reproduce their ``TARa`` column.
        ``n_all_unparsed`` reports how many items this concerns.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    polars.DataFrame
        The group columns, then :data:`STABILITY_COLUMNS`: ``n_runs`` (N), ``n_items``,
        ``acc_per_run`` (list, by run index), ``acc_min``, ``acc_median``, ``acc_max``,
        ``acc_mean``, ``spread`` (the accuracy range over runs, ``acc_max - acc_min``),
        ``tar_a``, ``tar_r``, ``n_all_unparsed`` (items whose answer is unparsed in every run;
        null without ``answer``), ``best_possible``, ``worst_possible``, ``possible_spread``
        (``best_possible - worst_possible``, the authors' ``spread``), ``input_len`` and
        ``output_len`` (median word counts; null without text). Sorted by the group columns.

    Raises
    ------
    SchemaError
        A column is missing, an item is scored twice in one run, or (``on_mismatch='error'``)
        the runs of a group cover different items.
    ParameterError
        ``normalize`` or ``on_mismatch`` is unknown, or ``by`` contains ``item`` or ``run``.

    Warns
    -----
    DegenerateDataWarning
        A group has a single run: its ``tar_a`` and ``tar_r`` are NaN.
    EvalstatsWarning
        ``on_mismatch='intersect'`` left items out.

    See Also
    --------
    tar_curve : TAR@k for k = 2..N.
    unstable_items : The items behind a low TAR.

    Notes
    -----
    For a group with runs r = 1..N over items i = 1..I, scores s_ir, answers a_ir and raw
    responses x_ir:

    - acc_r = (1/I) sum_i s_ir; ``spread`` = max_r acc_r - min_r acc_r, computed as
      (max_r S_r - min_r S_r)/I from the score sums S_r = sum_i s_ir (and ``acc_mean``,
      ``acc_min``, ``acc_median``, ``acc_max`` likewise): for 0/1 scores the sums are exact
      counts, so spreads and accuracies that are equal fractions are equal floats and tie
      exactly in rank-based methods (a difference of two rounded accuracies would not);
    - TARa@N = (1/I) sum_i [a_i1 = ... = a_iN, none unparsed]; TARr@N likewise on x_ir;
    - ``best_possible`` = (1/I) sum_i max_r s_ir (correct in at least one run);
      ``worst_possible`` = (1/I) sum_i min_r s_ir (correct in every run). These are accuracies:
      null for a metric not on [0, 1]; where lower is better, best is the min and worst the max.

    ``acc_*`` and ``spread`` are the metric's mean score per run (an accuracy for 0/1 scores),
    in the metric's units.

    Two spreads, named apart: ``spread`` is the range of the run accuracies (the paper's
    Table 2 range); ``possible_spread`` = best_possible - worst_possible is the column the
    authors' ``evaluate.py`` calls ``spread``. With fractional scores
    ``best_possible``/``worst_possible`` average the per-item max/min. By default an unparsed
    answer never agrees; the authors count an item whose N responses are *all* unparsed as
    agreeing (a quirk of their set of row indices): ``all_unparsed='agree'`` does the same.
    Their code also skips missing (NaN) responses when collecting answers; rows with
    ``error='empty'`` are unparsed here, so an item mixing empty and parsed runs can differ.

    Checked against: the authors' ``strict_json_schema_stability_eval.csv``,
    ``fine_tuned_stability_eval.csv`` and ``fine_tuned_stability_eval_cross_trained.csv``
    (in ../shared/data/llm-stability/ beside the project, read in place by the tests):
    ``n_runs``, ``n_items``, ``tar_a`` (with
    ``all_unparsed='agree'``), ``tar_r``, ``best_possible``, ``worst_possible``,
    ``possible_spread`` and the per-run counts agree for every row.

    References
    ----------
    .. [1] B. Atil et al., "LLM Stability: A detailed analysis with some surprises", 2024.

    Examples
    --------
    >>> import polars as pl
    >>> obs = pl.DataFrame({
    ...     "model": "m", "dataset": "d", "variant": "v",
    ...     "item": ["1", "2", "3"] * 2, "run": [0, 0, 0, 1, 1, 1],
    ...     "score": [1.0, 0.0, 1.0, 1.0, 1.0, 0.0],
    ...     "answer": ["(A)", "(B)", "(C)", "(A)", "(C)", "(D)"],
    ...     "response": ["A", "B", "C", "A ", "C", "D"]})
    >>> row = stability_table(obs).row(0, named=True)
    >>> row["acc_per_run"], row["tar_a"], row["tar_r"], row["best_possible"]
    ([0.6666666666666666, 0.6666666666666666], 0.3333333333333333, 0.0, 1.0)
    >>> stability_table(obs, normalize="strip")["tar_r"].item()
    0.3333333333333333
    """
    observations = analysis_input(observations, roles=roles, design=design).table
    check_choice("all_unparsed", all_unparsed, ("disagree", "agree"))
    lf, by, has_a, has_r, lens = _prepare(observations, by, normalize, on_mismatch)
    keys = list(by)
    none_bool = pl.lit(None, dtype=pl.Boolean)
    none_unparsed = pl.col("__a").null_count() == pl.len()
    agree_a = _agree("__ae") | none_unparsed if all_unparsed == "agree" else _agree("__ae")
    item_aggs = [
        pl.col("score").max().alias("__best"),
        pl.col("score").min().alias("__worst"),
        agree_a.alias("__ta") if has_a else none_bool.alias("__ta"),
        _agree("__r").alias("__tr") if has_r else none_bool.alias("__tr"),
        none_unparsed.alias("__nu") if has_a else none_bool.alias("__nu"),
    ]

    def lengths(frame: pl.LazyFrame) -> pl.LazyFrame:
        return frame.group_by(keys).agg(
            *[
                (pl.col(c).median() if c in lens else pl.lit(None)).cast(pl.Float64).alias(c)
                for c in ("input_len", "output_len")
            ]
        )

    # without text columns the lengths are null: no third pass over the rows for them
    per_item, per_run, rest = _reduce(
        lf,
        keys,
        on_mismatch,
        item_aggs,
        [pl.col("score").sum().alias("__sum")],
        [lengths] if lens else [],
    )
    # accuracies from score sums (counts for 0/1 scores, exact in floating point) over the
    # items of a run, which every run of a group shares: the spread is (max - min count)/n, so
    # equal spreads are equal floats (max_r acc_r - min_r acc_r differs in the last bit:
    # 0.7 - 0.5 != 0.4 - 0.2) and rank methods see the ties
    n = pl.col("__n").first()
    a = (
        per_run.with_columns((pl.col("__sum") / pl.col("__n")).alias("acc"))
        .group_by(keys)
        .agg(
            pl.len().cast(pl.Int64).alias("n_runs"),
            pl.col("acc").sort_by("run").alias("acc_per_run"),
            (pl.col("__sum").min() / n).alias("acc_min"),
            (pl.col("__sum").median() / n).alias("acc_median"),
            (pl.col("__sum").max() / n).alias("acc_max"),
            (pl.col("__sum").sum() / pl.col("__n").sum()).alias("acc_mean"),
            ((pl.col("__sum").max() - pl.col("__sum").min()) / n).alias("spread"),
        )
    )
    b = (
        per_item.group_by(keys)
        .agg(
            pl.len().cast(pl.Int64).alias("n_items"),
            pl.col("__ta").cast(pl.Float64).mean().alias("tar_a"),
            pl.col("__tr").cast(pl.Float64).mean().alias("tar_r"),
            (pl.col("__nu").sum().cast(pl.Int64) if has_a else pl.lit(None, dtype=pl.Int64)).alias(
                "n_all_unparsed"
            ),
            pl.col("__best").mean().alias("best_possible"),
            pl.col("__worst").mean().alias("worst_possible"),
        )
        .with_columns((pl.col("best_possible") - pl.col("worst_possible")).alias("possible_spread"))
    )
    c = (
        rest[0]
        if lens
        else a.select(
            *keys, *[pl.lit(None, dtype=pl.Float64).alias(n) for n in ("input_len", "output_len")]
        )
    )
    out = a.join(b, on=keys, nulls_equal=True).join(c, on=keys, nulls_equal=True)
    out = _possible_by_metric(out, lf, keys)
    # the example is the first group in key order (the joins' row order varies from run to run)
    single = out.filter(pl.col("n_runs") < 2).sort(keys, nulls_last=True)
    if single.height:
        warnings.warn(
            f"{single.height} group(s) have a single run (e.g. "
            f"{describe_group({k: single[k][0] for k in keys})}); tar_a and tar_r are NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
        out = out.with_columns(
            [
                pl.when(pl.col("n_runs") < 2).then(float("nan")).otherwise(pl.col(t)).alias(t)
                for t in ("tar_a", "tar_r")
            ]
        )
    return out.select(*keys, *STABILITY_COLUMNS).sort(keys, nulls_last=True)


def _possible_by_metric(
    out: pl.DataFrame | pl.LazyFrame, lf: pl.LazyFrame, keys: list[str]
) -> pl.DataFrame | pl.LazyFrame:
    """Best/worst possible accuracy: only for [0, 1] metrics, swapped where lower is better."""
    infos = metric_info(lf)
    unit = unit_interval_metrics(lf)
    if "metric" in keys:
        names = list(infos)
        meta = pl.DataFrame(
            {
                "metric": names,
                "__hib": [infos[n].higher_is_better for n in names],
                "__unit": [unit[n] for n in names],
            },
            schema={"metric": pl.String, "__hib": pl.Boolean, "__unit": pl.Boolean},
        )
        out = out.join(meta if isinstance(out, pl.DataFrame) else meta.lazy(), on="metric")
    else:
        hib = {i.higher_is_better for i in infos.values()}
        out = out.with_columns(
            pl.lit(hib.pop() if len(hib) == 1 else None, dtype=pl.Boolean).alias("__hib"),
            pl.lit(all(unit.values()) and len(hib) <= 1).alias("__unit"),
        )
    null = pl.lit(None, dtype=pl.Float64)
    best, worst = pl.col("best_possible"), pl.col("worst_possible")
    return out.with_columns(
        pl.when(~pl.col("__unit"))
        .then(null)
        .when(pl.col("__hib").not_())
        .then(worst)
        .otherwise(best)
        .alias("best_possible"),
        pl.when(~pl.col("__unit"))
        .then(null)
        .when(pl.col("__hib").not_())
        .then(best)
        .otherwise(worst)
        .alias("worst_possible"),
    ).drop("__hib", "__unit")


# --- TAR@k ---------------------------------------------------------------------------------


def _curve_for(classes: pl.DataFrame, groups: pl.DataFrame, max_n: int) -> np.ndarray:
    """Sum over items of sum_j C(c_j, k)/C(N, k), per group (rows) and k = 0..max_n (columns)."""
    out = np.zeros((groups.height, max_n + 1))
    if classes.height == 0:
        return out
    gid = classes["__gid"].to_numpy()
    c = classes["__c"].to_numpy().astype(np.float64)
    n = classes["__n"].to_numpy().astype(np.float64)
    ratio = np.ones_like(c)
    for k in range(1, max_n + 1):
        valid = k <= n
        # C(c, k) / C(N, k) = prod_{i<k} (c - i) / (N - i); exact in floating point for small k
        ratio = ratio * np.where(valid, (c - k + 1) / np.where(valid, n - k + 1, 1.0), 0.0)
        ratio = np.clip(ratio, 0.0, None)
        out[:, k] = np.bincount(gid, weights=ratio, minlength=groups.height)
    return out


def tar_curve(
    observations: TableLike,
    *,
    by: Sequence[str] | str = _DEFAULT_BY,
    normalize: Normalize = "none",
    on_mismatch: OnMismatch = "error",
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Unbiased TAR@k for k = 2..N, for parsed answers and raw responses, per group.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table with ``item``, ``run`` and ``answer`` and/or ``response``.
    by : tuple of str, default ('model', 'dataset', 'metric', 'variant')
        Group columns.
    normalize : {'none', 'strip', 'lower'}, default 'none'
        Text comparison, as in :func:`stability_table`.
    on_mismatch : {'error', 'intersect'}, default 'error'
        Runs covering different items, as in :func:`stability_table`.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    polars.DataFrame
        The group columns, then ``k``, ``n_runs``, ``n_items``, ``tar_a``, ``tar_r``: one row per
        group and k = 2..N (N = the group's ``n_runs``), sorted by group and ``k``.

    Raises
    ------
    SchemaError, ParameterError
        As :func:`stability_table`.

    See Also
    --------
    stability_table : ``tar_a``/``tar_r`` there equal this curve at k = N.

    Notes
    -----
    TAR@k is the probability that k runs drawn without replacement from the N observed runs
    agree on an item, averaged over items. If the N answers to item i fall into classes of
    identical answers of sizes c_i1, c_i2, ..., then

        TAR@k = (1/I) sum_i sum_j C(c_ij, k) / C(N, k),

    the average over all C(N, k) subsets of runs of the subset's total agreement rate, hence an
    unbiased estimate of TAR@k for a fresh set of k runs. Unparsed (null) answers form no class
    and so never agree. At k = N it equals TARa@N / TARr@N.

    Checked against: brute-force enumeration over every k-subset of runs on seeded random data
    (tests/test_stability.py).

    Examples
    --------
    >>> import polars as pl
    >>> obs = pl.DataFrame({"model": "m", "dataset": "d", "variant": "v", "item": "1",
    ...                     "run": [0, 1, 2, 3], "score": 1.0, "answer": ["A", "A", "A", "B"]})
    >>> tar_curve(obs).select("k", "tar_a").rows()
    [(2, 0.5), (3, 0.25), (4, 0.0)]
    """
    observations = analysis_input(observations, roles=roles, design=design).table
    lf, by, has_a, has_r, _ = _prepare(observations, by, normalize, on_mismatch)
    keys = list(by)
    text = [
        (name, col)
        for name, col, present in (("tar_a", "__ae", has_a), ("tar_r", "__r", has_r))
        if present
    ]

    def classes_of(col: str) -> Callable[[pl.LazyFrame], pl.LazyFrame]:
        def query(frame: pl.LazyFrame) -> pl.LazyFrame:
            return (
                frame.filter(pl.col(col).is_not_null())
                .group_by([*keys, "item", col])
                .agg(pl.len().alias("__c"))
                .drop(col)
            )

        return query

    per_item, _, class_frames = _reduce(
        lf, keys, on_mismatch, extra=[classes_of(col) for _, col in text]
    )
    groups = (
        per_item.group_by(keys)
        .agg(
            pl.col("__n_runs").first().cast(pl.Int64).alias("n_runs"),
            pl.len().cast(pl.Int64).alias("n_items"),
        )
        .sort(keys, nulls_last=True)
        .with_row_index("__gid")
    )
    gmap = groups.select(*keys, "__gid", pl.col("n_runs").alias("__n"))
    max_n = int(groups["n_runs"].max() or 0)
    sums: dict[str, np.ndarray | None] = {"tar_a": None, "tar_r": None}
    for (name, _), classes in zip(text, class_frames, strict=True):
        classes = classes.join(gmap, on=keys, nulls_equal=True).select("__gid", "__c", "__n")
        sums[name] = _curve_for(classes, groups, max_n)
    rows_gid, rows_k = [], []
    for g, n in enumerate(groups["n_runs"].to_list()):
        for k in range(2, n + 1):
            rows_gid.append(g)
            rows_k.append(k)
    gid = np.asarray(rows_gid, dtype=np.int64)
    kk = np.asarray(rows_k, dtype=np.int64)
    n_items = groups["n_items"].to_numpy().astype(np.float64)
    cols = {}
    for name in ("tar_a", "tar_r"):
        if sums[name] is None or gid.size == 0:
            cols[name] = pl.Series(name, [None] * gid.size, dtype=pl.Float64)
        else:
            cols[name] = pl.Series(name, sums[name][gid, kk] / n_items[gid])
    out = (
        groups.select(*keys, "n_runs", "n_items")[gid.tolist()]
        if gid.size
        else groups.select(*keys, "n_runs", "n_items").head(0)
    )
    out = out.with_columns(pl.Series("k", kk, dtype=pl.Int64), cols["tar_a"], cols["tar_r"])
    return out.select(*keys, *CURVE_COLUMNS)


# --- per item ------------------------------------------------------------------------------


def unstable_items(
    observations: TableLike,
    *,
    by: Sequence[str] | str = _DEFAULT_BY,
    normalize: Normalize = "none",
    on_mismatch: OnMismatch = "error",
    top: int | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Per-item view of run-to-run instability, least stable items first within each group.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table with ``item`` and ``run``.
    by : tuple of str, default ('model', 'dataset', 'metric', 'variant')
        Group columns.
    normalize : {'none', 'strip', 'lower'}, default 'none'
        Text comparison, as in :func:`stability_table`.
    on_mismatch : {'error', 'intersect'}, default 'error'
        Runs covering different items, as in :func:`stability_table`.
    top : int, optional
        Keep the ``top`` least stable items of each group (default: every item).
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    polars.DataFrame
        The group columns, then ``item``, ``n_runs``, ``n_answers`` (distinct parsed answers),
        ``n_unparsed`` (runs without a parsed answer), ``n_responses`` (distinct raw responses),
        ``share_correct`` (mean score over runs), ``answer_agree`` and ``response_agree``
        (whether the item counts towards TARa@N / TARr@N), ``gold`` and ``answers`` (the
        answers by run). Sorted by group, then least stable first: disagreeing answers,
        more distinct answers (unparsed runs counted as distinct), more distinct responses,
        share correct nearest 1/2, then item.

    Raises
    ------
    SchemaError, ParameterError
        As :func:`stability_table`, or ``top`` is not a positive integer.

    See Also
    --------
    stability_table : ``tar_a`` is the mean of ``answer_agree`` over a group's items.

    Notes
    -----
    ``answer_agree`` is true when all N answers are parsed and identical (after ``normalize``),
    ``response_agree`` likewise for the raw responses; the shares of true values are TARa@N and
    TARr@N. ``share_correct`` is the item's mean score over runs: an item with
    0 < share_correct < 1 is what separates ``best_possible`` from ``worst_possible``.

    Examples
    --------
    >>> import polars as pl
    >>> obs = pl.DataFrame({"model": "m", "dataset": "d", "variant": "v",
    ...                     "item": ["1", "2"] * 3, "run": [0, 0, 1, 1, 2, 2],
    ...                     "score": [1.0, 1.0, 1.0, 0.0, 1.0, 0.0],
    ...                     "answer": ["A", "B", "A", "C", None, "C"]})
    >>> unstable_items(obs).select("item", "n_answers", "n_unparsed", "share_correct").rows()
    [('2', 2, 0, 0.3333333333333333), ('1', 1, 1, 1.0)]
    """
    observations = analysis_input(observations, roles=roles, design=design).table
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise ParameterError(f"`top` must be a positive integer or None, got {top!r}.")
    lf, by, has_a, has_r, _ = _prepare(observations, by, normalize, on_mismatch)
    keys = list(by)
    none_int = pl.lit(None, dtype=pl.Int64)
    none_bool = pl.lit(None, dtype=pl.Boolean)
    item_aggs = [
        pl.col("__a").drop_nulls().n_unique().cast(pl.Int64).alias("n_answers")
        if has_a
        else none_int.alias("n_answers"),
        pl.col("__a").null_count().cast(pl.Int64).alias("n_unparsed")
        if has_a
        else none_int.alias("n_unparsed"),
        pl.col("__r").drop_nulls().n_unique().cast(pl.Int64).alias("n_responses")
        if has_r
        else none_int.alias("n_responses"),
        pl.col("score").mean().alias("share_correct"),
        _agree("__ae").alias("answer_agree") if has_a else none_bool.alias("answer_agree"),
        _agree("__r").alias("response_agree") if has_r else none_bool.alias("response_agree"),
        pl.col("__gold").drop_nulls().first().alias("gold"),
        pl.col("__a").sort_by("run").alias("answers")
        if has_a
        else pl.lit(None, dtype=pl.List(pl.String)).alias("answers"),
    ]
    per_item, _, _ = _reduce(lf, keys, on_mismatch, item_aggs)
    out = (
        per_item.with_columns(pl.col("__rows").cast(pl.Int64).alias("n_runs"))
        .with_columns(
            (pl.col("n_answers").fill_null(0) + pl.col("n_unparsed").fill_null(0)).alias("__na"),
            (pl.col("share_correct") - 0.5).abs().alias("__mid"),
        )
        .sort(
            [*keys, "answer_agree", "__na", "n_responses", "__mid", "item"],
            descending=[False] * len(keys) + [False, True, True, False, False],
            nulls_last=True,
        )
    )
    if top is not None:
        out = out.filter(pl.int_range(pl.len()).over(keys) < top)
    return out.select(*keys, *ITEM_COLUMNS)


# --- Table 2 -------------------------------------------------------------------------------


def _pct(v: float | None, digits: int) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    return f"{100 * v:.{digits}f}"


def format_stability_table(
    frame: pl.DataFrame,
    *,
    style: Literal["markdown", "latex"] = "markdown",
    digits: int = 1,
) -> str:
    """The paper's Table 2: "min (median) max; TARa@N, TARr@N" per task x model, in percent.

    Parameters
    ----------
    frame : polars.DataFrame (or pandas, pyarrow)
        A result of :func:`stability_table` (with ``dataset`` among its group columns).
    style : {'markdown', 'latex'}, default 'markdown'
        Output format.
    digits : int, default 1
        Decimals of the percentages.

    Returns
    -------
    str
        One row per dataset, one column per model (with the other group values, such as the
        variant, in the header when they differ).

    Raises
    ------
    SchemaError
        ``frame`` is not a stability table or has no ``dataset`` column.
    ParameterError
        ``style`` is unknown or ``digits`` negative.

    Notes
    -----
    Each cell is ``acc_min (acc_median) acc_max; tar_a, tar_r`` times 100, the layout of
    Table 2 in Atil et al.; a missing value prints ``-``. Rounding happens only here.

    Examples
    --------
    >>> import polars as pl
    >>> obs = pl.DataFrame({"model": "gpt", "dataset": "navigate", "variant": "v",
    ...                     "item": ["1", "2"] * 2, "run": [0, 0, 1, 1],
    ...                     "score": [1.0, 0.0, 1.0, 1.0], "answer": ["Yes", "No", "Yes", "Yes"],
    ...                     "response": ["Yes", "No", "Yes", "Yes"]})
    >>> print(format_stability_table(stability_table(obs)))
    | task | gpt |
    |---|---|
    | navigate | 50.0 (75.0) 100.0; 50.0, 50.0 |
    """
    from evalstats._frames import to_polars

    frame = to_polars(frame, what="the stability table").lazy().collect()
    check_choice("style", style, ("markdown", "latex"))
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 0:
        raise ParameterError(f"`digits` must be a non-negative integer, got {digits!r}.")
    missing = [
        c
        for c in ("dataset", "acc_min", "acc_median", "acc_max", "tar_a", "tar_r")
        if c not in frame.columns
    ]
    if missing:
        raise SchemaError(
            f"`frame` must be a stability table (see stability_table) with a 'dataset' column; "
            f"it has no column {missing[0]!r} (columns: {', '.join(frame.columns)})."
        )
    outside = frame.filter((pl.col("acc_min") < 0) | (pl.col("acc_max") > 1))
    if outside.height:
        name = outside["metric"][0] if "metric" in outside.columns else "score"
        raise MetricScaleError(
            f"the paper's Table 2 quotes accuracies in percent, and metric {name!r} has run "
            f"means outside [0, 1] (e.g. {outside['acc_max'][0]!r}); use the stability table "
            "itself for other metrics."
        )
    group_cols = (
        [c for c in frame.columns[: frame.columns.index("n_runs")] if c != "dataset"]
        if "n_runs" in frame.columns
        else ["model"]
    )
    varying = [c for c in group_cols if c == "model" or frame[c].n_unique() > 1]

    def label(row: dict) -> str:
        return " / ".join(str(row[c]) for c in varying) if varying else "value"

    datasets = sorted(frame["dataset"].unique().to_list(), key=str)
    cols: list[str] = []
    cells: dict[tuple[str, str], str] = {}
    for row in frame.iter_rows(named=True):
        col = label(row)
        if col not in cols:
            cols.append(col)
        cells[(row["dataset"], col)] = (
            f"{_pct(row['acc_min'], digits)} ({_pct(row['acc_median'], digits)}) "
            f"{_pct(row['acc_max'], digits)}; {_pct(row['tar_a'], digits)}, "
            f"{_pct(row['tar_r'], digits)}"
        )
    if style == "markdown":
        lines = ["| task | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for d in datasets:
            lines.append(f"| {d} | " + " | ".join(cells.get((d, c), "-") for c in cols) + " |")
        return "\n".join(lines)

    def esc(s: str) -> str:
        for a, b in (
            ("\\", r"\textbackslash{}"),
            ("_", r"\_"),
            ("%", r"\%"),
            ("&", r"\&"),
            ("#", r"\#"),
        ):
            s = s.replace(a, b)
        return s

    lines = [
        r"\begin{tabular}{l" + "l" * len(cols) + "}",
        r"\hline",
        "task & " + " & ".join(esc(c) for c in cols) + r" \\",
        r"\hline",
    ]
    for d in datasets:
        lines.append(
            esc(str(d)) + " & " + " & ".join(esc(cells.get((d, c), "-")) for c in cols) + r" \\"
        )
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines)
