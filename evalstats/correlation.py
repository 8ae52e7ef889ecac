"""Correlation matrices over the groups of a stability table, with permutation p-values.

The llm-stability paper correlates, across (model, task) groups, agreement (TARa@N, TARr@N),
accuracy spread, mean accuracy and input/output lengths (its Figures 5 and 6). With tens of
groups the asymptotic p-values of Spearman's and Pearson's tests are unreliable, so
:func:`correlation_matrix` also gives permutation p-values: exact when every pairing can be
enumerated, Monte Carlo otherwise.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats._kernels import is_constant, snap_ties
from evalstats.errors import DegenerateDataWarning, ParameterError, SchemaError
from evalstats.schema import as_lazy

if TYPE_CHECKING:
    from evalstats._frames import TableLike

__all__ = ["DEFAULT_COLUMNS", "correlation_matrix", "spearman_matrix"]

#: Stability-table columns correlated by default.
DEFAULT_COLUMNS: tuple[str, ...] = (
    "tar_a",
    "tar_r",
    "spread",
    "acc_mean",
    "input_len",
    "output_len",
)

_METHODS = ("spearman", "kendall", "pearson")
_ALTERNATIVES = ("two-sided", "less", "greater")


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r between ``b`` and each row of ``a`` (``a``: (..., n); ``b``: (n,))."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean()
    num = (a * b).sum(axis=-1)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum())
    return np.clip(num / den, -1.0, 1.0)


def _kendall_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall tau-b between ``b`` and each row of ``a`` (pairwise signs; fine for small n)."""
    n = b.size
    iu, ju = np.triu_indices(n, k=1)
    sb = np.sign(b[iu] - b[ju])
    sa = np.sign(a[..., iu] - a[..., ju])
    num = (sa * sb).sum(axis=-1)
    den = np.sqrt((sa * sa).sum(axis=-1) * (sb * sb).sum())
    return num / den


def _rankdata(x: np.ndarray) -> np.ndarray:
    import scipy.stats as st

    return st.rankdata(x)


def _asymptotic(x: np.ndarray, y: np.ndarray, method: str, alternative: str) -> tuple[float, float]:
    import scipy.stats as st

    if method == "spearman":
        res = st.spearmanr(x, y, alternative=alternative)
    elif method == "kendall":
        res = st.kendalltau(x, y, alternative=alternative)
    else:
        res = st.pearsonr(x, y, alternative=alternative)
    return float(res.statistic), float(res.pvalue)


#: Permuted correlations this close to the observed one are ties (they differ by rounding only).
_TIE_ATOL = 1e-12


