"""From the observation table to the observed cells of each group, checked for identifiability."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from evalstats._ordered import grouped_in_order
from evalstats.errors import DesignWarning, InsufficientDataError, MetricScaleError
from evalstats.factors import hold_fixed
from evalstats.schema import as_lazy, unit_interval_metrics, validate_by, validate_observations
from evalstats.sparse._fit import CellData

__all__ = ["Group", "groups_of", "key_columns"]


@dataclass(frozen=True)
class Group:
    """One group's cells, and the names behind the codes."""

    key: tuple
    key_types: dict  # group column -> its polars dtype
    cells: CellData
    items: list[str]
    variants: list[str]
    factors: tuple[str, ...]
    factor_values: pl.DataFrame  # one row per variant: variant and every factor column


def _factor_columns(lf: pl.LazyFrame, by: Sequence[str], variant_factors) -> tuple[str, ...]:
    """Factor columns that define the variants: the covariates of the prompt effects."""
    from evalstats.factors import _names, factor_role
    from evalstats.schema import factor_columns

    names = lf.collect_schema().names()
    chosen = _names(variant_factors)
    factors = factor_columns(names)
    if chosen is None:
        cands = [f for f in factors if factor_role(f) in ("prompt", "other")]
    elif chosen == "all":
        cands = list(factors)
    else:
        cands = [c for c in chosen if c in names]
    return tuple(c for c in cands if c not in by and c not in ("variant", "item"))


def groups_of(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    by: Sequence[str] | str,
    variant_factors: Sequence[str] | str | None,
    max_cells_observed: float = 1.0,
    refused: list[str] | None = None,
) -> tuple[tuple[str, ...], Iterator[Group]]:
    """The group columns (``by`` and held factors) and each group's :class:`Group`.

    With a ``refused`` list, a group that cannot be fitted is skipped and its reason appended
    to the list, instead of raising.

    Raises
    ------
    MetricScaleError
        A metric not on [0, 1]: the model is of a probability of a correct answer.
    InsufficientDataError
        (from the iterator) a group whose item and prompt effects cannot be told apart.
    """
    lf = validate_observations(as_lazy(observations), require_item=True)
    by = validate_by(lf.collect_schema().names(), by, table="observation table")
    by = (*by, *hold_fixed(lf, variant_factors=variant_factors, by=by))
    bad = [m for m, ok in unit_interval_metrics(lf).items() if not ok]
    if bad:
        raise MetricScaleError(
            f"metric {bad[0]!r} is not on [0, 1]: the sparse-grid estimator models the "
            "probability of a correct answer (0/1 or fractional scores in [0, 1]); use "
            "`prompt_spread` for this metric."
        )
    factors = _factor_columns(lf, by, variant_factors)
    cells = grouped_in_order(
        lf, [*by, "variant", "item"], pl.col("score").sum().alias("__k"), pl.len().alias("__n")
    ).collect()
    per_variant = (
        lf.group_by([*by, "variant"])
        .agg(*(pl.col(f).cast(pl.String).first() for f in factors))
        .collect()
        if factors
        else None
    )
    if max_cells_observed < 1.0:
        share = (pl.len() / (pl.col("item").n_unique() * pl.col("variant").n_unique())).over(
            list(by) if by else pl.lit(1)
        )
        cells = cells.filter(share <= max_cells_observed)
    return by, _iter(cells, per_variant, by, factors, refused)


def _iter(cells, per_variant, by, factors, refused=None) -> Iterator[Group]:
    parts = cells.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): cells}
    for key, g in parts.items():
        key = key if isinstance(key, tuple) else (key,)
        items, item_code = np.unique(g["item"].cast(pl.String).to_numpy(), return_inverse=True)
        variants, var_code = np.unique(g["variant"].cast(pl.String).to_numpy(), return_inverse=True)
        fv = pl.DataFrame({"variant": variants.tolist()})
        used: list[str] = []
        levels = np.zeros((len(variants), 0), dtype=np.int64)
        if per_variant is not None:
            sub = per_variant.filter(
                pl.all_horizontal(pl.col(b) == v for b, v in zip(by, key)) if by else pl.lit(True)
            )
            fv = fv.join(sub.select("variant", *factors), on="variant", how="left")
            cols = []
            for f in factors:
                vals = fv[f].fill_null("").to_numpy()
                uniq, code = np.unique(vals, return_inverse=True)
                # a factor with one level says nothing; one level per variant is the variant
                if 1 < len(uniq) < len(variants):
                    used.append(f)
                    cols.append(code)
            if cols:
                levels = np.stack(cols, axis=1).astype(np.int64)
        cd = CellData(
            item=item_code.astype(np.int64),
            prompt=var_code.astype(np.int64),
            k=g["__k"].to_numpy().astype(float),
            n=g["__n"].to_numpy().astype(float),
            n_items=len(items),
            n_prompts=len(variants),
            levels=levels,
        )
        try:
            _check(cd, dict(zip(by, key)))
        except InsufficientDataError as exc:
            if refused is None:
                raise
            refused.append(str(exc))
            continue
        yield Group(
            key=key,
            key_types={b: cells.schema[b] for b in by},
            cells=cd,
            items=items.tolist(),
            variants=variants.tolist(),
            factors=tuple(used),
            factor_values=fv,
        )


def _check(cells: CellData, where: dict) -> None:
    """Refuse a group whose item and prompt effects are not identified; warn when split."""
    label = ", ".join(f"{k}={v!r}" for k, v in where.items()) or "the table"
    per_item = np.bincount(cells.item, minlength=cells.n_items)
    per_prompt = np.bincount(cells.prompt, minlength=cells.n_prompts)
    if cells.n_prompts < 2:
        raise InsufficientDataError(
            f"group {label}: one prompt variant; the distribution over prompts needs two or more."
        )
    if per_item.max() < 2 and per_prompt.max() < 2:
        raise InsufficientDataError(
            f"group {label}: every item is scored under at most {int(per_item.max())} prompt "
            f"variant(s) and every variant on at most {int(per_prompt.max())} item(s) "
            f"({cells.item.size} cells of a {cells.n_items} x {cells.n_prompts} grid): item and "
            "prompt effects cannot be told apart, so the sparse-grid model is not fitted. Score "
            "some items under several variants (evalstats plan --sparse proposes which)."
        )
    if (per_item >= 2).sum() < 2:
        warnings.warn(
            f"group {label}: fewer than two items are scored under two or more prompt variants "
            f"({cells.item.size} cells of a {cells.n_items} x {cells.n_prompts} grid): prompts "
            "are compared through the fitted item distribution, not through shared items, and "
            "the intervals are wide accordingly.",
            DesignWarning,
            stacklevel=4,
        )
        return
    graph = coo_matrix(
        (np.ones(cells.item.size), (cells.item, cells.n_items + cells.prompt)),
        shape=(cells.n_items + cells.n_prompts,) * 2,
    )
    n_comp, _ = connected_components(graph, directed=False)
    if n_comp > 1:
        warnings.warn(
            f"group {label}: the item x prompt cells fall into {n_comp} disconnected blocks; "
            "prompts of different blocks are compared only through the model's shrinkage and "
            "prompt factors, not through shared items.",
            DesignWarning,
            stacklevel=4,
        )


def key_columns(by: Sequence[str], group: Group | None, n: int) -> dict[str, pl.Series]:
    """The group columns of ``n`` result rows, in the table's own dtypes (String when empty)."""
    if group is None:
        return {b: pl.Series(b, [], dtype=pl.String) for b in by}
    return {b: pl.Series(b, [v] * n, dtype=group.key_types[b]) for b, v in zip(by, group.key)}
