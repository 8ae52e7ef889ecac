"""Inferring the design of an observation table, and applying it.

:func:`infer_design` decides the role of every column (explicit roles first, then what the
loader knew, then the rules of :mod:`evalstats._column_rules`), applies the roles to the table
(:func:`apply_design`: text and metadata left out, clusters named ``cluster``, the variant
rebuilt from the prompt factors and settings alone), and measures the structure of every
group and what it supports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from evalstats._column_rules import ColumnRule, classify
from evalstats._frames import in_memory
from evalstats.design._model import (
    MIN_ITEMS,
    MIN_NORMALITY_RUNS,
    MIN_NSTAR_VARIANTS,
    MIN_RANK_DATASETS,
    ColumnRole,
    Design,
    Support,
)
from evalstats.design._roles import ATTRIBUTE_ROLES, LEFT_OUT_ROLES, USER_ROLES, user_role
from evalstats.errors import ParameterError, SchemaError
from evalstats.schema import (
    METRIC_INFO_COLUMNS,
    OBSERVATION_COLUMNS,
    as_lazy,
    factor_columns,
    variant_key,
)

if TYPE_CHECKING:
    from evalstats.io import IngestReport

__all__ = ["USER_ROLES", "apply_design", "design_and_table", "infer_design", "parse_roles"]

_OUTPUTS = ("answer", "response", "gold", "input_len", "output_len", "latency_s", "error")
_CANONICAL_ROLE = {
    "model": "model",
    "dataset": "dataset",
    "metric": "metric",
    "item": "item",
    "cluster": "cluster",
    "variant": "variant",
    "run": "run",
    "score": "score",
}


def parse_roles(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"prompt_id=variant,passage=cluster"`` (or a mapping) as ``{column: role}``.

    Raises
    ------
    ParameterError
        An entry is not ``column=role`` or names an unknown role.

    Examples
    --------
    >>> parse_roles("prompt_id=variant, passage=cluster, ticket=ignore")
    {'prompt_id': 'variant', 'passage': 'cluster', 'ticket': 'text'}
    """
    if spec is None:
        return {}
    if isinstance(spec, str):
        from evalstats.io._columns import split_pairs

        form = "column=role (for example prompt_id=variant or passage=cluster)"
        items = split_pairs(spec, "roles", form)
    else:
        items = [(str(k), str(v)) for k, v in spec.items()]
    return {col: user_role(role, f"`roles` gives {col!r} the role") for col, role in items}


# --- roles -------------------------------------------------------------------------------