def _permutation(
    x: np.ndarray, y: np.ndarray, method: str, alternative: str, n_resamples: int, seed: int
) -> tuple[float, bool]:
    """Permutation p-value of the correlation (pairings of x with y); ``(pvalue, exact)``."""
    import scipy.stats as st

    if method == "spearman":
        x, y = _rankdata(x), _rankdata(y)
    if method == "kendall":

        def statistic(a: np.ndarray, axis: int = -1) -> np.ndarray:
            return _kendall_rows(np.moveaxis(a, axis, -1), y)

    else:
        # a permutation of x keeps its mean and norm: centre and scale once, then each
        # permuted r is one dot product (the statistic of _pearson_rows up to rounding)
        x = x - x.mean()
        yc = y - y.mean()
        yc = yc / np.sqrt((x * x).sum() * (yc * yc).sum())

        def statistic(a: np.ndarray, axis: int = -1) -> np.ndarray:
            return np.clip(np.moveaxis(a, axis, -1) @ yc, -1.0, 1.0)

    # a pairing whose r equals the observed one in exact arithmetic can differ from it in the
    # last bits (r = 0 up to 1e-17 either side), and scipy's tie tolerance is relative to the
    # observed value (none at r = 0): snap such pairings onto it (r is bounded by 1, so an
    # absolute tolerance), or the exact p-value depends on which column is permuted
    raw = statistic
    observed = float(raw(x[np.newaxis, :])[0])

    def statistic(a: np.ndarray, axis: int = -1) -> np.ndarray:  # noqa: F811
        s = raw(a, axis)
        return np.where(np.abs(s - observed) <= _TIE_ATOL, observed, s)

    batch = max(1, min(n_resamples, 2_000_000 // max(x.size * x.size, 1)))
    res = st.permutation_test(
        (x,),
        statistic,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=n_resamples,
        alternative=alternative,
        rng=seed,
        batch=batch,
    )
    exact = math.factorial(x.size) <= n_resamples
    return float(res.pvalue), exact


def correlation_matrix(
    frame: TableLike,
    *,
    columns: Sequence[str] = DEFAULT_COLUMNS,
    method: str = "spearman",
    alternative: str = "two-sided",
    n_resamples: int = 9999,
    seed: int = 0,
) -> pl.DataFrame:
    r"""Pairwise correlations between columns over the rows (groups) of a table.

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Usually the stability table (one row per model, dataset and variant; see
        :func:`evalstats.stability.stability_table`); any table with numeric ``columns`` works.
    columns : sequence of str, default ('tar_a', 'tar_r', 'spread', 'acc_mean', 'input_len', 'output_len')
        Numeric columns to correlate; at least two.
    method : {'spearman', 'kendall', 'pearson'}, default 'spearman'
        Correlation coefficient (Kendall's is tau-b).
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Alternative hypothesis of both p-values.
    n_resamples : int, default 9999
        Permutations for ``pvalue_perm``. When ``n! <= n_resamples`` all pairings are enumerated
        and the p-value is exact; 0 skips the permutation test (``pvalue_perm`` is null).
    seed : int, default 0
        Seed of the Monte Carlo permutations; the same seed gives the same p-values.

    Returns
    -------
    polars.DataFrame
        One row per unordered pair of ``columns`` (``x`` before ``y`` in the order given), with
        ``x``, ``y``, ``method``, ``statistic``, ``pvalue`` (scipy's asymptotic or exact p-value
        of ``spearmanr``/``kendalltau``/``pearsonr``), ``pvalue_perm``, ``perm_exact`` (whether
        the permutation p-value is exact), ``n`` (rows where both are finite), ``n_resamples``,
        ``alternative`` and ``seed``.

    Raises
    ------
    SchemaError
        If a column is missing or not numeric.
    ParameterError
        If ``method``, ``alternative``, ``n_resamples`` or ``columns`` is invalid.

    Warns
    -----
    DegenerateDataWarning
        For a pair with fewer than 3 complete rows or a constant column; its values are NaN.

    See Also
    --------
    spearman_matrix : The same with ``method='spearman'``.

    Notes
    -----
    Rows where either column is null or NaN are dropped pair by pair. For Spearman and Kendall,
    values of a column closer than 1e-12 times its largest |value| are first set equal
    (:func:`evalstats._kernels.snap_ties`): accuracies and spreads computed as float means
    differ in the last bit where the fractions are equal, and ranking them would split ties
    (changing rho, the tie correction and the exact permutation p-value). Spearman's rho is
    Pearson's r of the average ranks; Kendall's tau-b is
    :math:`\sum_{i<j} s^x_{ij} s^y_{ij} / \sqrt{\sum (s^x_{ij})^2 \sum (s^y_{ij})^2}` with
    :math:`s_{ij} = \operatorname{sign}(v_i - v_j)`.

    The permutation p-value holds ``y`` fixed and permutes ``x`` (scipy's
    ``permutation_test(..., permutation_type='pairings')``): the share of the ``n!`` pairings
    (or of ``n_resamples`` random ones, counting the observed one, so never 0) whose statistic is
    at least as extreme. scipy's documentation notes that the asymptotic Spearman p-value needs
    large samples (hundreds of rows); across tens of groups use ``pvalue_perm``.

    Checked against: ``scipy.stats.spearmanr``, ``kendalltau``, ``pearsonr`` and
    ``permutation_test`` (scipy 1.17) on the authors' stability table and on simulated data,
    fixtures/reference/correlation/ (see its PROVENANCE).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = pl.DataFrame({"tar_a": rng.random(7), "spread": rng.random(7)})
    >>> r = correlation_matrix(t, columns=["tar_a", "spread"])
    >>> r.select("x", "y", "n", "perm_exact").rows()
    [('tar_a', 'spread', 7, True)]
    >>> [round(v, 4) for v in r.select("statistic", "pvalue", "pvalue_perm").row(0)]
    [-0.2857, 0.5345, 0.556]
    """
    cols = list(columns)
    if isinstance(columns, str) or len(cols) < 2 or len(set(cols)) != len(cols):
        raise ParameterError(f"`columns` must name at least two distinct columns, got {columns!r}.")
    if method not in _METHODS:
        raise ParameterError(
            f"`method` must be one of {', '.join(map(repr, _METHODS))}, got {method!r}."
        )
    if alternative not in _ALTERNATIVES:
        raise ParameterError(
            f"`alternative` must be one of {', '.join(map(repr, _ALTERNATIVES))}, got {alternative!r}."
        )
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 0
    ):
        raise ParameterError(f"`n_resamples` must be a non-negative integer, got {n_resamples!r}.")
    lf = as_lazy(frame)
    schema = lf.collect_schema()
    for c in cols:
        if c not in schema:
            raise SchemaError(
                f"`columns` names {c!r}, which is not a column of the table "
                f"(columns: {', '.join(schema.names())})."
            )
        if not (schema[c].is_numeric() or schema[c] == pl.Null()):
            raise SchemaError(f"column {c!r} must be numeric to correlate, got {schema[c]}.")
    data = lf.select([pl.col(c).cast(pl.Float64) for c in cols]).collect()
    arrays = {c: data[c].to_numpy(allow_copy=True).astype(float) for c in cols}
    nan = float("nan")
    rows = []
    for i, cx in enumerate(cols):
        for cy in cols[i + 1 :]:
            x, y = arrays[cx], arrays[cy]
            ok = np.isfinite(x) & np.isfinite(y)
            x, y = x[ok], y[ok]
            if method != "pearson":  # rank-based: ties split by rounding noise are ties
                x, y = snap_ties(x), snap_ties(y)
            n = int(x.size)
            pperm: float | None = None
            exact: bool | None = None
            if n < 3 or is_constant(x) or is_constant(y):  # within rounding, not ptp == 0
                why = f"{n} complete rows" if n < 3 else "a constant column"
                warnings.warn(
                    f"correlation of {cx!r} and {cy!r}: {why}; statistic and p-values are NaN.",
                    DegenerateDataWarning,
                    stacklevel=2,
                )
                stat = p = nan
                if n_resamples:
                    pperm = nan
            else:
                stat, p = _asymptotic(x, y, method, alternative)
                if n_resamples:
                    pperm, exact = _permutation(x, y, method, alternative, int(n_resamples), seed)
            rows.append(
                (cx, cy, method, stat, p, pperm, exact, n, int(n_resamples), alternative, seed)
            )
    return pl.DataFrame(
        rows,
        schema={
            "x": pl.String,
            "y": pl.String,
            "method": pl.String,
            "statistic": pl.Float64,
            "pvalue": pl.Float64,
            "pvalue_perm": pl.Float64,
            "perm_exact": pl.Boolean,
            "n": pl.Int64,
            "n_resamples": pl.Int64,
            "alternative": pl.String,
            "seed": pl.Int64,
        },
        orient="row",
    )


def spearman_matrix(
    frame: TableLike,
    *,
    columns: Sequence[str] = DEFAULT_COLUMNS,
    alternative: str = "two-sided",
    n_resamples: int = 9999,
    seed: int = 0,
) -> pl.DataFrame:
    """Spearman correlation matrix: :func:`correlation_matrix` with ``method='spearman'``.

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Usually the stability table.
    columns : sequence of str, default ('tar_a', 'tar_r', 'spread', 'acc_mean', 'input_len', 'output_len')
        Numeric columns to correlate.
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Alternative hypothesis.
    n_resamples : int, default 9999
        Permutations for ``pvalue_perm`` (exact when ``n! <= n_resamples``; 0 skips it).
    seed : int, default 0
        Seed of the Monte Carlo permutations.

    Returns
    -------
    polars.DataFrame
        As :func:`correlation_matrix`.

    Notes
    -----
    Spearman's rho is Pearson's r of the average ranks. Checked against: ``scipy.stats.spearmanr``,
    fixtures/reference/correlation/.

    Examples
    --------
    >>> t = pl.DataFrame({"tar_r": [0.1, 0.4, 0.35, 0.8], "spread": [0.3, 0.2, 0.25, 0.05]})
    >>> spearman_matrix(t, columns=["tar_r", "spread"]).select("statistic", "pvalue_perm").row(0)
    (-1.0, 0.08333333333333333)
    """
    return correlation_matrix(
        frame,
        columns=columns,
        method="spearman",
        alternative=alternative,
        n_resamples=n_resamples,
        seed=seed,
    )
