"""A/B of two runs: did the change help? Paired on items, with non-inferiority and equivalence.

Two dumps of one evaluation before and after a change (a fine-tune, a new prompt, a new serving
stack), usually with the same model name on both sides. :func:`compare_runs` pairs them on the
item (and on the prompt variant where both sides ran the same ones), tests the mean paired
difference with the machinery of :func:`compare_models` (:func:`paired_difference`), and,
given a margin, says whether the new run is non-inferior (one-sided) and equivalent (two
one-sided tests) with the same standard error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import stats

from evalstats.compare._paired import _METHODS, _item_set_rule, paired_difference
from evalstats.compare._pairtests import t_mdd
from evalstats.design._frames import analysis_input
from evalstats.errors import (
    DegenerateDataWarning,
    DesignWarning,
    InsufficientDataError,
    ParameterError,
    SchemaError,
)
from evalstats.results import (
    check_alternative,
    check_choice,
    check_confidence_level,
    check_positive_int,
)
from evalstats.schema import metric_info, validate_by, validate_observations

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["RUNS_COLUMNS", "compare_runs", "equivalence_tests", "paired_binary_tests"]

#: Result columns of :func:`compare_runs` after the group columns, in order.
RUNS_COLUMNS: dict[str, pl.DataType] = {
    "label_a": pl.String(),
    "label_b": pl.String(),
    "model_a": pl.String(),
    "model_b": pl.String(),
    "paired_on": pl.String(),
    "n": pl.Int64(),
    "n_unpaired": pl.Int64(),
    "n_clusters": pl.Int64(),
    "mean_a": pl.Float64(),
    "mean_b": pl.Float64(),
    "difference": pl.Float64(),
    "se": pl.Float64(),
    "df": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "confidence_level": pl.Float64(),
    "statistic": pl.Float64(),
    "pvalue": pl.Float64(),
    "method": pl.String(),
    "alternative": pl.String(),
    "mdd": pl.Float64(),
    "power": pl.Float64(),
    "higher_is_better": pl.Boolean(),
    "margin": pl.Float64(),
    "margin_method": pl.String(),
    "pvalue_noninferior": pl.Float64(),
    "noninferior": pl.Boolean(),
    "pvalue_equivalent": pl.Float64(),
    "equivalent": pl.Boolean(),
    "verdict": pl.String(),
    "n_resamples": pl.Int64(),
    "seed": pl.Int64(),
}


def equivalence_tests(
    difference: ArrayLike,
    se: ArrayLike,
    df: ArrayLike,
    margin: float,
    *,
    higher_is_better: bool = True,
) -> tuple[Any, Any]:
    r"""p-values of non-inferiority and of equivalence (TOST) of a difference ``b - a``.

    Parameters
    ----------
    difference : float or array
        Estimated difference :math:`\hat\Delta = \bar b - \bar a`.
    se : float or array
        Its standard error.
    df : float or array
        Degrees of freedom of the t reference distribution (:math:`n - 1` for ``n`` paired
        units, :math:`G - 1` for ``G`` clusters).
    margin : float
        The margin :math:`m > 0`, on the metric's scale.
    higher_is_better : bool, default True
        Direction of the metric: non-inferiority of ``b`` means :math:`\Delta > -m` when
        higher is better, :math:`\Delta < m` when lower is better.

    Returns
    -------
    tuple
        ``(pvalue_noninferior, pvalue_equivalent)``: floats for scalar input, arrays for
        arrays; NaN where ``se`` or ``difference`` is NaN. A standard error of 0 (constant
        differences) decides by the sign of :math:`\hat\Delta \pm m` alone.

    Notes
    -----
    Non-inferiority: :math:`H_0: s\Delta \le -m` against :math:`s\Delta > -m` (:math:`s = 1`
    when higher is better, else :math:`-1`), :math:`p = P(T_{df} \ge (s\hat\Delta + m)/SE)`.
    Equivalence (Schuirmann's two one-sided tests): :math:`H_0: |\Delta| \ge m`,
    :math:`p = \max\{P(T \ge (\hat\Delta + m)/SE),\ P(T \le (\hat\Delta - m)/SE)\}`; it
    rejects at level :math:`\alpha` exactly when the :math:`1 - 2\alpha` interval lies within
    :math:`(-m, m)`. Both tests have size at most :math:`\alpha` at the margin (checked by
    simulation in ``tests/compare/test_runs.py``).

    References
    ----------
    .. [1] D. J. Schuirmann, "A comparison of the two one-sided tests procedure and the power
       approach for assessing the equivalence of average bioavailability", Journal of
       Pharmacokinetics and Biopharmaceutics 15 (1987).

    Examples
    --------
    >>> p_ni, p_eq = equivalence_tests(0.002, 0.004, 499, 0.01)
    >>> round(p_ni, 4), round(p_eq, 4)
    (0.0014, 0.023)
    """
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin > 0):
        raise ParameterError(f"`margin` must be a positive number, got {margin!r}.")
    scalar = np.ndim(difference) == 0 and np.ndim(se) == 0
    d = np.asarray(difference, dtype=float)
    se = np.asarray(se, dtype=float)
    s = 1.0 if higher_is_better else -1.0

    def z(x: np.ndarray) -> np.ndarray:  # x / se, with se = 0 deciding by the sign of x
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se > 0, x / se, np.sign(x) * np.inf)

    p_ni = stats.t.sf(z(s * d + margin), df)
    p_eq = np.maximum(stats.t.sf(z(d + margin), df), stats.t.cdf(z(d - margin), df))
    bad = np.isnan(d) | np.isnan(se)
    p_ni, p_eq = np.where(bad, np.nan, p_ni), np.where(bad, np.nan, p_eq)
    if scalar:
        return float(p_ni), float(p_eq)
    return p_ni, p_eq


def paired_binary_tests(
    n10: int, n01: int, n: int, margin: float, *, higher_is_better: bool = True
) -> tuple[float, float]:
    r"""Non-inferiority and equivalence of paired 0/1 scores: Tango's score tests.

    Parameters
    ----------
    n10 : int
        Pairs with ``a = 1`` and ``b = 0``.
    n01 : int
        Pairs with ``a = 0`` and ``b = 1``.
    n : int
        All pairs.
    margin : float
        The margin :math:`m`, in (0, 1).
    higher_is_better : bool, default True
        Direction of the metric (see :func:`equivalence_tests`).

    Returns
    -------
    tuple of float
        ``(pvalue_noninferior, pvalue_equivalent)``.

    Notes
    -----
    :math:`\Delta = p_{01} - p_{10}`, estimated by :math:`(n_{01} - n_{10})/n`. At
    :math:`H_0: \Delta = \delta_0` the score statistic is
    :math:`Z = (\hat\Delta - \delta_0) / \sqrt{(2	ilde p_{10} + \delta_0 - \delta_0^2)/n}`,
    with :math:`	ilde p_{10}` the maximum likelihood estimate of :math:`p_{10}` under
    :math:`H_0`, the root of :math:`2n p^2 - B p - n_{10}\delta_0(1 - \delta_0) = 0`,
    :math:`B = n_{10}(1 - \delta_0) + n_{01}(1 + \delta_0) - 2n\delta_0` (Tango 1998). Its
    variance is taken where the null holds, which keeps the one-sided tests at their level
    where the Wald standard error does not (few discordant pairs). Non-inferiority tests
    :math:`\delta_0 = -m` (upper tail; :math:`+m` and lower tail when lower is better);
    equivalence both, the larger p-value. Normal reference distribution.

    References
    ----------
    .. [1] T. Tango, "Equivalence test and confidence interval for the difference in
       proportions for the paired-sample design", Statistics in Medicine 17 (1998).

    Examples
    --------
    >>> p_ni, p_eq = paired_binary_tests(30, 24, 500, 0.05)
    >>> round(p_ni, 5), round(p_eq, 5)
    (0.00698, 0.00698)
    """
    if not 0 < margin < 1:
        raise ParameterError(f"`margin` of 0/1 scores must be in (0, 1), got {margin!r}.")

    def z(d0: float) -> float:
        b, c = float(n10), float(n01)
        big_b = b * (1 - d0) + c * (1 + d0) - 2 * n * d0
        p10 = (big_b + math.sqrt(big_b**2 + 8 * n * b * d0 * (1 - d0))) / (4 * n)
        var = (2 * p10 + d0 - d0**2) / n  # > 0 for 0 < |d0| < 1
        return ((c - b) / n - d0) / math.sqrt(var)

    lower, upper = z(-margin), z(margin)
    p_lower = float(stats.norm.sf(lower))  # H0: Delta <= -m
    p_upper = float(stats.norm.cdf(upper))  # H0: Delta >= m
    p_ni = p_lower if higher_is_better else p_upper
    return p_ni, max(p_lower, p_upper)


def _check_common(a: pl.LazyFrame, b: pl.LazyFrame, labels: tuple[str, str]) -> None:
    """Raise when the two runs share no metric or no dataset (nothing can pair), saying so.

    Two runs scored with different metrics (``acc`` and ``exact_match``) pair no item; the
    message names the metrics of each side rather than counting 0 shared items.
    """
    hints = {
        "metric": "pick it on each side: --metric for a dump of several",
        "dataset": "a table without a dataset column is named after its file: give both sides "
        "the same dataset column",
    }
    for col, what in (("metric", "metrics"), ("dataset", "datasets")):
        va, vb = (
            set(side.select(pl.col(col).unique()).collect()[col].drop_nulls().to_list())
            for side in (a, b)
        )
        if va and vb and not va & vb:

            def shown(values: set) -> str:
                names = sorted(map(str, values))
                return ", ".join(map(repr, names[:4])) + (", ..." if len(names) > 4 else "")

            raise InsufficientDataError(
                f"{labels[0]!r} and {labels[1]!r} use different {what}: {labels[0]!r} has "
                f"{shown(va)} and {labels[1]!r} has {shown(vb)}, so no item pairs. A paired "
                f"comparison pairs the items of one {col} on both sides ({hints[col]})."
            )


def _sides(
    a: pl.LazyFrame, b: pl.LazyFrame, labels: tuple[str, str]
) -> tuple[pl.LazyFrame, dict[str, tuple[str, str]]]:
    """Both sides in one frame with ``__side``; model names made to pair.

    The same model names on both sides pair by name; one model on each side (renamed, a
    fine-tune) pair with each other. Returns the frame and, per pairing key, the two names.
    """
    ma = sorted(a.select(pl.col("model").unique()).collect()["model"].to_list())
    mb = sorted(b.select(pl.col("model").unique()).collect()["model"].to_list())
    if ma == mb:
        names = {m: (m, m) for m in ma}
    elif len(ma) == 1 and len(mb) == 1:
        key = ma[0] if ma[0] == mb[0] else f"{ma[0]} | {mb[0]}"
        names = {key: (ma[0], mb[0])}
        a = a.with_columns(pl.lit(key).alias("model"))
        b = b.with_columns(pl.lit(key).alias("model"))
    else:
        raise SchemaError(
            f"{labels[0]!r} has the models {ma} and {labels[1]!r} has {mb}: compare_runs pairs "
            "the same model names on both sides, or one model on each side. Filter each side "
            "to the models to compare."
        )
    cols = ["model", "dataset", "metric", "item", "variant", "run", "score"]
    declared = ["cluster" in a.collect_schema(), "cluster" in b.collect_schema()]
    frames = []
    for side, (frame, has) in enumerate(zip((a, b), declared)):
        cluster = pl.col("cluster").cast(pl.String) if has else pl.lit(None, dtype=pl.String)
        extra = [cluster.alias("cluster")] if any(declared) else []
        frames.append(frame.select(*cols, *extra).with_columns(pl.lit(side).alias("__side")))
    if any(declared) and not all(declared):
        # never drop one side's clusters: a paired item is one unit, in the cluster its
        # declaring side gives it (see _paired_items)
        has, hasnt = (labels[0], labels[1]) if declared[0] else (labels[1], labels[0])
        warnings.warn(
            f"{has!r} declares item clusters and {hasnt!r} does not: each paired item is "
            f"taken in the cluster {has!r} gives it (items without one are their own "
            "cluster), and the test is the cluster-robust t test.",
            DesignWarning,
            stacklevel=3,
        )
    return pl.concat(frames, how="vertical_relaxed"), names


def _fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _p(p: float) -> str:
    if p is None or math.isnan(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}" if p < 0.1 else f"p = {p:.2f}"


_METHOD_NAMES = {
    "t": "paired t",
    "permutation": "sign-flip permutation",
    "mcnemar": "exact McNemar",
    "mcnemar-midp": "mid-p McNemar",
    "bootstrap": "studentized bootstrap",
    "cluster": "cluster-robust t",
}


def _verdict(row: dict, alpha: float) -> str:
    """One sentence: the difference, its interval and test, the decision, the MDD, the margin."""
    la, lb = row["label_a"], row["label_b"]
    where = ", ".join(str(row[k]) for k in row["__by"] if row.get(k) is not None)
    level = f"{row['confidence_level']:.0%}"
    unit = f"{row['n']} paired items" + (
        f" in {row['n_clusters']} clusters" if row["n_clusters"] else ""
    )
    d = row["difference"]
    sign = "+" if d > 0 else ""
    head = (
        f"{lb} - {la}{' on ' + where if where else ''}: {sign}{_fmt(d)} "
        f"({level} CI {_fmt(row['ci_low'])} to {_fmt(row['ci_high'])}; {_p(row['pvalue'])}, "
        f"{_METHOD_NAMES.get(row['method'], row['method'])}, {unit})"
    )
    margin = ""
    if row["margin"] is not None:
        m = _fmt(row["margin"])
        ni = "non-inferior" if row["noninferior"] else "not shown non-inferior"
        eq = "equivalent" if row["equivalent"] else "not shown equivalent"
        margin = (
            f"; at margin {m}, {lb} is {ni} ({_p(row['pvalue_noninferior'])}) and {eq} "
            f"within +-{m} ({_p(row['pvalue_equivalent'])})"
        )
    if row["identical"]:
        return (
            f"{lb} - {la}{' on ' + where if where else ''}: the two runs give each of the "
            f"{unit} the same score{margin}."
        )
    better = (d > 0) == bool(row["higher_is_better"])
    if row["pvalue"] < alpha and d != 0:
        decision = f"{lb} is {'better' if better else 'worse'}"
    else:
        decision = "no difference detected"
    mdd = row["mdd"]
    detect = (
        f"differences of {_fmt(mdd)} or more are detected with {row['power']:.0%} power"
        if mdd is not None and not math.isnan(mdd)
        else "too few items to say which differences would be detected"
    )
    return f"{head}: {decision}; {detect}{margin}."


def compare_runs(
    a: TableLike,
    b: TableLike,
    *,
    labels: Sequence[str] = ("a", "b"),
    margin: float | None = None,
    method: str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    power: float = 0.8,
    n_resamples: int = 9999,
    seed: int = 0,
    by: Sequence[str] = ("dataset", "metric"),
    on_mismatch: str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Did the change help? Two runs of an evaluation, paired on items, with a verdict.

    Parameters
    ----------
    a, b : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        The observation tables of the two runs (the baseline ``a`` and the new run ``b``), of
        any formats: read each with :func:`evalstats.read`. Item-level rows are needed.
    labels : sequence of two str, default ('a', 'b')
        Names of the two runs in the result and the verdict (``('baseline', 'new')``).
    margin : float, optional
        The largest difference that does not matter, on the metric's scale (0.01: one point
        of accuracy). Adds the non-inferiority test (one-sided: is ``b`` no worse than ``a``
        by ``margin`` or more?) and the equivalence test (TOST: do they differ by less than
        ``margin``?), with the same standard error.
    method : {'auto', 't', 'permutation', 'mcnemar', 'mcnemar-midp', 'bootstrap'}, default 'auto'
        The paired test of the difference, as in :func:`compare_models` (``'auto'``: exact
        McNemar for 0/1 scores, the paired t test from 30 items, else permutation). With item
        clusters (a ``cluster`` column on both sides) the test is the cluster-robust t test
        (``method`` ``'auto'`` or ``'t'``).
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Direction of the test of ``mean(b - a)``.
    confidence_level : float, default 0.95
        Level of the interval; ``1 - confidence_level`` is the level of every test.
    power : float, default 0.8
        Power of the minimum detectable difference ``mdd``.
    n_resamples : int, default 9999
        Sign flips or bootstrap resamples (``permutation``, ``bootstrap``).
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, default ('dataset', 'metric')
        Groups compared separately (each its own claim: no multiplicity correction). The
        model is always a group: the same model names pair by name.
    on_mismatch : {'error', 'intersect', 'keep'}, optional
        Repeated runs of a configuration over different items, on either side: see
        :func:`evalstats.aggregate.align_item_sets`.
    roles : str or mapping, optional
        Column roles for tables not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    polars.DataFrame
        One row per model (pair) and group in ``by``: the columns of ``by``, then
        :data:`RUNS_COLUMNS`: ``label_a, label_b, model_a, model_b, paired_on`` (``items``, or
        ``items+variants`` when the runs share prompt variants), ``n`` (paired items),
        ``n_unpaired``, ``n_clusters``, ``mean_a, mean_b, difference`` (``b - a``), ``se``,
        ``df``, ``ci_low, ci_high, confidence_level, statistic, pvalue, method, alternative,
        mdd, power, higher_is_better, margin, margin_method, pvalue_noninferior,
        noninferior, pvalue_equivalent, equivalent, verdict`` (one sentence),
        ``n_resamples, seed``.

    Raises
    ------
    SchemaError
        A side has no item column, or the sides hold different models that cannot pair.
    InsufficientDataError
        A group shares fewer than two items.
    ParameterError
        An option is out of its domain, or a method other than t with item clusters.

    Warns
    -----
    DesignWarning
        Items present on one side only (counted in ``n_unpaired``).

    See Also
    --------
    compare_models : Every pair of models of one table.
    equivalence_tests : The non-inferiority and TOST p-values on a standard error.
    paired_binary_tests : The same tests for 0/1 pairs (Tango's score tests).

    Notes
    -----
    **Pairing.** Each item's score on each side is its mean over runs and over the prompt
    variants both sides ran (``paired_on='items+variants'``; when they share none, as in
    prompt A against prompt B, over all of each side's variants: ``'items'``). The paired
    difference of item :math:`i` is :math:`d_i = b_i - a_i`; the item is the sampling unit,
    so variants and runs of one item are never counted as independent.

    **Test.** ``difference`` :math:`\bar d` with its test, interval and minimum detectable
    difference from :func:`paired_difference`. With item clusters the standard error is
    cluster-robust (CR1, :math:`SE^2 = \frac{G}{G-1}\sum_g (\sum_{i \in g} (d_i - \bar d))^2 /
    n^2`) with :math:`t_{G-1}` quantiles, and ``mdd`` is the noncentral-t one at
    :math:`G - 1` degrees of freedom.

    **Margin.** With ``margin`` :math:`m`: non-inferiority :math:`H_0: s\Delta \le -m`
    (one-sided, :math:`s` the metric's direction) and equivalence :math:`H_0: |\Delta| \ge m`
    (two one-sided tests), on the standard error of the difference: :func:`equivalence_tests`
    with ``se`` and ``df`` (:math:`n - 1`, or :math:`G - 1` with clusters; ``margin_method``
    ``t`` or ``cluster``) whatever ``method`` is. For 0/1 scores paired one to one (one
    variant and run per item, no clusters) the Wald standard error makes one-sided tests
    liberal when few pairs are discordant (a size of 7% at 5% for 300 items with 6% and 1%
    discordant), so there the margin tests are Tango's score tests, whose variance is taken
    under the null (:func:`paired_binary_tests`, ``margin_method`` ``score``). Their size at
    the margin is at most :math:`1 - ` ``confidence_level`` (simulation of continuous, 0/1
    and clustered scores: ``tests/compare/test_runs.py``).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> base = observations(n_models=1, n_items=400, n_variants=1, seed=0)
    >>> new = observations(n_models=1, n_items=400, n_variants=1, seed=1)
    >>> out = compare_runs(base, new, labels=("baseline", "new"), margin=0.05)
    >>> out.select("model_a", "n", "method", "noninferior", "equivalent").rows()
    [('m0', 400, 'mcnemar', True, False)]
    """
    if len(labels) != 2 or len(set(labels)) != 2:
        raise ParameterError(f"`labels` must be two different names, got {list(labels)!r}.")
    labels = (str(labels[0]), str(labels[1]))
    check_choice("method", method, _METHODS)
    check_alternative(alternative)
    level = check_confidence_level(confidence_level)
    if not 0 < power < 1:
        raise ParameterError(f"`power` must be in (0, 1), got {power!r}.")
    n_resamples = check_positive_int("n_resamples", n_resamples)
    if margin is not None:
        equivalence_tests(0.0, 1.0, 1.0, margin)  # checks the margin
        margin = float(margin)
    alpha = round(1 - level, 12)
    by = (by,) if isinstance(by, str) else tuple(by)
    sides = []
    for label, frame in zip(labels, (a, b)):
        table = analysis_input(frame, roles=roles, design=design).table
        names = table.collect_schema().names()
        if "item" not in names:
            raise SchemaError(
                f"{label!r} has no item column: compare_runs pairs the two runs on items "
                f"(columns: {', '.join(names)})."
            )
        sides.append(_item_set_rule(validate_observations(table, require_item=True), on_mismatch))
    infos = {**metric_info(sides[0]), **metric_info(sides[1])}
    _check_common(sides[0], sides[1], labels)
    both, names = _sides(sides[0], sides[1], labels)
    by = tuple(validate_by(both.collect_schema().names(), by, table="observation table"))
    keys = ["model", *[c for c in by if c != "model"]]
    has_cluster = "cluster" in both.collect_schema().names()
    if has_cluster and method not in ("auto", "t"):
        raise ParameterError(
            f"`method={method!r}` treats items as independent, but the items are in clusters "
            "(a `cluster` column): their paired test is the cluster-robust t test "
            "(method='t' or 'auto')."
        )
    data = _paired_items(both, keys, has_cluster)
    rows = []
    unpaired_total = 0
    for key, g in data.partition_by(keys, as_dict=True, maintain_order=True).items():
        group = dict(zip(keys, key))
        where = ", ".join(f"{k}={v!r}" for k, v in group.items())
        shared = bool(g["__shared"][0])
        paired = g.drop_nulls(["__a", "__b"])
        unpaired = g.height - paired.height
        unpaired_total += unpaired
        if paired.height < 2:
            raise InsufficientDataError(
                f"{labels[0]!r} and {labels[1]!r} share {paired.height} item(s) ({where}); a "
                "paired comparison needs at least 2."
            )
        xa, xb = paired["__a"].to_numpy(), paired["__b"].to_numpy()
        n_clusters = None
        if has_cluster:
            clusters = paired["cluster"].cast(pl.String).to_numpy()
            res = _clustered(xb - xa, clusters, alternative, level, power)
            n_clusters = res["n_clusters"]
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateDataWarning)
                pd_ = paired_difference(
                    xb,
                    xa,
                    method=method,
                    alternative=alternative,
                    confidence_level=level,
                    power=power,
                    n_resamples=n_resamples,
                    seed=seed,
                )
            res = {
                "difference": pd_.difference,
                "se": pd_.se,
                "df": float(pd_.n - 1),
                "ci_low": pd_.confidence_interval.low,
                "ci_high": pd_.confidence_interval.high,
                "statistic": pd_.statistic,
                "pvalue": pd_.pvalue,
                "method": pd_.method,
                "mdd": pd_.mdd,
                "n_resamples": pd_.n_resamples
                if pd_.method in ("permutation", "bootstrap")
                else None,
            }
        if res["se"] == 0 or math.isnan(res["se"]):
            warnings.warn(
                f"the paired differences are constant ({where}): the interval is degenerate.",
                DegenerateDataWarning,
                stacklevel=2,
            )
        info = infos.get(str(group.get("metric"))) if "metric" in group else None
        hib = True if info is None else info.higher_is_better
        p_ni = p_eq = margin_method = None
        binary = bool(np.all((xa == 0) | (xa == 1)) and np.all((xb == 0) | (xb == 1)))
        if margin is not None and binary and not has_cluster and margin < 1:
            # 0/1 pairs: the Wald (t) standard error makes these one-sided tests liberal
            # when few pairs are discordant (7% at alpha = 5% for 300 items, 6% discordant);
            # the score test's variance under the null keeps them at alpha
            margin_method = "score"
            p_ni, p_eq = paired_binary_tests(
                int(np.sum((xa == 1) & (xb == 0))),
                int(np.sum((xa == 0) & (xb == 1))),
                xa.size,
                margin,
                higher_is_better=hib,
            )
        elif margin is not None:
            margin_method = "cluster" if has_cluster else "t"
            p_ni, p_eq = equivalence_tests(
                res["difference"], res["se"], res["df"], margin, higher_is_better=hib
            )
        row = {
            **{k: v for k, v in group.items() if k != "model"},
            "label_a": labels[0],
            "label_b": labels[1],
            "model_a": names[group["model"]][0],
            "model_b": names[group["model"]][1],
            "paired_on": "items+variants" if shared else "items",
            "n": paired.height,
            "n_unpaired": unpaired,
            "n_clusters": n_clusters,
            "mean_a": float(xa.mean()),
            "mean_b": float(xb.mean()),
            **{k: res[k] for k in ("difference", "se", "df", "ci_low", "ci_high")},
            "confidence_level": level,
            "statistic": res["statistic"],
            "pvalue": res["pvalue"],
            "method": res["method"],
            "alternative": alternative,
            "mdd": res["mdd"],
            "power": float(power),
            "higher_is_better": hib,
            "margin": margin,
            "margin_method": margin_method,
            "pvalue_noninferior": p_ni,
            "noninferior": None if p_ni is None else bool(p_ni < alpha),
            "pvalue_equivalent": p_eq,
            "equivalent": None if p_eq is None else bool(p_eq < alpha),
            "n_resamples": res.get("n_resamples"),
            "seed": seed,
        }
        row["verdict"] = _verdict(
            {**row, "__by": [c for c in by if c != "model"], "identical": bool(np.all(xa == xb))},
            alpha,
        )
        rows.append(row)
    if unpaired_total:
        warnings.warn(
            f"{unpaired_total} item(s) are in only one of the two runs and are left out "
            "(counted in `n_unpaired`).",
            DesignWarning,
            stacklevel=2,
        )
    group_cols = [c for c in by if c != "model"]
    schema = {**{c: both.collect_schema()[c] for c in group_cols}, **RUNS_COLUMNS}
    out = pl.DataFrame(rows, schema=schema)
    return out.sort([*group_cols, "model_a", "model_b"])