def _column_roles(
    lf: pl.LazyFrame,
    ingest: IngestReport | None,
    roles: Mapping[str, str],
) -> list[ColumnRole]:
    names = lf.collect_schema().names()
    loader = {c.column: c for c in (ingest.columns if ingest is not None else ())}
    factors = factor_columns(names)
    out: dict[str, ColumnRole] = {}
    pending: list[str] = []
    for c in factors:
        if c in roles:
            out[c] = ColumnRole(
                c, _factor_role(roles[c]), "given (--roles or a design file)", "explicit"
            )
        elif c in loader and loader[c].role in ("prompt", "setting", "fixed"):
            out[c] = ColumnRole(
                c, loader[c].role, loader[c].evidence, _source(loader[c]), loader[c].n_values
            )
            if loader[c].role != "fixed" and (ingest is None or ingest.format != "table"):
                # the loader's word, checked against the structure below (the table loader's
                # word is these rules' already)
                pending.append(c)
        elif c in loader and loader[c].role in LEFT_OUT_ROLES:  # what the format knows
            out[c] = ColumnRole(c, loader[c].role, loader[c].evidence, "loader", loader[c].n_values)
        else:
            pending.append(c)
    if pending:
        has_item = "item" in names
        cell = ("model", "dataset", "metric")  # analyses never mix two metrics
        rules = classify(lf, pending, item="item" if has_item else None, within=cell)
        for c, rule in rules.items():
            if c in out:  # declared by the loader: kept only where it varies within a cell
                if rule.role in ("fixed", *ATTRIBUTE_ROLES):  # structure, not a name
                    r = out[c]
                    out[c] = ColumnRole(
                        c, rule.role, f"{r.evidence}; here {rule.evidence}", "loader", rule.n_values
                    )
                continue
            source = (
                "values"
                if rule.inferred
                else "name"
                if rule.n_values is None or "by name" in rule.evidence
                else "values"
            )
            out[c] = ColumnRole(c, rule.role, rule.evidence, source, rule.n_values)
    renamed = {r.role: r for r in loader.values() if r.role in OBSERVATION_COLUMNS}
    result: list[ColumnRole] = []
    for c in names:
        if c.startswith("__"):
            continue
        if c in out:
            result.append(out[c])
        elif c in renamed:  # a source column read under a canonical name
            r = renamed[c]
            role = _CANONICAL_ROLE.get(c, "metric_info" if c in METRIC_INFO_COLUMNS else "output")
            result.append(
                ColumnRole(
                    r.column, role, r.evidence, "loader", table_name=None if r.column == c else c
                )
            )
        elif c in _CANONICAL_ROLE:
            result.append(ColumnRole(c, _CANONICAL_ROLE[c], _filled(c, ingest), "canonical"))
        elif c in METRIC_INFO_COLUMNS:
            result.append(
                ColumnRole(
                    c, "metric_info", "the metric's declared bounds and direction", "canonical"
                )
            )
        elif c in OBSERVATION_COLUMNS:
            result.append(
                ColumnRole(
                    c,
                    "output",
                    "read by the analyses of outputs (TAR, lengths, errors)",
                    "canonical",
                )
            )
    seen = {r.column for r in result}
    for c, rule in loader.items():  # what the loader left out, for the reader
        if c not in seen and rule.role in LEFT_OUT_ROLES:
            result.append(ColumnRole(c, rule.role, rule.evidence, "loader", rule.n_values, False))
    return result


def _source(rule: ColumnRule) -> str:
    """Who decided a rule a loader reports (``values`` for a dimension taken from the values).

    The table loader applies the generic rules of :mod:`evalstats._column_rules`; a dimension
    they inferred stays marked as such, a format's own knowledge is the loader's.
    """
    return "values" if getattr(rule, "inferred", False) else "loader"


def _filled(column: str, ingest: IngestReport | None) -> str:
    how = {
        "dataset": "filled by the loader (a file name, a task)",
        "variant": "the key of the prompt factors and settings (one variant when there are none)",
        "run": "filled by the loader (0 when the source has no runs)",
        "metric": "filled by the loader (the score column's name or the format's metric)",
    }
    if ingest is None:
        return "a column of the observation table"
    return how.get(column, f"read by the {ingest.format} loader")


def _factor_role(role: str) -> str:
    if role == "variant":
        return "prompt"
    if role in ("answer", "response", "gold", "input_text", "latency_s", "error"):
        return "output"
    return role


# --- applying ------------------------------------------------------------------------------


#: Rows read to tell a variant derived from the factor columns from one a loader named.
_DERIVED_SAMPLE = 20_000


def _derived_variant(lf: pl.LazyFrame, factors: Sequence[str]) -> bool:
    """Whether ``variant`` is the key of ``factors`` (so it can be rebuilt from fewer).

    Read on the first rows: a variant a loader named (a prompt id, a fingerprint) differs from
    the key of the factor columns on its first row already.
    """
    if not factors:
        return False
    head = lf.head(_DERIVED_SAMPLE)
    return bool(
        head.select((pl.col("variant") == variant_key(list(factors))).all()).collect().item()
    )


