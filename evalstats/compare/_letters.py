"""Compact letter display: groups of models that pairwise tests cannot tell apart.

numpy/polars only. Piepho's insert-absorb algorithm turns a set of significant pairs into
letters such that two models share a letter exactly when their pair is not significant.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import polars as pl

from evalstats.errors import ParameterError, SchemaError

__all__ = ["compact_letters", "letter_groups"]

#: insert-absorb can in principle make many columns; beyond this the display is not readable
_MAX_LETTERS = 52


def compact_letters(models: Sequence[str], different: set[frozenset[str]]) -> dict[str, str]:
    """Letters per model (best first) such that two models share one iff their pair is not in ``different``.

    Parameters
    ----------
    models : sequence of str
        The models, best first (the first gets ``a``).
    different : set of frozenset of str
        The pairs declared significantly different.

    Returns
    -------
    dict of str to str
        Each model's letters (``'a'``, ``'ab'``, ...). Beyond 52 letters the remaining groups
        use ``'{n}'`` labels.

    Notes
    -----
    Insert-absorb (Piepho 2004): start with one group holding every model; for each
    significant pair, split every group holding both into one without each; drop groups
    contained in another. Letters are then given in the order of each group's best model, so
    the best model's group is ``a``. Every pair outside ``different`` shares a group, and no
    pair inside it does.

    References
    ----------
    .. [1] H.-P. Piepho, "An algorithm for a letter-based representation of all-pairwise
       comparisons", Journal of Computational and Graphical Statistics 13 (2004).

    Examples
    --------
    >>> compact_letters(["m1", "m2", "m3"], {frozenset({"m1", "m3"})})
    {'m1': 'a', 'm2': 'ab', 'm3': 'b'}
    """
    order = {m: i for i, m in enumerate(models)}
    for pair in different:
        if len(pair) != 2 or not pair <= order.keys():
            raise ParameterError(f"`different` holds {sorted(pair)!r}, not a pair of `models`.")
    groups: list[frozenset[str]] = [frozenset(models)]
    for pair in sorted(different, key=lambda p: sorted(order[m] for m in p)):
        a, b = sorted(pair, key=order.__getitem__)
        new: list[frozenset[str]] = []
        for g in groups:
            if a in g and b in g:
                new.extend([g - {a}, g - {b}])
            else:
                new.append(g)
        # absorb: a group inside another says nothing more
        uniq = list(dict.fromkeys(g for g in new if g))
        groups = [g for g in uniq if not any(g < h for h in uniq)]
    groups.sort(key=lambda g: sorted(order[m] for m in g))
    labels = list(string.ascii_lowercase + string.ascii_uppercase)
    out = {m: "" for m in models}
    for i, g in enumerate(groups):
        label = labels[i] if i < _MAX_LETTERS else f"{{{i + 1}}}"
        for m in g:
            out[m] += label
    return out


def letter_groups(
    pairs: pl.DataFrame,
    *,
    by: Sequence[str] = ("dataset", "metric"),
    higher_is_better: bool = True,
) -> pl.DataFrame:
    """Compact letter display of a :func:`compare_models` result.

    Parameters
    ----------
    pairs : polars.DataFrame (or pandas, pyarrow)
        The result of :func:`compare_models` (columns ``model_a, model_b, mean_a, mean_b,
        reject``).
    by : tuple of str, default ('dataset', 'metric')
        The group columns of ``pairs`` (those present are used); letters are given per group.
    higher_is_better : bool, default True
        Order of the letters: the best model (highest mean, or lowest when False) gets ``a``.

    Returns
    -------
    polars.DataFrame
        One row per group and model with ``mean`` (the mean of the model's paired means over
        its pairs), ``letters`` and ``n_groups`` (letters used in the group), sorted by the
        group and best first. Models that share a letter are not told apart by the pairwise
        tests (``reject`` False); models with no letter in common differ significantly.

    Examples
    --------
    >>> from evalstats.compare import compare_models
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=3, n_items=400, n_runs=5, n_variants=1,
    ...                    model_accuracy=(0.5, 0.52, 0.7), seed=0)
    >>> letter_groups(compare_models(obs)).select("model", "letters").rows()
    [('m2', 'a'), ('m1', 'b'), ('m0', 'b')]
    """
    from evalstats._frames import to_polars

    pairs = to_polars(pairs, what="the pairs table").lazy().collect()
    need = ("model_a", "model_b", "mean_a", "mean_b", "reject")
    missing = [c for c in need if c not in pairs.columns]
    if missing:
        raise SchemaError(
            f"`pairs` lacks {', '.join(map(repr, missing))}: pass the result of compare_models."
        )
    keys = [c for c in by if c in pairs.columns]
    groups = pairs.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): pairs}
    frames = []
    for key, g in groups.items():
        means = (
            pl.concat(
                [
                    g.select(pl.col("model_a").alias("model"), pl.col("mean_a").alias("mean")),
                    g.select(pl.col("model_b").alias("model"), pl.col("mean_b").alias("mean")),
                ]
            )
            .group_by("model")
            .agg(pl.col("mean").mean())
            .sort(["mean", "model"], descending=[higher_is_better, False])
        )
        models = means["model"].to_list()
        different = {
            frozenset((a, b))
            for a, b, r in g.select("model_a", "model_b", "reject").iter_rows()
            if r
        }
        letters = compact_letters(models, different)
        n_groups = len({ch for s in letters.values() for ch in s})
        frames.append(
            means.with_columns(
                pl.Series("letters", [letters[m] for m in models], dtype=pl.String),
                pl.lit(n_groups, dtype=pl.Int64).alias("n_groups"),
                *[pl.lit(k).alias(c) for c, k in zip(keys, key)],
            ).select(*keys, "model", "mean", "letters", "n_groups")
        )
    return pl.concat(frames)
