"""Provider and error audit: error rates, two scoring policies, provider differences, latency."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstats._frames import describe_group
from evalstats.compare._intervals import _metric_bounds, mean_interval
from evalstats.compare._multiplicity import CORRECTIONS, adjust
from evalstats.compare._paired import paired_difference
from evalstats.design._frames import analysis_input
from evalstats.errors import SchemaError
from evalstats.io._errors import error_class
from evalstats.results import check_choice, check_confidence_level
from evalstats.schema import factor_columns, validate_by, validate_observations

if TYPE_CHECKING:
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["ProviderAudit", "choose_reference", "developer_of", "provider_audit"]

POLICIES = ("errors_as_failures", "errors_excluded")

#: A factor column with more levels than this is not checked for an effect by default.
_MAX_SETTING_LEVELS = 20


@dataclass(frozen=True, slots=True)
class ProviderAudit:
    """Result of :func:`provider_audit`: seven tidy frames.

    Attributes
    ----------
    errors : polars.DataFrame
        Error rate per group, provider and category (``any`` = all categories) with Wilson
        intervals.
    scores : polars.DataFrame
        Mean score per group, provider and scoring policy, with intervals and ``error_share``.
    policies : polars.DataFrame
        The two policies side by side per group and provider: ``error_rate`` (Wilson
        interval), ``as_failures`` and ``excluded`` (intervals as in ``scores``) and their
        ``difference`` (``as_failures - excluded``) with a cluster-robust interval.
    versus : polars.DataFrame
        Every provider of a group against the group's ``reference`` (``reference_reason``
        says how it was chosen), paired on items: ``difference`` (errors as failures) with
        interval, p-value, ``pvalue_adjusted`` (``correction`` over the group's providers) and
        the minimum detectable difference ``mdd``; the same with errors excluded
        (``*_excluded``); ``error_rate_difference``; ``identical_outputs`` (share of calls
        whose answer, or response, equals the reference's); and a ``verdict``.
    settings : polars.DataFrame
        For each group, provider and setting column (``settings``), each level against the
        best-covered one: ``identical_outputs`` on the calls both made and ``no_effect`` (every
        answer identical: the setting probably did not reach the model). Empty without an
        ``answer`` or ``response`` column.
    differences : polars.DataFrame
        Paired differences between providers on shared items, per policy.
    latency : polars.DataFrame
        Latency mean with interval and quantiles per group and provider (empty without
        ``latency_s``).
    tail_quality : polars.DataFrame
        Share of calls answered correctly within latency ``t`` (empty without ``latency_s``).
    confidence_level : float
    method : str
    seed : int
    provider : str
        The compared column.
    by : tuple of str
        The groups' columns: ``model``, ``metric`` and any setting the providers were
        compared at each level of.
    """

    errors: pl.DataFrame
    scores: pl.DataFrame
    differences: pl.DataFrame
    latency: pl.DataFrame
    tail_quality: pl.DataFrame
    confidence_level: float
    method: str
    seed: int
    policies: pl.DataFrame = field(default_factory=pl.DataFrame)
    versus: pl.DataFrame = field(default_factory=pl.DataFrame)
    correction: str = "holm"
    settings: pl.DataFrame = field(default_factory=pl.DataFrame)
    provider: str = "provider"
    by: tuple[str, ...] = ("model", "metric")

    def to_frame(self) -> pl.DataFrame:
        """The ``scores`` frame (the headline table)."""
        return self.scores


def _groups(frame: pl.DataFrame, keys: Sequence[str]) -> dict[tuple, pl.DataFrame]:
    if not keys:
        return {(): frame}
    return frame.partition_by(list(keys), as_dict=True, maintain_order=True)


#: Model developers and the model-name stems of their models: the developer's own API is the
#: reference provider of its models when it is among the providers.
DEVELOPERS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt", "o1", "o3", "o4", "chatgpt", "davinci"),
    "anthropic": ("claude",),
    "google": ("gemini", "gemma", "palm"),
    "mistral": ("mistral", "mixtral", "magistral", "codestral", "ministral", "devstral"),
    "deepseek": ("deepseek",),
    "meta": ("llama",),
    "alibaba": ("qwen", "qwq"),
    "moonshot": ("kimi", "moonlight"),
    "z-ai": ("glm",),
    "zhipu": ("glm",),
    "xai": ("grok",),
    "cohere": ("command", "aya"),
    "minimax": ("minimax",),
    "01-ai": ("yi-",),
}


def _norm(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())


def developer_of(model: str) -> str | None:
    """The developer of ``model`` from its name (``'openai/gpt-4o'`` or ``'gpt-4o'``), or None.

    Examples
    --------
    >>> developer_of("deepseek-ai/DeepSeek-V3"), developer_of("gpt-oss-120b"), developer_of("x")
    ('deepseek', 'openai', None)
    """
    name = model.lower()
    org, _, base = name.rpartition("/")
    for dev, stems in DEVELOPERS.items():
        if org and (_norm(dev) in _norm(org) or _norm(org) in _norm(dev)):
            return dev
        if any(base.startswith(s) for s in stems):
            return dev
    return None


def choose_reference(
    model: str, coverage: Mapping[str, tuple[int, int]], reference: str | None = None
) -> tuple[str, str]:
    """The reference provider of ``model`` and why it was chosen.

    ``coverage[provider] = (scored calls, calls)``. The user's ``reference`` when it is among
    the providers; else the model developer's own API (a provider whose name contains the
    developer's, :func:`developer_of`); else the best-covered provider (most scored calls,
    then most calls, then first by name).
    """
    if reference is not None and reference in coverage:
        return reference, "named by the user"
    dev = developer_of(model)
    if dev is not None:
        own = [p for p in coverage if _norm(dev) in _norm(str(p))]
        if own:
            return sorted(own, key=lambda p: (-coverage[p][0], str(p)))[0], "the developer's API"
    best = sorted(coverage, key=lambda p: (-coverage[p][0], -coverage[p][1], str(p)))[0]
    return best, "best covered"


def _policy_difference(
    g: pl.DataFrame, level: float
) -> tuple[float, float, float, float, float, float]:
    """Both policies' means and their difference with a cluster-robust (delta method) interval.

    Returns ``(as_failures, excluded, difference, se, low, high)``; see
    :func:`provider_audit`, Notes.
    """
    from scipy import stats

    per = g.group_by("__cluster").agg(
        pl.len().alias("n"),
        pl.col("__err").sum().alias("e"),
        pl.col("__fail").sum().alias("s"),
    )
    n = per["n"].to_numpy().astype(float)
    e = per["e"].to_numpy().astype(float)
    s = per["s"].to_numpy().astype(float)
    m = n - e
    big_n, big_m = n.sum(), m.sum()
    if big_n == 0 or big_m == 0:
        return (s.sum() / big_n if big_n else np.nan), np.nan, np.nan, np.nan, np.nan, np.nan
    r_f, r_x = s.sum() / big_n, s.sum() / big_m
    d = r_f - r_x
    k = n.size
    if k < 2:
        return r_f, r_x, d, np.nan, np.nan, np.nan
    u = (s - r_f * n) / big_n - (s - r_x * m) / big_m
    se = float(np.sqrt(k / (k - 1) * np.sum(u**2)))
    q = float(stats.t.ppf(0.5 + level / 2, k - 1))
    return r_f, r_x, d, se, d - q * se, d + q * se


def _item_means(sub: pl.DataFrame, provider: str, value: str) -> pl.DataFrame:
    return sub.group_by(["__cluster", provider]).agg(pl.col(value).mean())


def _paired(
    wide: pl.DataFrame, a: str, b: str, level: float, n_resamples: int, seed: int
) -> tuple[int, float, float, float, float, float]:
    """(n, difference, low, high, pvalue, mdd) of ``a - b`` on the rows both have."""
    if a not in wide.columns or b not in wide.columns:
        return 0, np.nan, np.nan, np.nan, np.nan, np.nan
    pair = wide.select(a, b).drop_nulls()
    if pair.height < 2:
        return pair.height, np.nan, np.nan, np.nan, np.nan, np.nan
    x, y = pair[a].to_numpy(), pair[b].to_numpy()
    if np.array_equal(x, y):
        return pair.height, 0.0, 0.0, 0.0, 1.0, np.nan
    res = paired_difference(x, y, confidence_level=level, n_resamples=n_resamples, seed=seed)
    ci = res.confidence_interval
    return pair.height, res.difference, ci.low, ci.high, res.pvalue, res.mdd


def _identical_outputs(
    df: pl.DataFrame, provider: str, output: str | None, a: str, ref: str
) -> float | None:
    """Share of (item, variant, run) calls of ``a`` whose output equals the reference's."""
    if output is None:
        return None
    # the variant without the compared column (a derived variant key names it)
    variant = pl.col("variant").str.replace_all(f"(^|\\|){re.escape(provider)}=[^|]*", "")
    df = df.with_columns(variant.alias("__variant"))
    key = ["__cluster", "__variant", "run"]
    x = df.filter(pl.col(provider) == a).select(*key, pl.col(output).alias("__a"))
    y = df.filter(pl.col(provider) == ref).select(*key, pl.col(output).alias("__b"))
    both = x.join(y, on=key, how="inner").drop_nulls(["__a", "__b"])
    if both.height == 0:
        return None
    return float((both["__a"] == both["__b"]).mean())


def _crossed_settings(
    lf: pl.LazyFrame, base: Sequence[str], provider: str, given: Any
) -> tuple[str, ...]:
    """``base`` and the held settings that vary within two or more providers of a group."""
    held = [h for h in given.held_by(base, None, also=(provider,)) if h not in base]
    if not held:
        return tuple(base)
    keys = [*base, provider]
    per = lf.group_by(keys).agg(pl.col(h).n_unique() for h in held)
    top = per.group_by(list(base)).agg((pl.col(h) > 1).sum() for h in held)
    row = top.select(pl.col(h).max() for h in held).collect().row(0)
    return (*base, *(h for h, k in zip(held, row) if k >= 2))


def _setting_effects(
    df: pl.DataFrame, keys: Sequence[str], settings: Sequence[str], output: str | None
) -> pl.DataFrame:
    """Per group of ``keys`` and setting, whether each level changes the outputs at all.

    Each level is compared with the group's best-covered level on the calls both made (same
    item, run and prompt variant): the share of identical answers (or responses).
    """
    schema = {k: df.schema[k] for k in keys} | {
        "setting": pl.String,
        "level": pl.String,
        "reference_level": pl.String,
        "n_calls": pl.Int64,
        "identical_outputs": pl.Float64,
        "no_effect": pl.Boolean,
    }
    rows = []
    if output is not None:
        for name in settings:
            for key, g in _groups(df, list(keys)).items():
                g = g.with_columns(pl.col(name).cast(pl.String))
                cov = (
                    g.filter(pl.col(output).is_not_null())
                    .group_by(name)
                    .len()
                    .sort(["len", name], descending=[True, False], nulls_last=True)
                )
                levels = [v for v in cov[name].to_list() if v is not None]
                if len(levels) < 2:
                    continue
                ref = levels[0]
                for lev in sorted(levels[1:]):
                    share = _identical_outputs(g, name, output, lev, ref)
                    if share is None:
                        continue
                    n = g.filter(pl.col(name) == lev).height
                    rows.append((*key, name, lev, ref, n, share, share == 1.0))
    return pl.DataFrame(rows, schema=schema, orient="row").sort([*keys, "setting", "level"])


def _verdict(row: Mapping[str, Any], alpha: float) -> str:
    """One phrase: how a provider compares with the reference, and why."""
    if row["is_reference"]:
        return "reference"
    if row["all_failed"]:
        return "every call failed (errors)"
    if not row["n_items"]:
        return "no items shared with the reference"
    same = row["identical_outputs"]
    if same is not None and same == 1.0:
        return "identical outputs (no effect)"
    p_f, p_x, p_e = row["pvalue_adjusted"], row["pvalue_excluded_adjusted"], row["error_pvalue"]
    sig_f = p_f is not None and not np.isnan(p_f) and p_f < alpha
    sig_x = p_x is not None and not np.isnan(p_x) and p_x < alpha
    sig_e = p_e is not None and not np.isnan(p_e) and p_e < alpha
    if not sig_f and not sig_x:
        return "within noise"
    d = row["difference"] if sig_f else row["difference_excluded"]
    word = "lower" if d < 0 else "higher"
    if sig_x:
        why = "answers and errors" if sig_e and sig_f else "answers"
    else:
        why = "errors"
    return f"{word} ({why})"


def _versus_reference(
    df: pl.DataFrame,
    by: Sequence[str],
    provider: str,
    *,
    reference: str | None,
    level: float,
    n_resamples: int,
    seed: int,
    correction: str,
) -> pl.DataFrame:
    """Every provider of each group of ``by`` against the group's reference; see provider_audit."""
    output = next((c for c in ("answer", "response") if c in df.columns), None)
    alpha = 1.0 - level
    rows = []
    for key, g in _groups(df, list(by)).items():
        cov = {
            str(p): (int((~sub["__err"]).sum()), sub.height)
            for (p,), sub in g.partition_by(provider, as_dict=True, maintain_order=True).items()
        }
        model = str(dict(zip(by, key)).get("model", key[0] if key else ""))
        ref, why = choose_reference(model, cov, reference)
        g = g.with_columns(pl.col(provider).cast(pl.String))
        fail = _item_means(g, provider, "__fail").pivot(
            on=provider, index="__cluster", values="__fail"
        )
        excl = _item_means(g.filter(~pl.col("__err")), provider, "__fail").pivot(
            on=provider, index="__cluster", values="__fail"
        )
        errs = _item_means(
            g.with_columns(pl.col("__err").cast(pl.Float64)), provider, "__err"
        ).pivot(on=provider, index="__cluster", values="__err")
        group_rows = []
        for p in sorted(cov):
            all_failed = cov[p][0] == 0 and cov[p][1] > 0
            if p == ref:
                n_f = int(fail[p].is_not_null().sum()) if p in fail.columns else 0
                d_f = lo_f = hi_f = p_f = mdd = np.nan
                d_x = lo_x = hi_x = p_x = d_e = p_e = np.nan
            else:
                n_f, d_f, lo_f, hi_f, p_f, mdd = _paired(fail, p, ref, level, n_resamples, seed)
                _, d_x, lo_x, hi_x, p_x, _ = _paired(excl, p, ref, level, n_resamples, seed)
                _, d_e, _, _, p_e, _ = _paired(errs, p, ref, level, n_resamples, seed)
            group_rows.append(
                {
                    **dict(zip(by, key)),
                    provider: p,
                    "reference": ref,
                    "reference_reason": why,
                    "is_reference": p == ref,
                    "all_failed": all_failed,
                    "n_items": int(n_f),
                    "difference": d_f,
                    "ci_low": lo_f,
                    "ci_high": hi_f,
                    "pvalue": p_f,
                    "mdd": mdd,
                    "difference_excluded": d_x,
                    "ci_low_excluded": lo_x,
                    "ci_high_excluded": hi_x,
                    "pvalue_excluded": p_x,
                    "error_rate_difference": d_e,
                    "error_pvalue": p_e,
                    "identical_outputs": (
                        None if p == ref else _identical_outputs(g, provider, output, p, ref)
                    ),
                }
            )
        for policy in ("", "_excluded"):
            pv = np.array([r[f"pvalue{policy}"] for r in group_rows], dtype=float)
            adj = adjust(pv, correction)
            for r, a in zip(group_rows, adj):
                r[f"pvalue{policy}_adjusted"] = float(a)
        for r in group_rows:
            r["verdict"] = _verdict(r, alpha)
        rows.extend(group_rows)
    schema = {b: df.schema[b] for b in by} | {
        provider: pl.String,
        "reference": pl.String,
        "reference_reason": pl.String,
        "is_reference": pl.Boolean,
        "all_failed": pl.Boolean,
        "n_items": pl.Int64,
        "difference": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "pvalue": pl.Float64,
        "pvalue_adjusted": pl.Float64,
        "mdd": pl.Float64,
        "difference_excluded": pl.Float64,
        "ci_low_excluded": pl.Float64,
        "ci_high_excluded": pl.Float64,
        "pvalue_excluded": pl.Float64,
        "pvalue_excluded_adjusted": pl.Float64,
        "error_rate_difference": pl.Float64,
        "error_pvalue": pl.Float64,
        "identical_outputs": pl.Float64,
        "verdict": pl.String,
    }
    out = pl.DataFrame([{c: r.get(c) for c in schema} for r in rows], schema=schema)
    return (
        out.fill_nan(None)
        .with_columns(
            pl.lit(correction).alias("correction"), pl.lit(level).alias("confidence_level")
        )
        .sort([*by, provider])
    )


def _within_range(g: pl.DataFrame, low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` cut to the group's declared metric range (unchanged where none is)."""
    if "metric_low" in g.columns and g.height:
        lo = g["metric_low"].drop_nulls()
        if lo.len() and low == low:
            low = max(low, float(lo.min()))
    if "metric_high" in g.columns and g.height:
        hi = g["metric_high"].drop_nulls()
        if hi.len() and high == high:
            high = min(high, float(hi.max()))
    return low, high


def provider_audit(
    observations: TableLike,
    *,
    provider: str = "provider",
    method: str = "cluster",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    latency_grid: Sequence[float] | None = None,
    by: Sequence[str] | None = None,
    reference: str | None = None,
    correction: str = "holm",
    settings: Sequence[str] | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> ProviderAudit:
    r"""Audit providers: error rates, scores under two error policies, paired differences.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Item-level observation table with a provider column; ``error`` (null for a clean call)
        and ``latency_s`` are used when present.
    provider : str, default 'provider'
        Column naming the API provider.
    method : {'cluster', 't', 'wilson'}, default 'cluster'
        Interval of the mean score: cluster-robust over items (repeated variants and runs of an
        item are correlated), ``t`` over calls, or Wilson (0/1 scores).
    confidence_level : float, default 0.95
        Confidence level of the intervals.
    n_resamples : int, default 9999
        Random sign flips of the paired provider tests.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    latency_grid : sequence of float, optional
        Latencies ``t`` at which the tail-to-quality curve is evaluated; default 50 points
        from 0 to the largest latency.
    by : tuple of str, optional
        Columns that define the groups (a provider is audited within each group). Default:
        ``('model', 'metric')`` and every other setting that varies within them for two or more
        providers (a temperature beside the compared templates): providers are compared at
        each of its levels, never pooled over levels they may cover unequally. A setting that
        varies for one provider only (its own option) is checked for an effect (``settings``)
        instead. Giving ``by`` pools on purpose.
    reference : str, optional
        The provider every other one is compared with (``versus``), in each group where it
        serves the model. Default: the model developer's own API when it is a provider
        (:func:`developer_of`), else the best-covered provider (most scored calls).
    correction : {'holm', 'bonferroni', 'hochberg', 'bh', 'none', ...}, default 'holm'
        Multiplicity correction of the comparisons with the reference, over the providers of
        one group (one family per group and policy).
    settings : sequence of str, optional
        Setting columns checked for any effect at all (``settings`` frame). Default: the
        design's settings (:func:`evalstats.infer_design`) when the table was read through one,
        else every factor column of 2 to 20 levels other than ``provider`` and ``by``.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    ProviderAudit
        ``errors``, ``scores``, ``policies``, ``versus``, ``differences``, ``latency``,
        ``tail_quality`` frames.

    Raises
    ------
    SchemaError
        The provider column, ``item`` or a column of ``by`` is missing.

    Notes
    -----
    With :math:`N` calls, :math:`E` errored calls and :math:`C` correct clean calls (sum of
    clean scores), *errors as failures* scores :math:`C/N` (an errored call scores 0 whatever
    was recorded) and *errors excluded* scores :math:`C/(N-E)`, so
    :math:`\text{failures} = \text{excluded}\cdot(1 - E/N)`: the policies differ exactly by the
    error share. Error rates use Wilson intervals over calls. Provider differences are paired
    on items (item means over variants and runs) with :func:`paired_difference`. The
    tail-to-quality curve is :math:`q(t) = \frac1N\sum_i s_i\,[\ell_i \le t]` with errors
    scored 0.

    An errored call is a row with a non-null ``error``, with or without a score (loaders keep
    calls that failed without one; see :mod:`evalstats.io._errors` for the classes). The
    policies' difference :math:`D = C/N - C/(N-E)` gets a delta-method interval that is
    robust to clustering on items: with per-item sums :math:`s_c, n_c, e_c` and
    :math:`m_c = n_c - e_c`, the influence of item :math:`c` is
    :math:`u_c = (s_c - R_f n_c)/N - (s_c - R_x m_c)/(N-E)`, :math:`\widehat{\mathrm{Var}}(D)
    = \frac{G}{G-1}\sum_c u_c^2` over :math:`G` items, and the interval uses :math:`t_{G-1}`.

    ``versus`` pairs each provider with the reference on the items both served (item means
    over variants and runs, so repeated runs of an item are one unit), with
    :func:`paired_difference` (its ``mdd`` at 80 % power), once with errors as failures and
    once with errors excluded, and the item error rates likewise. The verdict: ``within
    noise`` when neither policy's adjusted p-value is below :math:`1 -` ``confidence_level``;
    else ``lower`` or ``higher`` with the reason: ``errors`` (only the errors-as-failures
    difference is significant), ``answers`` (the difference remains with errors excluded) or
    ``answers and errors`` (the error rates differ too); ``every call failed (errors)`` when
    the provider answered no call at all; ``identical outputs (no effect)``
    when every shared call gave the reference's answer (a setting that was not passed
    through); ``no items shared with the reference`` when the two have no item in common.
    Checked against: planted error rates of :func:`evalstats.simulate.observations`
    (``tests/compare/test_providers.py``).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=1, n_items=200, n_variants=5, providers=("a", "b"),
    ...                    error_rates={"a": {"timeout": 0.02}, "b": {"timeout": 0.1}}, seed=0)
    >>> audit = provider_audit(obs)
    >>> audit.errors.filter(category="timeout").select("provider", "rate").rows()
    [('a', 0.016), ('b', 0.107)]
    """
    given = analysis_input(observations, roles=roles, design=design)
    observations, inferred = given.table, given.design
    check_choice("method", method, ("cluster", "t", "wilson"))
    level = check_confidence_level(confidence_level)
    lf = validate_observations(observations, require_item=True, errored="keep")
    names = lf.collect_schema().names()
    if provider not in names:
        raise SchemaError(
            f"the observation table has no provider column {provider!r} (columns: "
            f"{', '.join(names)}). Pass `provider=` naming it."
        )
    base = ("model", "metric") if by is None else by
    base = validate_by(names, base, table="observation table")
    if provider in base:
        raise SchemaError(f"`by` must not contain the provider column {provider!r}.")
    # settings never pooled: another setting that varies within the groups of two or more
    # providers (a temperature beside the compared templates) splits them (issue 41); one that
    # varies for a single provider (its own option) is checked for an effect instead
    by = _crossed_settings(lf, base, provider, given) if by is None else base
    keys = [*by, provider]
    # a table built by hand (not read by a loader) may carry the raw error text or HTTP code:
    # class it as the loaders do (a class stays itself)
    err = error_class(pl.col("error")) if "error" in names else pl.lit(None, dtype=pl.String)
    cols = [pl.col(c) for c in dict.fromkeys([*keys, "dataset", "item", "variant", "run", "score"])]
    cols.append(err.alias("error"))
    cols += [pl.col(c).cast(pl.String) for c in ("answer", "response") if c in names]
    if settings is None:
        # the design's settings when there is one, else factor columns of a few levels (the
        # check is a join per level: prompt texts or ids of thousands of levels are no setting)
        pool = inferred.settings if inferred is not None else factor_columns(names)
        pool = [c for c in pool if c in names and c not in (*base, provider)]
        counts = lf.select(pl.col(c).n_unique() for c in pool).collect().row(0) if pool else ()
        settings = [c for c, k in zip(pool, counts) if 2 <= k <= _MAX_SETTING_LEVELS]
    else:
        settings = list(settings)
        missing = [c for c in settings if c not in names]
        if missing:
            raise SchemaError(
                f"`settings` names {missing[0]!r}, which is not a column of the observation "
                f"table (columns: {', '.join(names)})."
            )
    cols += [pl.col(c) for c in settings if c not in keys]
    if "latency_s" in names:
        cols.append(pl.col("latency_s"))
    # the metric's declared range bounds the score intervals (a grade on [0, 1] with 7 items
    # gives a t interval reaching below 0: the mean cannot be there)
    cols += [pl.col(c) for c in ("metric_low", "metric_high") if c in names and c not in keys]
    df = lf.select(cols).collect()
    df = df.with_columns(
        pl.col("error").is_not_null().alias("__err"),
        pl.concat_str(["dataset", "item"], separator="\x1f").alias("__cluster"),
    ).with_columns(
        pl.when("__err").then(0.0).otherwise(pl.col("score")).alias("__fail"),
    )
    key_schema = {k: df.schema[k] for k in keys}

    # error rates --------------------------------------------------------------------------
    categories = sorted(df["error"].drop_nulls().unique().to_list())
    err_rows = []
    for key, g in _groups(df, keys).items():
        n = g.height
        for cat in ["any", *categories]:
            hits = g["__err"] if cat == "any" else (g["error"] == cat).fill_null(False)
            x = hits.cast(pl.Float64).to_numpy()
            mean, _, low, high = mean_interval(x, method="wilson", confidence_level=level)
            err_rows.append((*key, cat, n, int(x.sum()), mean, low, high))
    errors = pl.DataFrame(
        err_rows,
        schema=key_schema
        | {
            "category": pl.String,
            "n_calls": pl.Int64,
            "n_errors": pl.Int64,
            "rate": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
        },
        orient="row",
    ).sort([*keys, "category"])

    # scores under the two policies --------------------------------------------------------
    # the metric's bounds (declared, or [0, 1] when every score is), for the exact interval of
    # a model at one of them (every call failed: 0 % with [0, 6.1 %] over 59 items, not NaN)
    bounds_of = _metric_bounds(df, keys)
    score_rows = []
    for key, g in _groups(df, keys).items():
        n = g.height
        n_err = int(g["__err"].sum())
        for policy in POLICIES:
            sub = g if policy == "errors_as_failures" else g.filter(~pl.col("__err"))
            x = sub["__fail"].to_numpy()
            clusters = sub["__cluster"].to_numpy()
            # the warnings name the model and the policy: a real MBSE report read "constant
            # scores: cluster-robust SE is 0; NaN." with no word of which
            where = f"{describe_group(dict(zip(keys, key)))} ({policy.replace('_', ' ')})"
            mean, se, low, high = mean_interval(
                x,
                method=method,
                confidence_level=level,
                clusters=clusters,
                bounds=bounds_of(key),
                exact_at_bounds=True,
                where=where,
            )
            low, high = _within_range(g, low, high)
            score_rows.append((*key, policy, n, n_err, n_err / n, x.size, mean, se, low, high))
    scores = pl.DataFrame(
        score_rows,
        schema=key_schema
        | {
            "policy": pl.String,
            "n_calls": pl.Int64,
            "n_errors": pl.Int64,
            "error_share": pl.Float64,
            "n": pl.Int64,
            "mean": pl.Float64,
            "se": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
        },
        orient="row",
    ).with_columns(pl.lit(method).alias("method"), pl.lit(level).alias("confidence_level"))
    scores = scores.sort([*keys, "policy"])

    # the two policies side by side, and their difference ---------------------------------
    pol_rows = []
    for key, g in _groups(df, keys).items():
        pol_rows.append((*key, *_policy_difference(g, level)))
    policies = pl.DataFrame(
        pol_rows,
        schema=key_schema
        | {
            "as_failures": pl.Float64,
            "excluded": pl.Float64,
            "difference": pl.Float64,
            "difference_se": pl.Float64,
            "difference_ci_low": pl.Float64,
            "difference_ci_high": pl.Float64,
        },
        orient="row",
    ).drop("as_failures", "excluded")
    wide = [
        scores.filter(pl.col("policy") == pol).select(
            *keys,
            pl.col("mean").alias(short),
            pl.col("ci_low").alias(f"{short}_ci_low"),
            pl.col("ci_high").alias(f"{short}_ci_high"),
        )
        for pol, short in (("errors_as_failures", "as_failures"), ("errors_excluded", "excluded"))
    ]
    any_err = errors.filter(pl.col("category") == "any").select(
        *keys,
        "n_calls",
        "n_errors",
        pl.col("rate").alias("error_rate"),
        pl.col("ci_low").alias("error_ci_low"),
        pl.col("ci_high").alias("error_ci_high"),
    )
    policies = (
        any_err.join(wide[0], on=keys, nulls_equal=True)
        .join(wide[1], on=keys, nulls_equal=True)
        .join(policies, on=keys, nulls_equal=True)
        .fill_nan(None)
        .with_columns(pl.lit(level).alias("confidence_level"))
        .sort(keys)
    )

    # every provider against the reference of its group ------------------------------------
    check_choice("correction", correction, tuple(CORRECTIONS))
    versus = _versus_reference(
        df,
        by,
        provider,
        reference=reference,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
        correction=correction,
    )

    # settings that change nothing ----------------------------------------------------------
    output = next((c for c in ("answer", "response") if c in df.columns), None)
    # a held setting is checked for any effect within (group, provider), over its levels
    setting_effects = _setting_effects(df, [*base, provider], settings, output)

    # paired provider differences on shared items ------------------------------------------
    diff_frames = []
    for key, g in _groups(df, list(by)).items():
        for policy in POLICIES:
            sub = g if policy == "errors_as_failures" else g.filter(~pl.col("__err"))
            wide = (
                sub.group_by(["__cluster", provider])
                .agg(pl.col("__fail").mean())
                .pivot(on=provider, index="__cluster", values="__fail", sort_columns=True)
                .sort("__cluster")
            )
            provs = [c for c in wide.columns if c != "__cluster"]
            for pa, pb in combinations(provs, 2):
                pair = wide.select(pa, pb).drop_nulls()
                if pair.height < 2:
                    continue
                res = paired_difference(
                    pair[pa].to_numpy(),
                    pair[pb].to_numpy(),
                    confidence_level=level,
                    n_resamples=n_resamples,
                    seed=seed,
                )
                head = pl.DataFrame(
                    {
                        **{b: [k] for b, k in zip(by, key)},
                        "policy": [policy],
                        "provider_a": [pa],
                        "provider_b": [pb],
                    },
                    schema={b: df.schema[b] for b in by}
                    | {"policy": pl.String, "provider_a": pl.String, "provider_b": pl.String},
                )
                diff_frames.append(pl.concat([head, res.to_frame()], how="horizontal"))
    differences = (
        pl.concat(diff_frames).sort([*by, "policy", "provider_a", "provider_b"])
        if diff_frames
        else pl.DataFrame()
    )

    # latency and tail-to-quality ----------------------------------------------------------
    lat_schema = key_schema | {
        "n": pl.Int64,
        "mean": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "median": pl.Float64,
        "p90": pl.Float64,
        "p99": pl.Float64,
    }
    tq_schema = key_schema | {"latency_s": pl.Float64, "quality": pl.Float64}
    lat_rows, tq_rows = [], []
    if "latency_s" in df.columns:
        lat = df.filter(pl.col("latency_s").is_not_null())
        grid = (
            np.asarray(latency_grid, dtype=float)
            if latency_grid is not None
            else np.linspace(0.0, float(lat["latency_s"].max() or 0.0), 50)
        )
        for key, g in _groups(lat, keys).items():
            t = g["latency_s"].to_numpy()
            mean, _, low, high = mean_interval(t, method="t", confidence_level=level)
            q = np.quantile(t, [0.5, 0.9, 0.99])
            lat_rows.append((*key, t.size, mean, low, high, *map(float, q)))
            s = g["__fail"].to_numpy()
            order = np.argsort(t, kind="stable")
            cum = np.concatenate([[0.0], np.cumsum(s[order])])
            within = np.searchsorted(t[order], grid, side="right")
            for tt, k in zip(grid, within):
                tq_rows.append((*key, float(tt), float(cum[k] / t.size)))
    latency = pl.DataFrame(lat_rows, schema=lat_schema, orient="row").sort(keys)
    tail_quality = pl.DataFrame(tq_rows, schema=tq_schema, orient="row").sort([*keys, "latency_s"])
    return ProviderAudit(
        errors=errors,
        scores=scores,
        differences=differences,
        latency=latency,
        tail_quality=tail_quality,
        confidence_level=level,
        method=method,
        seed=seed,
        policies=policies,
        versus=versus,
        correction=correction,
        settings=setting_effects,
        provider=provider,
        by=tuple(by),
    )