def apply_design(observations: pl.DataFrame | pl.LazyFrame, design: Design) -> pl.LazyFrame:
    """The observation table as ``design`` says: what the analyses read.

    Text, metadata and item-attribute columns are left out (no analysis reads them); a column
    with the role ``cluster`` becomes the ``cluster`` column; a factor column given a canonical
    role (``dataset``, ``model``, ``item``, ``run``) replaces that column; when the loader
    derived ``variant`` from the factor columns, it is rebuilt from the prompt factors and
    settings alone, so that a column left out no longer splits the variants.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        The observation table the design was inferred from.
    design : Design
        From :func:`infer_design` (or a design file, through it).

    Returns
    -------
    polars.LazyFrame
    """
    from evalstats.design._read import read_frame

    lf = as_lazy(observations)
    if not {"model", "dataset", "score"} <= set(lf.collect_schema().names()):
        # not the observation table: read as a file of the same rows is (module _frames)
        from evalstats.design._files import design_roles

        lf = as_lazy(read_frame(lf, roles=design_roles(design))[0].observations)
    names = lf.collect_schema().names()
    factors_before = factor_columns(names)
    derived = "variant" in names and _derived_variant(lf, factors_before)
    drop = [c for c in design.left_out if c in names and c in factors_before]
    renames: dict[str, str] = {}
    for c in design.columns:
        if c.column not in factors_before or not c.in_table:
            continue
        if c.role in ("cluster", "model", "dataset", "item", "run"):
            renames[c.column] = c.role
    if renames:
        lf = lf.drop([v for v in renames.values() if v in names])
        casts = [
            pl.col(src).cast(pl.Int64 if role == "run" else pl.String).alias(src)
            for src, role in renames.items()
        ]
        lf = lf.with_columns(casts).rename(renames)
    if drop:
        lf = lf.drop(drop)
    kept = [f for f in factors_before if f not in drop and f not in renames]
    if derived and kept != factors_before:
        lf = lf.with_columns(variant_key(kept))
    elif "variant" not in names:
        lf = lf.with_columns(variant_key(kept))
    return lf


# --- structure -----------------------------------------------------------------------------


def _groups(lf: pl.LazyFrame, settings: Sequence[str]) -> pl.DataFrame:
    schema = lf.collect_schema()
    keys = ["model", "dataset", "metric", *[s for s in settings if s in schema]]
    has_item = "item" in schema
    has_cluster = "cluster" in schema
    per_variant = lf.group_by([*keys, "variant"]).agg(pl.col("run").n_unique().alias("__r"))
    base = per_variant.group_by(keys).agg(
        pl.len().alias("n_variants"),
        pl.col("__r").min().alias("runs_min"),
        pl.col("__r").max().alias("runs_max"),
    )
    queries = [base]
    if has_item:
        items = lf.group_by(keys).agg(
            pl.col("item").n_unique().alias("n_items"),
            *(
                [pl.col("cluster").n_unique().alias("n_clusters")]
                if has_cluster
                else [pl.lit(None, dtype=pl.UInt32).alias("n_clusters")]
            ),
            pl.struct("item", "variant").n_unique().alias("__cells"),
        )
        per_item = (
            lf.group_by([*keys, "item"])
            .agg(pl.col("variant").n_unique().alias("__v"))
            .group_by(keys)
            .agg(
                pl.col("__v").min().alias("variants_per_item_min"),
                pl.col("__v").max().alias("variants_per_item_max"),
            )
        )
        per_run = (
            lf.group_by([*keys, "variant", "run"])
            .agg(pl.col("item").n_unique().alias("__n"))
            .join(
                lf.group_by([*keys, "variant"]).agg(pl.col("item").n_unique().alias("__t")),
                on=[*keys, "variant"],
                nulls_equal=True,
            )
            .group_by(keys)
            .agg((pl.col("__n") == pl.col("__t")).all().alias("runs_cover_same_items"))
        )
        queries += [items, per_item, per_run]
    frames = pl.collect_all(queries)
    out = frames[0]
    for f in frames[1:]:
        out = out.join(f, on=keys, how="left", nulls_equal=True)
    if not has_item:
        out = out.with_columns(
            pl.lit(None, dtype=pl.UInt32).alias("n_items"),
            pl.lit(None, dtype=pl.UInt32).alias("n_clusters"),
            pl.lit(None, dtype=pl.UInt32).alias("variants_per_item_min"),
            pl.lit(None, dtype=pl.UInt32).alias("variants_per_item_max"),
            pl.lit(True).alias("runs_cover_same_items"),
            pl.lit(None, dtype=pl.UInt32).alias("__cells"),
        )
    cells = (pl.col("__cells") / (pl.col("n_items") * pl.col("n_variants"))).cast(pl.Float64)
    out = out.with_columns(cells.alias("cells_observed"))
    structure = (
        pl.when(pl.col("n_variants") <= 1)
        .then(pl.lit("single"))
        .when(pl.col("n_items").is_null() | (pl.col("cells_observed") >= 1.0))
        .then(pl.lit("crossed"))
        .when(pl.col("variants_per_item_max") <= 1)
        .then(pl.lit("nested"))
        .otherwise(pl.lit("sparse"))
    )
    balanced = (
        (pl.col("runs_min") == pl.col("runs_max"))
        & pl.col("runs_cover_same_items").fill_null(True)
        & (pl.col("cells_observed").is_null() | (pl.col("cells_observed") >= 1.0))
    )
    out = out.with_columns(structure.alias("structure"), balanced.alias("balanced"))
    cols = [*keys, *_COUNTS, *_SHAPE]
    casts = dict.fromkeys(_COUNTS, pl.Int64)
    return out.select(cols).cast(casts).sort(keys, nulls_last=True)  # type: ignore[arg-type]


