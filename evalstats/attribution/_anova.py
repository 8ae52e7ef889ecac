"""factor_anova and interaction_means: the ANOVA cores (numpy only) and the public functions."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstats._threads import single_blas_thread as _single_blas_thread
from evalstats.attribution._common import (
    _ANOVA_SCHEMA,
    _BLOCK,
    AnovaResult,
    _block_columns,
    _codes,
    _orth,
    _project_out,
    _rows,
    _sum_coding,
    _validate_factors,
)
from evalstats.attribution._items import item_cells, sign_flip_f, stratum_f, term_scores
from evalstats.attribution._permute import freedman_lane, layout, sequential_pvalue
from evalstats.design._frames import analysis_input
from evalstats.errors import (
    DegenerateDataWarning,
    InsufficientDataError,
    ParameterError,
)
from evalstats.schema import validate_units

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

# ---------------------------------------------------------------------------------------------
# ANOVA core (numpy only)
# ---------------------------------------------------------------------------------------------


def _reduced_terms(terms: list[tuple[int, ...]], t: int, ss_type: int) -> list[int]:
    """Indices of the terms in the model that term ``t`` is added to."""
    if ss_type == 1:
        return list(range(t))
    if ss_type == 3:
        return [j for j in range(len(terms)) if j != t]
    own = set(terms[t])
    return [j for j in range(len(terms)) if j != t and not own.issubset(terms[j])]


def _anova_core(
    y: np.ndarray,
    columns: list[np.ndarray],
    terms: list[tuple[int, ...]],
    nuisance: np.ndarray,
    ss_type: int,
) -> dict[str, Any]:
    """Sums of squares of each term by model comparison on orthonormal bases.

    ``nuisance`` is an orthonormal basis of the intercept (or of the block indicators); every
    model contains it. Returns ``rss``, ``df_res``, ``q_x`` (orthonormal basis of the full model
    with the nuisance space projected out), ``resid`` (full-model residual r), ``sst``, and per
    term ``ss``, ``df``, ``a`` and ``b``: the reduced model's residual is r + Q_X a and the
    term's added space has orthonormal basis Q_X b.
    """
    n = y.size
    yc = _project_out(nuisance, y[:, None])[:, 0]
    xc = [_project_out(nuisance, c) for c in columns]
    scale = {j: float(np.linalg.norm(c, 2)) if c.shape[1] else 0.0 for j, c in enumerate(columns)}
    full_scale = max(scale.values(), default=0.0)
    q_x = _orth(np.hstack(xc), full_scale) if xc else np.zeros((n, 0))
    fit = q_x.T @ yc
    resid = yc - q_x @ fit
    rss = float(resid @ resid)
    df_res = n - nuisance.shape[1] - q_x.shape[1]
    out: dict[str, Any] = {
        "rss": rss,
        "df_res": df_res,
        "q_x": q_x,
        "resid": resid,
        "sst": float(yc @ yc),
        "terms": [],
    }
    # every model lives in span(Q_X): work in its p coordinates, so each term costs O(p^3)
    coords = [q_x.T @ c for c in xc]
    p = q_x.shape[1]
    for t in range(len(terms)):
        red = _reduced_terms(terms, t, ss_type)
        q_r = _orth(np.hstack([coords[j] for j in red]), full_scale) if red else np.zeros((p, 0))
        a = fit - q_r @ (q_r.T @ fit)  # reduced-model residual e_T = resid + Q_X a
        b = _orth(_project_out(q_r, coords[t]), scale[t])  # Q_T = Q_X b
        proj = b.T @ fit
        out["terms"].append({"ss": float(proj @ proj), "df": b.shape[1], "a": a, "b": b})
    return out


# ---------------------------------------------------------------------------------------------
# factor_anova
# ---------------------------------------------------------------------------------------------


def _check_int(name: str, value: Any, allowed: Sequence[int]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value not in allowed:
        raise ParameterError(
            f"`{name}` must be one of {', '.join(map(str, allowed))}, got {value!r}."
        )
    return int(value)


def factor_anova(
    frame: TableLike,
    *,
    factors: Sequence[str] | str,
    interactions: int = 2,
    ss_type: int = 2,
    n_resamples: int = 10000,
    max_exceedances: int | None = 100,
    block: str | Sequence[str] | None = None,
    runs: str = "mean",
    items: str = "random",
    seed: int = 0,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> AnovaResult:
    """Factorial ANOVA of scores on configuration factors, with η² and permutation p-values.

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table, one row per (model, dataset, variant, run); an observation table is
        aggregated to units first. With ``block='item'``, the item rows of an observation table
        are analysed instead.
    factors : sequence of str or str
        Factor columns (or one comma-separated string). Each is treated as categorical; its
        levels are its sorted distinct values.
    interactions : {1, 2}, default 2
        1: main effects only; 2: main effects and all two-way interactions (``a:b``).
    ss_type : {1, 2, 3}, default 2
        Sums of squares: 1 sequential (in the order of ``factors``, then the interactions),
        2 hierarchical (each term after all terms that do not contain it), 3 marginal (each
        term after all others, sum-to-zero coding).
    n_resamples : int, default 10000
        Largest number of permutations per term for ``pvalue_perm`` (0 skips them;
        ``pvalue_perm`` is then null).
    max_exceedances : int or None, default 100
        Besag–Clifford sequential stopping: a term's permutations stop at the
        ``max_exceedances``-th permuted F at or above the observed F, and its p-value is
        ``max_exceedances / L`` with L the permutations drawn (see Notes). Terms with small
        p-values never reach the limit and draw all ``n_resamples``. None draws
        ``n_resamples`` for every term.
    block : str or sequence of str, optional
        Column(s) whose level combinations are blocks (e.g. ``("model", "dataset")``): the
        blocks enter every model as a nuisance fixed effect and residuals are permuted only
        within them. ``'item'`` analyses item-level rows (see ``items``).
    runs : {'mean', 'replicates'}, default 'mean'
        ``'mean'`` averages the repeated runs of each configuration (model, dataset, variant,
        and item for item rows) before the analysis: the configuration is the experimental
        unit. ``'replicates'`` keeps every run as a row, which is right only when runs are
        independent replicates of the whole configuration (see Notes).
    items : {'random', 'fixed'}, default 'random'
        Only with item rows (``block`` holds ``'item'``). ``'random'``: the items are a sample
        of the items that could have been asked, and each term is tested against its own
        term x item interaction (the repeated-measures error stratum), with sign-flip
        permutations of the items inside it. ``'fixed'``: conclusions about these items only;
        one pooled within-item residual and Freedman–Lane permutations within items.
    seed : int, default 0
        Seed of the permutations; the same seed gives the same p-values.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    AnovaResult
        ``to_frame()`` has one row per term and a ``Residual`` row with columns ``term, df,
        sum_sq, mean_sq, statistic, pvalue, pvalue_perm, eta_sq, partial_eta_sq``, terms sorted
        by ``eta_sq`` descending; ``ss_type`` records the sums of squares used.

    Raises
    ------
    SchemaError
        A factor or the block is not a column, or a factor value is null.
    ParameterError
        ``interactions``, ``ss_type`` or ``n_resamples`` is out of its domain.
    InsufficientDataError
        A factor has a single level, or no residual degrees of freedom are left.

    See Also
    --------
    attribute : Linear and xgboost attribution of the same factors.
    interaction_means : Cell means of a two-way term, for the heatmap.

    Notes
    -----
    Each term's sum of squares is a difference of residual sums of squares,
    SS(T) = RSS(R) − RSS(R + T), where the reduced model R holds the terms before T (Type I),
    the terms that do not contain T (Type II) or all other terms (Type III). Factors use
    sum-to-zero coding, which Type III needs (treatment coding tests a different hypothesis)
    and which leaves Types I and II unchanged. Models are compared on orthonormal bases, so
    unbalanced designs and missing cells are handled: ``df`` is the rank a term adds, and a
    term fully aliased by others gets ``df`` 0 and null statistics (with a warning).

    F = (SS(T)/df(T)) / (RSS/df_res) with the full model's residual; ``pvalue`` is its F-test
    p-value. η² = SS(T)/SS_total and partial η² = SS(T)/(SS(T) + RSS). The η² of the terms and
    the residual add up to 1 (to R² without the residual) only under Type I; under Types II
    and III they need not.

    ``pvalue_perm`` follows Freedman and Lane (1983): fit the reduced model R, permute its
    residuals e, rebuild y* = ŷ_R + P e, and recompute F; p = (1 + #{F* ≥ F}) / (1 + B). All
    terms share the same B permutations. The design is factored once: with Q_T an orthonormal
    basis of what T adds to R and Q_X one of the full model, F* = (|Q_T' P e|²/df_T) /
    ((|e|² − |Q_X' P e|²)/df_res). Every e = r + Q_X a (r the full-model residual) and
    Q_T = Q_X B, so one product G = Q_X' P [r, Q_X] per permutation gives every term's F*;
    the rows of Q_X are equal within one block and one configuration cell, so
    Q_X' P e = Σ_g q_g S_g with S_g the sum of the permuted residuals that land in group g:
    one pass over the rows per permutation and term (evalstats.attribution._permute).
    With ``block``, SS_total, η² and the residual are within blocks.

    Sequential stopping (Besag and Clifford, 1991): a term stops after its h-th exceedance
    (h = ``max_exceedances``) at permutation L and gets p = h / L; a term that reaches
    ``n_resamples`` permutations with g < h exceedances gets (1 + g) / (1 + n_resamples) as
    without stopping. This p-value is exact, P(p <= a) <= a under H0 for every a, so the type I
    error is kept; the price is Monte Carlo precision where p is large (relative standard error
    about 1 / sqrt(h), 10 % at h = 100), which is where it matters least. A clearly
    non-significant term costs about h / p permutations instead of ``n_resamples`` (200 at
    p = 0.5). ``n_permutations`` on the result records each term's count. Checked in
    tests/test_attribution.py: the stopped p-value is the full run's permutations cut at the
    h-th exceedance, agrees with the 9,999-permutation p-value within its Monte Carlo error, and
    keeps the type I error under the null (300 simulated designs, slow).

    Items random (``block='item'``, ``items='random'``): items are the subjects of a
    repeated-measures design whose within-item conditions are the configuration cells (the
    level combinations of ``factors``). Rows of one item in one cell (several variants or
    runs) are averaged first, and items missing a cell are left out with a warning. With Q_T
    the orthonormal basis, within one item's cells, of what term T adds to its reduced model
    and z_s = Q_T' y_s the item's term scores, SS_T = S |z̄|² and the error stratum
    SS(T x item) = Σ_s |z_s − z̄|² with df_T (S − 1): F = MS_T / MS(T x item), which is the
    mixed-model test with random item intercepts and slopes on balanced data (checked against
    statsmodels ``AnovaRM``) and, for a two-level factor, the square of the paired t over
    items. Pooling the term x item interactions into one residual (``items='fixed'``) is
    pseudo-replication one level down: when the factor's effect varies between items, the
    fixed-item F rejects a null factor far more often than alpha (tests/test_attribution.py).
    ``pvalue_perm`` then flips the sign of whole item vectors z_s (Freedman–Lane inside the
    stratum, whose model is the mean alone; exact when z_s is symmetric about 0 under H0,
    Winkler et al. 2014). partial η² = SS_T / (SS_T + SS(T x item)); ``error_term``,
    ``df_error`` and ``mean_sq_error`` name each F's denominator, and the ``Residual`` row
    keeps the pooled within-item residual for reference. Sums of squares are on the
    item x cell means.

    Repeated runs of one configuration share everything that is fixed for that configuration
    (its prompt's idiosyncratic effect on the same items, its higher-order interactions), so
    they are pseudo-replicates (Hurlbert, 1984): counting them as rows shrinks the residual
    mean square towards run-to-run noise and makes F and permutation tests anticonservative,
    with spurious interactions. Hence ``runs='mean'`` by default, which is also the
    evaluatology paper's unit (one accuracy per sampled configuration).

    Checked against: statsmodels ``anova_lm`` Types I, II and III (``C(f, Sum)``) on an
    unbalanced design with missing cells, fixtures/reference/anova/ (SS, F, p to 1e-8).

    References
    ----------
    .. [1] Freedman, D. and Lane, D. (1983). A nonstochastic interpretation of reported
       significance levels. Journal of Business & Economic Statistics 1(4), 292-298.
    .. [2] Winkler, A. M. et al. (2014). Permutation inference for the general linear model.
       NeuroImage 92, 381-397.
    .. [3] Hurlbert, S. H. (1984). Pseudoreplication and the design of ecological field
       experiments. Ecological Monographs 54(2), 187-211.
    .. [4] Besag, J. and Clifford, P. (1991). Sequential Monte Carlo p-values. Biometrika
       78(2), 301-304.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=100, n_runs=3, instability=0.5, seed=0,
    ...                    factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.0},
    ...                             "template": {"a": 0.0, "b": 0.0, "c": 0.0}})
    >>> res = factor_anova(units, factors=["shots", "cot", "template"], interactions=1,
    ...                    n_resamples=999, seed=0)
    >>> res.ss_type, res.runs, res.n_obs  # 36 run-level units, 12 configurations
    (2, 'mean', 12)
    >>> res.to_frame().select("term", "df", pl.col("pvalue_perm").round(3)).rows()
    [('shots', 1, 0.011), ('template', 2, 0.321), ('cot', 1, 0.578), ('Residual', 7, None)]
    >>> res.n_permutations  # shots, cot, template: the null terms stopped at 100 exceedances
    (999, 173, 312)

    Item rows, items random: the F of ``shots`` has the shots x item stratum as its error.

    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=1, n_items=40, seed=0, factors={"shots": {0: 0.0, 5: 0.1}})
    >>> res = factor_anova(obs, factors="shots", block="item", n_resamples=999, seed=0)
    >>> res.items, res.method
    ('random', 'sign-flip')
    >>> res.to_frame().select("term", "error_term", "df_error", "pvalue_perm").rows()[0]
    ('shots', 'shots:item', 39, 0.017)
    """
    frame = analysis_input(frame, roles=roles, design=design).table
    interactions = _check_int("interactions", interactions, (1, 2))
    ss_type = _check_int("ss_type", ss_type, (1, 2, 3))
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 0
    ):
        raise ParameterError(f"`n_resamples` must be a non-negative integer, got {n_resamples!r}.")
    if max_exceedances is not None and (
        isinstance(max_exceedances, bool)
        or not isinstance(max_exceedances, (int, np.integer))
        or max_exceedances < 1
    ):
        raise ParameterError(
            f"`max_exceedances` must be a positive integer or None, got {max_exceedances!r}."
        )
    if items not in ("random", "fixed"):
        raise ParameterError(f"`items` must be 'random' or 'fixed', got {items!r}.")
    data, factors, table, aliased = _rows(frame, factors, block, runs, drop_aliased=True)
    item_rows = "item" in _block_columns(block)
    random_items = item_rows and items == "random"
    if random_items:
        data, n_subjects, _, _ = item_cells(data, factors)
    elif block is not None:
        data = data.sort(_BLOCK, maintain_order=True)
    y = data["score"].to_numpy().astype(float)
    n = y.size

    main_cols: list[np.ndarray] = []
    factor_codes: list[np.ndarray] = []
    for f in factors:
        levels, codes = _codes(data[f], f, table)
        if len(levels) < 2:
            raise InsufficientDataError(
                f"factor {f!r} has a single level ({levels[0]!r}) in the {table}; "
                "an effect needs at least two levels."
            )
        main_cols.append(_sum_coding(codes, len(levels)))
        factor_codes.append(codes)
    terms: list[tuple[int, ...]] = [(i,) for i in range(len(factors))]
    if interactions == 2:
        terms += list(itertools.combinations(range(len(factors)), 2))
    columns = []
    for t in terms:
        if len(t) == 1:
            columns.append(main_cols[t[0]])
        else:
            a, b = main_cols[t[0]], main_cols[t[1]]
            columns.append((a[:, :, None] * b[:, None, :]).reshape(n, -1))
    names = [":".join(factors[i] for i in t) for t in terms]

    if block is None:
        nuisance = np.full((n, 1), 1.0 / np.sqrt(n))
        block_codes = None
    else:
        _, block_codes = _codes(data[_BLOCK], _BLOCK, table)
        counts = np.bincount(block_codes)
        nuisance = np.zeros((n, counts.size))
        nuisance[np.arange(n), block_codes] = 1.0 / np.sqrt(counts[block_codes])

    with _single_blas_thread():
        core = _anova_core(y, columns, terms, nuisance, ss_type)
    df_res, rss, sst = core["df_res"], core["rss"], core["sst"]
    if df_res <= 0:
        raise InsufficientDataError(
            f"no residual degrees of freedom: {n} rows for a model of rank {n - df_res}. "
            "Use `interactions=1`, fewer factors, or more runs."
        )
    strata: list[np.ndarray] = []
    if random_items:
        strata = term_scores(y, core, n_subjects)
        perm = sign_flip_f(strata, int(n_resamples), seed, max_exceedances)
        log_arrangements = n_subjects * math.log(2.0)  # one sign per item
    else:
        # the configuration cell of each row: Q_X's rows are equal within a block and a cell
        cells = np.unique(np.column_stack(factor_codes), axis=0, return_inverse=True)[1]
        log_arrangements = _log_arrangements(block_codes, cells.ravel())
        with _single_blas_thread():
            perm = freedman_lane(
                core["resid"],
                core["q_x"],
                core["terms"],
                df_res,
                layout(core["q_x"], block_codes, cells.ravel()),
                int(n_resamples),
                seed,
                max_exceedances,
            )

    from scipy import stats

    rows = []
    # constant scores: every sum of squares is rounding noise (1e-31 around a mean of 1), and
    # F and permutation p computed from it mean nothing; NaN with a warning instead
    constant = sst <= n * (1e-12 * max(1.0, float(np.max(np.abs(y))))) ** 2
    if constant:
        warnings.warn(
            "the scores are constant: no term can explain any variation; F, p-values and "
            "effect sizes are NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
        sst = rss = 0.0
        strata = [np.zeros_like(s) for s in strata]
    if rss <= 1e-12 * sst:  # an exact fit up to rounding
        rss = 0.0
    mse = rss / df_res
    for i, (name, t) in enumerate(zip(names, core["terms"])):
        ss, d = (0.0 if constant else t["ss"]), t["df"]
        if d == 0:
            warnings.warn(
                f"term {name!r} is fully aliased by the other terms (no cells separate it); "
                "its statistics are NaN.",
                DegenerateDataWarning,
                stacklevel=2,
            )
            # no η² of 0: an aliased term's effect is unknown, not absent
            rows.append((name, 0, None, None, None, None, None, None, None, None, None, None))
            continue
        if random_items:
            f, _, ss_err, df_err = stratum_f(strata[i])
            err_name, ms_err = f"{name}:{'|'.join(_block_columns(block))}", ss_err / df_err
            p = float(stats.f.sf(f, d, df_err)) if np.isfinite(f) else float("nan")
            peta = ss / (ss + ss_err) if ss + ss_err > 0 else float("nan")
            valid = ss_err > 0
        else:
            err_name, df_err, ms_err = "Residual", df_res, mse
            if mse > 0:
                f = (ss / d) / mse
                p = float(stats.f.sf(f, d, df_res))
            else:
                f, p = float("nan"), float("nan")
            peta = ss / (ss + rss) if ss + rss > 0 else float("nan")
            valid = mse > 0
        if n_resamples and valid and np.isfinite(perm.observed[i]):
            pp: float | None = sequential_pvalue(
                int(perm.hits[i]), int(perm.used[i]), bool(perm.stopped[i]), int(n_resamples)
            )
        else:
            pp = None
        eta = ss / sst if sst > 0 else float("nan")
        rows.append((name, d, ss, ss / d, f, p, pp, eta, peta, err_name, df_err, ms_err))
    if mse == 0 and not constant:
        warnings.warn(
            "the model fits the scores exactly (residual sum of squares 0); F statistics are NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
    body = pl.DataFrame(rows, schema=_ANOVA_SCHEMA, orient="row")
    body = (
        body.with_row_index("__order")
        .sort(["eta_sq", "__order"], descending=[True, False], nulls_last=True)
        .drop("__order")
    )
    resid = pl.DataFrame(
        [("Residual", df_res, rss, mse, None, None, None, None, None, None, None, None)],
        schema=_ANOVA_SCHEMA,
        orient="row",
    )
    return AnovaResult(
        table=pl.concat([body, resid]),
        ss_type=ss_type,
        interactions=interactions,
        n_resamples=int(n_resamples),
        seed=seed,
        block=block if block is None or isinstance(block, str) else tuple(block),
        n_obs=n,
        runs=runs,
        method="sign-flip" if random_items else "freedman-lane",
        items=items if item_rows else None,
        null_distribution=perm.null,
        terms=tuple(names),
        aliased=aliased,
        n_permutations=tuple(int(u) for u in perm.used),
        max_exceedances=max_exceedances,
        min_pvalue_perm=math.exp(-log_arrangements) if n_resamples else None,
    )


def _log_arrangements(blocks: np.ndarray | None, cells: np.ndarray) -> float:
    """Log of the number of distinct within-block permutations of the residuals.

    Rows swapped inside one configuration cell of one block give the same F, so the count is
    ``prod_b n_b! / prod_(b, cell) m_(b, cell)!``; one over it is the smallest permutation
    p-value the design allows (four models with two arena positions each: 16 arrangements, so
    no p below 0.0625, whatever the effect).
    """
    blocks = np.zeros(cells.size, dtype=np.int64) if blocks is None else np.asarray(blocks)
    per_block = np.bincount(blocks)
    key = blocks.astype(np.int64) * (int(cells.max()) + 1) + cells
    per_cell = np.unique(key, return_counts=True)[1]
    return float(
        sum(math.lgamma(k + 1.0) for k in per_block) - sum(math.lgamma(k + 1.0) for k in per_cell)
    )


def interaction_means(
    frame: TableLike,
    *,
    term: str | Sequence[str],
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Mean score in each cell of a two-way term (the data of an interaction heatmap).

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table (an observation table is aggregated to units first).
    term : str or sequence of str
        ``"a:b"`` or ``("a", "b")``.
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
        One row per observed cell with columns ``term, level_a, level_b, score, n`` (levels as
        strings, ``score`` the mean unit score, ``n`` the units), sorted by the levels.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=50, seed=0,
    ...                    factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.05}})
    >>> interaction_means(units, term="shots:cot").select("level_a", "level_b", "n").rows()
    [('0', 'false', 1), ('0', 'true', 1), ('5', 'false', 1), ('5', 'true', 1)]
    """
    frame = analysis_input(frame, roles=roles, design=design).table
    parts = term.split(":") if isinstance(term, str) else list(term)
    if len(parts) != 2:
        raise ParameterError(f"`term` must name two factors as 'a:b', got {term!r}.")
    lf = validate_units(frame)
    names = lf.collect_schema().names()
    a, b = _validate_factors(parts, names, "unit table")
    sorted_cells = (
        lf.group_by(a, b)
        .agg(pl.col("score").mean().alias("score"), pl.len().cast(pl.Int64).alias("n"))
        .sort(a, b)
        .collect()
    )
    return sorted_cells.select(
        pl.lit(f"{a}:{b}").alias("term"),
        pl.col(a).cast(pl.String).alias("level_a"),
        pl.col(b).cast(pl.String).alias("level_b"),
        "score",
        "n",
    )