def _paired_items(both: pl.LazyFrame, keys: list[str], has_cluster: bool) -> pl.DataFrame:
    """One row per group and item: each side's mean score (``__a``, ``__b``; null when absent).

    Within a group, the rows of the prompt variants both sides ran (``__shared``), or all rows
    when they share none; the mean is over those variants and the runs.
    """
    item = [*keys, *[c for c in ("dataset",) if c not in keys], "item"]
    sides = pl.col("__side").n_unique().over([*keys, "variant"])
    lf = (
        both.with_columns(sides.alias("__ns"))
        .with_columns((pl.col("__ns").max().over(keys) == 2).alias("__shared"))
        .filter((pl.col("__ns") == 2) | ~pl.col("__shared"))
    )
    out = lf.group_by(item).agg(
        pl.col("score").filter(pl.col("__side") == 0).mean().alias("__a"),
        pl.col("score").filter(pl.col("__side") == 1).mean().alias("__b"),
        pl.col("__shared").first(),
        # the cluster either side declares (one side may declare none); an item in no
        # cluster is its own
        *([pl.col("cluster").drop_nulls().first()] if has_cluster else []),
        *([pl.col("cluster").drop_nulls().n_unique().alias("__nc")] if has_cluster else []),
    )
    if has_cluster:
        out = out.with_columns(
            pl.coalesce("cluster", pl.lit("\x00item:") + pl.col("item").cast(pl.String))
        )
    out = out.sort(item).collect()
    if has_cluster:
        clash = int((out["__nc"] > 1).sum())
        if clash:
            warnings.warn(
                f"{clash} item(s) are in one cluster in the first run and in another in the "
                "second; each is taken in the first run's cluster.",
                DesignWarning,
                stacklevel=3,
            )
        out = out.drop("__nc")
    return out