#: The count columns of the groups table, and its structure columns.
_COUNTS = (
    "n_items",
    "n_clusters",
    "n_variants",
    "runs_min",
    "runs_max",
    "variants_per_item_min",
    "variants_per_item_max",
)
_SHAPE = ("cells_observed", "structure", "balanced", "runs_cover_same_items")


def _count(frame: pl.DataFrame, expr: pl.Expr) -> int:
    return int(frame.select(expr.fill_null(False).sum()).item()) if frame.height else 0


def _range(frame: pl.DataFrame, col: str, where: pl.Expr | None = None) -> str:
    sub = frame.filter(where) if where is not None else frame
    lo, hi = sub[col].min(), sub[col].max()
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def _supports(
    groups: pl.DataFrame, prompt: Sequence[str], settings: Sequence[str]
) -> list[Support]:
    g = groups
    n = g.height
    has_items = g["n_items"].null_count() < n
    out: list[Support] = []
    multi_v = pl.col("n_variants") >= 2
    k = _count(g, multi_v)
    held = f" (settings held fixed: {', '.join(settings)})" if settings else ""
    if k:
        out.append(
            Support(
                "moments",
                True,
                f"{k} of {n} groups have 2 or more prompt variants ({_range(g, 'n_variants', multi_v)}){held}",
                k,
            )
        )
    else:
        why = "each group has a single prompt variant" + (
            f"; the variants differ only in settings held fixed ({', '.join(settings)})"
            if settings
            else ""
        )
        out.append(Support("moments", False, why))
    many_v = pl.col("n_variants") >= MIN_NSTAR_VARIANTS
    k = _count(g, many_v)
    out.append(
        Support(
            "nstar",
            True,
            f"{k} of {n} groups have {MIN_NSTAR_VARIANTS} or more prompt variants ({_range(g, 'n_variants', many_v)})",
            k,
        )
        if k
        else Support(
            "nstar",
            False,
            f"no group has {MIN_NSTAR_VARIANTS} or more prompt variants (most: {g['n_variants'].max() or 0}): n* is read off too few subset sizes",
        )
    )
    reps = (pl.col("runs_max") >= 2) & pl.col("n_items").is_not_null()
    k = _count(g, reps)
    if k:
        out.append(
            Support(
                "stability",
                True,
                f"{k} of {n} groups have identical repeated runs ({_range(g, 'runs_max', reps)} per variant)",
                k,
            )
        )
    elif (g["runs_max"] >= 2).any():
        out.append(
            Support(
                "stability",
                False,
                "the input has no item column: stability compares each item's answers over runs",
            )
        )
    else:
        out.append(
            Support(
                "stability",
                False,
                "each configuration was run once: run-to-run stability needs repeated runs",
            )
        )
    many_r = pl.col("runs_max") >= MIN_NORMALITY_RUNS
    k = _count(g, many_r)
    most = int(g["runs_max"].max() or 0)
    if k:
        out.append(
            Support(
                "normality", True, f"{k} of {n} groups have {MIN_NORMALITY_RUNS} or more runs", k
            )
        )
    elif most <= 1:
        out.append(
            Support(
                "normality", False, "each configuration was run once: no run accuracies to test"
            )
        )
    else:
        out.append(
            Support(
                "normality",
                False,
                f"no configuration has {MIN_NORMALITY_RUNS} or more runs (at most {most} runs): "
                "a normality test of so few run accuracies rejects nothing",
            )
        )
    if has_items:
        enough = pl.col("n_items") >= MIN_ITEMS
        k = _count(g, enough)
        out.append(
            Support(
                "intervals",
                True,
                f"{k} of {n} groups have {MIN_ITEMS} or more items ({_range(g, 'n_items', enough)})",
                k,
            )
            if k
            else Support(
                "intervals",
                False,
                "every group has a single item: an interval over one item is its score",
            )
        )
    else:
        out.append(
            Support("intervals", True, "unit-level input: intervals over prompt variants", n)
        )
    models_per = g.group_by("dataset", "metric").agg(pl.col("model").n_unique().alias("m"))
    k = _count(models_per, pl.col("m") >= 2)
    models = g["model"].unique().sort().to_list()
    if len(models) == 1:
        out.append(Support("compare", False, f"only one model ({models[0]}): nothing to compare"))
    elif not k:
        out.append(
            Support("compare", False, "no dataset has two or more models: nothing to compare")
        )
    elif not has_items:
        out.append(
            Support(
                "compare",
                False,
                "the input has no item column: paired comparisons and rank bootstraps need items",
            )
        )
    else:
        out.append(Support("compare", True, f"{k} dataset(s) with two or more models", k))
    n_ds = g["dataset"].n_unique()
    n_models = g["model"].n_unique()
    out.append(
        Support("friedman", True, f"{n_models} models over {n_ds} datasets", n_ds)
        if n_models >= 2 and n_ds >= MIN_RANK_DATASETS
        else Support(
            "friedman",
            False,
            f"{n_models} model(s) over {n_ds} dataset(s): a ranking across datasets needs 2 or more models and {MIN_RANK_DATASETS} or more datasets",
        )
    )
    if prompt or settings:
        out.append(Support("anova", True, f"factors: {', '.join([*prompt, *settings])}", n))
    else:
        out.append(Support("anova", False, "no prompt factor or setting column"))
    return out


def design_and_table(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    ingest: IngestReport | None = None,
    roles: str | Mapping[str, str] | None = None,
) -> tuple[Design, pl.LazyFrame]:
    """:func:`infer_design` and the table it applies to (:func:`apply_design`), in one pass.

    A table not in the canonical layout (:func:`evalstats.design._frames.is_canonical`; a
    pandas or pyarrow table too) is first read as a table file is, with the roles the table
    loader applies (:func:`evalstats.design._frames.read_frame`).
    """
    from evalstats._frames import to_polars
    from evalstats.design._read import is_canonical, read_frame
    from evalstats.schema import validate_observations

    explicit = parse_roles(roles)
    table = to_polars(observations, what="the observation table")
    if ingest is None and not is_canonical(table):
        read, explicit = read_frame(observations, roles=explicit)
        table, ingest = read.observations, read.report
    # the canonical columns a hand-built frame may lack (metric, run, variant), no value scan;
    # errored calls without a score stay (the provider audit counts them; analyses drop them)
    lf = validate_observations(table, check_values=False, errored="keep")
    names = lf.collect_schema().names()
    # read once: the roles, the merge check and the structure each count over the whole table
    lf = in_memory(lf, len(names))
    unknown = [c for c in explicit if c not in names and not _read_at_ingest(c, ingest)]
    if unknown:
        raise SchemaError(
            f"`roles` names {unknown[0]!r}, which is not a column of the table (columns: "
            f"{', '.join(n for n in names if not n.startswith('__'))})."
        )
    _refuse_ignored_roles(explicit, names, ingest)
    columns = _column_roles(lf, ingest, explicit)
    draft = Design(columns=tuple(columns), groups=pl.DataFrame(), roles=explicit)
    table = apply_design(lf, draft)
    notes: list[str] = []
    merged = _merged_by_dropping(lf, table, draft)
    if merged:
        # a column left out told configurations apart: it is a setting, not text
        notes.append(
            f"{', '.join(merged)} kept as setting(s): leaving them out would merge rows that "
            "differ only in them into one observation"
        )
        columns = [
            ColumnRole(
                c.column,
                "setting",
                f"{c.evidence}; but it tells otherwise identical rows apart, so it is kept "
                "as a setting",
                c.source,
                c.n_values,
            )
            if c.column in merged
            else c
            for c in columns
        ]
        draft = Design(columns=tuple(columns), groups=pl.DataFrame(), roles=explicit)
        table = apply_design(lf, draft)
    settings = [s for s in draft.settings if s in table.collect_schema().names()]
    # the columns the structure reads, computed once (the rebuilt variant key concatenates
    # every factor column: each of the grouped passes below would compute it again)
    have = table.collect_schema().names()
    kept = [
        c
        for c in ("model", "dataset", "metric", "variant", "run", "item", "cluster", *settings)
        if c in have
    ]
    # variant keys are long (every factor's value, a few hundred characters): as categories
    # each grouped count hashes them once, not once per pass (7x less CPU on 1M rows)
    inner = [c for c in ("variant", "item", "cluster") if c in have]
    structure = (
        table.select(kept)
        .with_columns(pl.col(inner).cast(pl.String).cast(pl.Categorical))
        .collect()
    )
    varying = _varying(structure.lazy(), settings)
    groups = _groups(structure.lazy(), varying)
    notes += _notes(groups)
    design = Design(
        columns=tuple(columns),
        groups=groups,
        supports=tuple(_supports(groups, draft.prompt_factors, varying)),
        roles=explicit,
        notes=tuple(notes),
    )
    return design, table