def _clustered(d: np.ndarray, clusters: np.ndarray, alternative: str, level: float, power: float):
    """Cluster-robust (CR1) t test of the mean of ``d``, with interval and MDD."""
    n = d.size
    _, codes = np.unique(clusters, return_inverse=True)
    g = int(codes.max()) + 1
    mean = float(d.mean())
    if g < 2:
        raise InsufficientDataError(
            f"the paired items fall in {g} cluster: a cluster-robust test needs at least 2."
        )
    sums = np.bincount(codes, weights=d - mean, minlength=g)
    se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / n
    df = g - 1
    alpha = 1 - level
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se if se > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
    if alternative == "two-sided":
        p = float(2 * stats.t.sf(abs(t), df))
        q = float(stats.t.isf(alpha / 2, df))
        low, high = mean - q * se, mean + q * se
    elif alternative == "greater":
        p = float(stats.t.sf(t, df))
        low, high = mean - float(stats.t.isf(alpha, df)) * se, math.inf
    else:
        p = float(stats.t.cdf(t, df))
        low, high = -math.inf, mean + float(stats.t.isf(alpha, df)) * se
    es = t_mdd(g, round(alpha, 15), power, alternative)
    return {
        "difference": mean,
        "se": se,
        "df": float(df),
        "ci_low": low,
        "ci_high": high,
        "statistic": float(t),
        "pvalue": min(p, 1.0),
        "method": "cluster",
        "mdd": es * math.sqrt(g) * se,
        "n_clusters": g,
    }