def _refuse_ignored_roles(
    explicit: Mapping[str, str], names: Sequence[str], ingest: IngestReport | None
) -> None:
    """Refuse a role given to a column the loader filled, which the design cannot change.

    ``--roles dataset=prompt`` on an Inspect log (whose loader fills ``dataset`` from the
    task name) was ignored without a word; it is an error that says what can be done.
    """
    for column, role in explicit.items():
        canonical = _CANONICAL_ROLE.get(column)
        if canonical is None or column not in names or _factor_role(role) == canonical:
            continue
        who = f"the {ingest.format} loader" if ingest is not None else "the table"
        raise ParameterError(
            f"`roles` gives {column!r} the role {role!r}, but {column!r} is the {canonical} "
            f"column {who} fills, and the design keeps it: read the files as a table "
            f"(--format table, where --roles {column}={role} applies to the source column), "
            "or name the source column instead."
        )


def _merged_by_dropping(lf: pl.LazyFrame, table: pl.LazyFrame, draft: Design) -> list[str]:
    """Factor columns whose leaving out makes two rows of the table one observation."""
    names = lf.collect_schema().names()
    dropped = [c for c in draft.left_out if c in factor_columns(names)]
    if not dropped or "item" not in names:
        return []
    key = [c for c in ("model", "dataset", "metric", "variant", "run", "item") if c in names]
    before, after = pl.collect_all(
        [lf.select(pl.struct(key).n_unique()), table.select(pl.struct(key).n_unique())]
    )
    if after.item() == before.item():
        return []
    return dropped


def _read_at_ingest(column: str, ingest: IngestReport | None) -> bool:
    """Whether the loader read ``column`` under a canonical name (the table loader's roles)."""
    if ingest is None:
        return False
    return any(column in n for n in ingest.notes if n.startswith("column roles:")) or any(
        c.column == column for c in ingest.columns
    )


def _varying(lf: pl.LazyFrame, cols: Sequence[str]) -> list[str]:
    if not cols:
        return []
    row = lf.select(pl.col(c).n_unique() for c in cols).collect().row(0)
    return [c for c, k in zip(cols, row) if k > 1]


def _notes(groups: pl.DataFrame) -> list[str]:
    notes = []
    differ = groups.filter(~pl.col("runs_cover_same_items").fill_null(True))
    if differ.height:
        notes.append(
            f"the runs of {differ.height} group(s) cover different items: run means use each "
            "run's own items; TAR and the stability table use the items every run scored"
        )
    sparse = groups.filter(pl.col("structure") == "sparse")
    if sparse.height:
        lo, hi = f"{sparse['cells_observed'].min():.0%}", f"{sparse['cells_observed'].max():.0%}"
        notes.append(
            f"{sparse.height} group(s) observe part of the item x prompt grid "
            f"({lo if lo == hi else f'{lo} to {hi}'} of the cells): a prompt's mean there is "
            "over the items it was run on"
        )
    return notes


def infer_design(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    ingest: IngestReport | None = None,
    roles: str | Mapping[str, str] | None = None,
) -> Design:
    """The design of an observation table: the role of every column, each group's structure.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        The observation table (from :func:`evalstats.read`, or built by hand).
    ingest : IngestReport, optional
        The loader's report: what it knew about columns (a task configuration that makes
        variants, text it left out) becomes evidence in the design.
    roles : str or mapping, optional
        Explicit roles, ``{"passage": "cluster", "request_timeout": "setting"}`` or
        ``"passage=cluster,request_timeout=setting"``: they win over every rule. Roles:
        ``model, dataset, metric, item, cluster, variant, prompt (factor), setting, run, score,
        answer, response, gold, input_text, latency_s, error, text (ignore), metadata``.

    Returns
    -------
    Design

    Raises
    ------
    ParameterError
        ``roles`` is malformed or names an unknown role.
    SchemaError
        ``roles`` names a column the table does not have.

    Notes
    -----
    The role of a factor column is decided, in order, by: an explicit role; what the loader
    knew (a task configuration or solver plan that differs between files of one task is a
    prompt factor); its name (a known prompt dimension, decoding or serving setting; a name of
    an output, a timing, a size or a harness setting); its values (near-unique or long text,
    a continuous measurement, constant within every item); else it is taken as a prompt
    dimension, and the evidence says so. See ``docs/design.md`` for each rule with a real
    example.

    Examples
    --------
    >>> import polars as pl
    >>> obs = pl.DataFrame({"model": "m", "dataset": "d", "item": [str(i % 4) for i in range(8)],
    ...                     "template": ["a"] * 4 + ["b"] * 4, "temperature": 0.0,
    ...                     "latency_ms": [float(i) * 1.37 for i in range(8)],
    ...                     "score": [1.0, 0.0] * 4})
    >>> d = infer_design(obs)
    >>> d.prompt_factors, d.settings, d.left_out
    (('template',), (), ('latency_ms',))
    >>> d.groups.select("n_items", "n_variants", "structure").rows()
    [(4, 2, 'crossed')]
    """
    return design_and_table(observations, ingest=ingest, roles=roles)[0]
