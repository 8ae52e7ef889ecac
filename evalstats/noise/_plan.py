"""The evaluation planner: the cheapest (items, variants, runs) for a target width or power."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats._text import plural
from evalstats.design._frames import analysis_input
from evalstats.errors import ParameterError
from evalstats.noise._design import OVER, check_over, design_variance, group_columns, wide
from evalstats.noise._kernels import COMPONENTS
from evalstats.results import check_confidence_level

if TYPE_CHECKING:
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["COST_KEYS", "PlanResult", "parse_cost", "plan"]

#: Keys of a cost mapping: one-off cost per item and per variant, cost per call (``run``), and
#: per-token prices that add ``price x mean tokens per call`` to the cost of a call.
COST_KEYS: tuple[str, ...] = ("item", "variant", "run", "input_token", "output_token")
_DEFAULT_COST = {"item": 0.0, "variant": 0.0, "run": 1.0}
#: Largest numbers of variants and runs searched when no maximum is given.
_GRID_VARIANTS = 200
_GRID_RUNS = 20


def parse_cost(text: str | Mapping[str, float] | None) -> dict[str, float]:
    """A cost mapping from ``"item=1,variant=0,run=1"`` (or ``"tokens"``), checked.

    ``"tokens"`` is ``input_token=1,output_token=1`` (a call costs its mean token count).
    Missing keys are 0 except ``run``, which is 1 unless a token price is given.

    Examples
    --------
    >>> parse_cost("item=1,variant=0,run=1")
    {'item': 1.0, 'variant': 0.0, 'run': 1.0, 'input_token': 0.0, 'output_token': 0.0}
    >>> parse_cost("tokens")["run"]
    0.0
    """
    if text is None:
        raw: dict[str, float] = {}
    elif isinstance(text, str):
        if text.strip() == "tokens":
            raw = {"input_token": 1.0, "output_token": 1.0}
        else:
            raw = {}
            for part in (p.strip() for p in text.split(",") if p.strip()):
                key, sep, val = part.partition("=")
                if not sep:
                    raise ParameterError(
                        f"`cost` entries look like key=value (keys: {', '.join(COST_KEYS)}), "
                        f"got {part!r}."
                    )
                try:
                    raw[key.strip()] = float(val)
                except ValueError:
                    raise ParameterError(
                        f"`cost` value of {key.strip()!r} must be a number, got {val!r}."
                    ) from None
    else:
        raw = {k: float(v) for k, v in text.items()}
    for k, v in raw.items():
        if k not in COST_KEYS:
            raise ParameterError(f"`cost` key must be one of {', '.join(COST_KEYS)}, got {k!r}.")
        if not (math.isfinite(v) and v >= 0):
            raise ParameterError(f"`cost` value of {k!r} must be a number >= 0, got {v!r}.")
    tokens = raw.get("input_token", 0.0) > 0 or raw.get("output_token", 0.0) > 0
    out = {k: raw.get(k, 0.0) for k in COST_KEYS}
    if "run" not in raw:
        out["run"] = 0.0 if tokens else 1.0
    if out["run"] == 0 and not tokens:
        raise ParameterError("`cost` gives calls no cost (run=0 and no token price).")
    return out


@dataclass(frozen=True, slots=True)
class PlanResult:
    """Result of :func:`plan`.

    ``best`` has one row per group (``scope == "group"``) and, when there are several groups,
    one row for the design that meets the target in every group at once (``scope == "all"``,
    group columns null). ``alternatives`` lists the cheapest designs of each group per (variants,
    runs) allocation; ``curves`` holds predicted width against cost for a few allocations (the
    figure of :func:`evalstats.plots.plot_plan`).
    """

    best: pl.DataFrame
    alternatives: pl.DataFrame
    curves: pl.DataFrame
    target: str
    target_width: float | None
    detect: float | None
    power: float | None
    confidence_level: float
    cost: dict[str, float]
    over: tuple[str, ...]
    components: pl.DataFrame = field(repr=False)

    def to_frame(self) -> pl.DataFrame:
        """The recommended designs (``best``)."""
        return self.best


def _token_means(obs, keys: list[str]) -> pl.DataFrame | None:
    from evalstats.schema import validate_observations

    lf = validate_observations(obs, check_values=False)  # adds `metric` when absent
    names = lf.collect_schema().names()
    if "input_len" not in names and "output_len" not in names:
        return None
    aggs = [
        (pl.col(c).cast(pl.Float64).mean() if c in names else pl.lit(None, pl.Float64)).alias(c)
        for c in ("input_len", "output_len")
    ]
    return lf.group_by(keys).agg(aggs).collect() if keys else lf.select(aggs).collect()


def plan(
    obs: TableLike | None = None,
    *,
    target_width: float | None = None,
    detect: float | None = None,
    power: float = 0.8,
    confidence_level: float = 0.95,
    cost: str | Mapping[str, float] | None = None,
    over: Sequence[str] | str = OVER,
    max_items: int | None = None,
    max_variants: int | None = None,
    max_runs: int | None = None,
    components: pl.DataFrame | None = None,
    method: str = "auto",
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> PlanResult:
    r"""The cheapest design (items, prompt variants, runs) that reaches a precision target.

    Parameters
    ----------
    obs : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table, optional
        The pilot observation table; its variance components (and mean token counts, for token
        costs) drive the plan. May be omitted when ``components`` is given and costs use no
        tokens.
    target_width : float, optional
        Width (``ci_high - ci_low``) of the confidence interval of each model's mean score.
    detect : float, optional
        A paired difference between two models to detect with probability ``power`` by a
        two-sided test at level ``1 - confidence_level``; plans on the pair components.
        Give exactly one of ``target_width`` and ``detect``.
    power : float, default 0.8
        Power for ``detect``.
    confidence_level : float, default 0.95
        Level of the interval (or ``1 -`` the test level).
    cost : str or mapping, optional
        ``item`` (one-off cost per item, e.g. labelling), ``variant`` (per prompt variant),
        ``run`` (per model call: one run of one item under one variant), ``input_token`` and
        ``output_token`` (prices added to a call's cost times the pilot's mean ``input_len`` /
        ``output_len``); see :func:`parse_cost`. Default: every call costs 1.
    over : sequence of {'items', 'variants'}, default ('items', 'variants')
        Facets the interval generalises over (see :func:`predicted_variance`). A facet left out
        is held at the pilot's size.
    max_items, max_variants, max_runs : int, optional
        Upper limits of the design (the items or variants that exist). When not given, variants
        are searched up to ``max(200, 10 x the pilot's)`` (at most 5000) and runs up to 20.
    components : polars.DataFrame, optional
        Precomputed :func:`variance_components` (with ``pairs=True`` for ``detect``).
    method, seed, by
        Passed to :func:`variance_components` when ``components`` is not given.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    PlanResult
        ``best``: group columns, ``model_b``, ``scope``, ``n_items, n_variants, n_runs``,
        ``calls``, ``cost``, ``se``, ``width`` (predicted), ``target_se``, ``feasible``,
        ``at_limit`` (the facets at the edge of the search: the optimum may lie beyond, or for an
        infeasible plan the limits that bind);
        ``alternatives`` and ``curves`` (see :class:`PlanResult`).

    Raises
    ------
    ParameterError
        Neither or both targets, a non-positive target, a bad cost.

    Notes
    -----
    For each (``n_variants``, ``n_runs``) on the grid the fewest items that reach the target
    variance :math:`T` follow in closed form from :func:`predicted_variance`:
    :math:`n_i \ge (\sigma^2_i + \sigma^2_{iv}/n_v + \sigma^2_e/(n_v n_r)) /
    (T - \sigma^2_v/n_v)`; the design of least cost
    :math:`c_{item} n_i + c_{variant} n_v + c_{call} n_i n_v n_r` among them is returned. Width
    target: :math:`T = (W / 2z_{1-\alpha/2})^2`; detection target:
    :math:`T = (D/(z_{1-\alpha/2} + z_{power}))^2` on the paired-difference components (a
    normal approximation). A facet the pilot had only one level of (one variant, one run per
    cell) is held at that size: the data say nothing about what more levels would buy. The plan
    uses the point estimates; it is as good as the pilot's components (see their intervals).

    Checked against: subsampling the recommended design from a large simulated dump, whose
    observed spread of the mean matches the predicted width (``tests/test_noise.py``).

    Examples
    --------
    >>> from evalstats.simulate import crossed_scores
    >>> pilot = crossed_scores(n_items=100, n_variants=8, n_runs=2, seed=0)
    >>> res = plan(pilot, target_width=0.04, cost="item=0,variant=0,run=1")
    >>> row = res.best.row(0, named=True)
    >>> row["feasible"], row["width"] <= 0.04
    (True, True)
    """
    if obs is not None:
        obs = analysis_input(obs, roles=roles, design=design).table
    from evalstats.noise._components import variance_components

    if (target_width is None) == (detect is None):
        raise ParameterError("give exactly one of `target_width` and `detect`.")
    level = check_confidence_level(confidence_level)
    over = check_over(over)
    costs = parse_cost(cost)
    for name, v in (("target_width", target_width), ("detect", detect)):
        if v is not None and not (isinstance(v, int | float) and v > 0 and math.isfinite(v)):
            raise ParameterError(f"`{name}` must be a positive number, got {v!r}.")
    if detect is not None and not 0 < power < 1:
        raise ParameterError(f"`power` must be in (0, 1), got {power!r}.")
    for name, v in (
        ("max_items", max_items),
        ("max_variants", max_variants),
        ("max_runs", max_runs),
    ):
        if v is not None and (not isinstance(v, int) or v < 1):
            raise ParameterError(f"`{name}` must be a positive integer, got {v!r}.")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    pairs = detect is not None
    if components is None:
        if obs is None:
            raise ParameterError("give the pilot observations `obs` or their `components`.")
        components = variance_components(obs, pairs=pairs, method=method, seed=seed, by=by)
    comps = components.filter(
        pl.col("model_b").is_not_null() if pairs else pl.col("model_b").is_null()
    )
    if comps.height == 0:
        raise ParameterError(
            "`detect` needs pair components: at least two models and variance_components(..., "
            "pairs=True)."
            if pairs
            else "`components` holds no single-model rows."
        )
    if pairs:
        target_se = detect / (z + NormalDist().inv_cdf(power))
    else:
        target_se = target_width / (2 * z)
    target_var = target_se**2
    keys = group_columns(comps)
    w = wide(comps)
    call_cost = np.full(w.height, costs["run"])
    if costs["input_token"] or costs["output_token"]:
        tok_keys = [k for k in keys if k != "model" or not pairs]
        tokens = None if obs is None else _token_means(obs, tok_keys)
        if tokens is None:
            raise ParameterError(
                "token costs need the pilot's `input_len`/`output_len` columns; the table has "
                "neither."
            )
        t = (
            w.join(tokens, on=tok_keys, how="left", maintain_order="left")
            if tok_keys
            else (w.with_columns(*(pl.lit(tokens[c].item()).alias(c) for c in tokens.columns)))
        )
        call_cost = call_cost + (
            costs["input_token"] * t["input_len"].fill_null(0).to_numpy()
            + costs["output_token"] * t["output_len"].fill_null(0).to_numpy()
        )
    return _search(
        w, keys, comps, target_se, target_var, z, costs, call_cost, over,
        max_items, max_variants, max_runs, level, target_width, detect, power if pairs else None,
    )  # fmt: skip


def _search(
    w, keys, comps, target_se, target_var, z, costs, call_cost, over,
    max_items, max_variants, max_runs, level, target_width, detect, power,
) -> PlanResult:  # fmt: skip
    s = w.select(COMPONENTS).to_numpy().astype(float)  # (G, 4)
    G = s.shape[0]
    units = (w["level"] == "units").to_numpy()
    pilot_i = w["n_items"].fill_null(1).to_numpy().astype(float)
    pilot_v = w["n_variants"].to_numpy().astype(float)
    pilot_r = np.round(w["n_runs"].to_numpy()).astype(float)
    reps = pilot_r > 1
    # facets the pilot cannot speak for stay at the pilot's size
    vary_v = ("variants" in over) & (pilot_v > 1) & ~np.isnan(s[:, 1])
    vary_r = reps
    vary_i = ~units & ("items" in over)
    v_hi = max_variants or int(min(max(_GRID_VARIANTS, 10 * pilot_v.max()), 5000))
    r_hi = max_runs or _GRID_RUNS
    v_hi = v_hi if vary_v.any() else 1  # no group can vary it: one column of the grid suffices
    r_hi = r_hi if vary_r.any() else 1
    nv = np.arange(1, v_hi + 1, dtype=float)
    nr = np.arange(1, r_hi + 1, dtype=float)
    NV, NR = np.meshgrid(nv, nr, indexing="ij")  # (V, R)
    NV = np.broadcast_to(NV, (G, *NV.shape)).copy()
    NR = np.broadcast_to(NR, (G, *NR.shape)).copy()
    fixed_v = ~vary_v
    fixed_r = ~vary_r
    NV[fixed_v] = pilot_v[fixed_v, None, None]
    NR[fixed_r] = pilot_r[fixed_r, None, None]
    S = s[:, None, None, :]
    # variance = A / n_i + B  with A from the item-dependent terms and B the rest
    A = design_variance(S, 1.0, NV, NR, over=over, replicated=reps[:, None, None])
    B = design_variance(S, np.inf, NV, NR, over=over, replicated=reps[:, None, None])
    A = A - B
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(B < target_var, np.ceil(A / (target_var - B) - 1e-9), np.inf)
    need = np.maximum(need, 1.0)
    need[~vary_i] = np.where(
        np.isfinite(need[~vary_i]) & (need[~vary_i] <= pilot_i[~vary_i, None, None]),
        pilot_i[~vary_i, None, None],
        np.inf,
    )
    if max_items is not None:
        need = np.where(need <= max_items, need, np.inf)
    ni = np.where(units[:, None, None], 1.0, need)  # unit tables: n_i is 1 in the formula
    unit_items = np.where(units, w["n_items"].fill_null(1).to_numpy(), 1.0)
    calls = need * NV * NR * np.where(units, unit_items, 1.0)[:, None, None]
    feasible = np.isfinite(need)
    total = np.where(
        feasible,
        costs["item"] * np.where(units[:, None, None] | ~feasible, 0.0, need)
        + costs["variant"] * NV
        + call_cost[:, None, None] * np.where(feasible, calls, 0.0),
        np.inf,
    )
    var = design_variance(S, ni, NV, NR, over=over, replicated=reps[:, None, None])
    best_rows, alt_rows = [], []
    base_cols = w.select([*keys, "model_b"]).rows(named=True)
    for g in range(G):
        cand = _candidates(total[g], need[g], NV[g], NR[g], calls[g], var[g], feasible[g])
        if units[g]:  # unit scores: the item set is the dump's, not a design choice
            cand = [(None, *c[1:]) for c in cand]
        lim = (v_hi if vary_v[g] else None, r_hi if vary_r[g] else None, max_items)
        best_rows.append(_row(base_cols[g], "group", cand[0] if cand else None, z, target_se, lim))
        coarse = feasible[g] & _coarse_mask(NV[g], NR[g], cand[0] if cand else None)
        alts = _candidates(total[g], need[g], NV[g], NR[g], calls[g], var[g], coarse)
        if units[g]:
            alts = [(None, *c[1:]) for c in alts]
        for c in alts:
            alt_rows.append(_row(base_cols[g], "group", c, z, target_se, lim))
    if G > 1:
        need_all = np.max(np.where(np.isfinite(need), need, np.inf), axis=0)
        same = np.all(fixed_v) or np.all(vary_v)
        if same and np.all(vary_r == vary_r[0]) and not np.any(units):
            ni_all = need_all[None]
            var_all = design_variance(S, ni_all, NV, NR, over=over, replicated=reps[:, None, None])
            ok_all = np.isfinite(need_all)
            calls_all = np.where(ok_all, need_all * NV[0] * NR[0], 0.0)
            tot_all = np.where(
                ok_all,
                costs["item"] * np.where(ok_all, need_all, 0.0)
                + costs["variant"] * NV[0]
                + float(np.max(call_cost)) * calls_all,
                np.inf,
            )
            cand = _candidates(
                tot_all, need_all, NV[0], NR[0], calls_all, var_all.max(axis=0),
                np.isfinite(tot_all),
            )  # fmt: skip
            empty = {k: None for k in base_cols[0]}
            lim = (v_hi if vary_v.any() else None, r_hi if vary_r.any() else None, max_items)
            best_rows.append(_row(empty, "all", cand[0] if cand else None, z, target_se, lim))
            coarse = np.isfinite(tot_all) & _coarse_mask(NV[0], NR[0], cand[0] if cand else None)
            alts = _candidates(
                tot_all, need_all, NV[0], NR[0], calls_all, var_all.max(axis=0), coarse
            )
            for c in alts:
                alt_rows.append(_row(empty, "all", c, z, target_se, lim))
    schema = {k: comps.schema[k] for k in keys} | _BEST_SCHEMA
    best = pl.DataFrame(best_rows, schema=schema, orient="row")
    alts = pl.DataFrame(alt_rows, schema=schema, orient="row")
    curves = _curves(w, keys, S, best, pilot_v, pilot_r, reps, over, costs, call_cost, z, units)
    return PlanResult(
        best=best,
        alternatives=alts,
        curves=curves,
        target="detect" if detect is not None else "width",
        target_width=None if target_width is None else float(target_width),
        detect=None if detect is None else float(detect),
        power=None if power is None else float(power),
        confidence_level=level,
        cost=costs,
        over=over,
        components=comps,
    )


_BEST_SCHEMA = {
    "model_b": pl.String,
    "scope": pl.String,
    "n_items": pl.Int64,
    "n_variants": pl.Int64,
    "n_runs": pl.Int64,
    "calls": pl.Int64,
    "cost": pl.Float64,
    "se": pl.Float64,
    "width": pl.Float64,
    "target_se": pl.Float64,
    "feasible": pl.Boolean,
    "at_limit": pl.String,
}


#: Allocations shown in the table of alternatives (with the recommended one).
_COARSE_VARIANTS = (1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 100, 200, 500, 1000, 2000, 5000)
_COARSE_RUNS = (1, 2, 3, 5, 10, 20)


def _coarse_mask(NV: np.ndarray, NR: np.ndarray, best: tuple | None) -> np.ndarray:
    """Grid points on a coarse set of allocations, so alternatives differ in kind."""
    mask = np.isin(NV, _COARSE_VARIANTS) & np.isin(NR, _COARSE_RUNS)
    if best is not None:
        mask |= (NV == best[1]) & (NR == best[2])
    return mask


def _candidates(total, need, NV, NR, calls, var, feasible) -> list[tuple]:
    """Feasible designs sorted by cost (ties: fewer calls, then more items)."""
    idx = np.flatnonzero(feasible.ravel())
    if idx.size == 0:
        return []
    t = total.ravel()[idx]
    c = calls.ravel()[idx]
    n = need.ravel()[idx]
    order = np.lexsort((-n, c, t))
    out, seen = [], set()
    for k in idx[order]:
        d = (int(need.ravel()[k]), int(NV.ravel()[k]), int(NR.ravel()[k]))
        if d in seen:
            continue
        seen.add(d)
        out.append((*d, int(calls.ravel()[k]), float(total.ravel()[k]), float(var.ravel()[k])))
        if len(out) >= 10:
            break
    return out


def _row(
    base: dict, scope: str, cand: tuple | None, z: float, target_se: float, limits: tuple
) -> dict:
    v_hi, r_hi, i_hi = limits
    if cand is None:
        at = [n for n, lim in (("items", i_hi), ("variants", v_hi), ("runs", r_hi)) if lim]
        return {
            **base,
            "scope": scope,
            "target_se": target_se,
            "feasible": False,
            "at_limit": ",".join(at) or None,
        }
    ni, nv, nr, calls, cost, var = cand
    se = math.sqrt(var)
    hit = [
        n
        for n, val, lim in (("items", ni, i_hi), ("variants", nv, v_hi), ("runs", nr, r_hi))
        if lim is not None and val >= lim
    ]
    return {
        **base,
        "scope": scope,
        "n_items": ni,
        "n_variants": nv,
        "n_runs": nr,
        "calls": calls,
        "cost": cost,
        "se": se,
        "width": 2 * z * se,
        "target_se": target_se,
        "feasible": True,
        "at_limit": ",".join(hit) or None,
    }


def _curves(w, keys, S, best, pilot_v, pilot_r, reps, over, costs, call_cost, z, units):
    """Predicted width against cost as items grow, for a few (variants, runs) allocations."""
    rows = []
    base_cols = w.select([*keys, "model_b"]).rows(named=True)
    best_g = best.filter(pl.col("scope") == "group")
    ni_grid = np.unique(np.round(np.geomspace(10, 20000, 60)))
    for g, base in enumerate(base_cols):
        b = best_g.row(g, named=True)
        allocs = {(int(pilot_v[g]), int(pilot_r[g]))}
        if b["feasible"]:
            allocs.add((b["n_variants"], b["n_runs"]))
        for nv in (1, 5, 20):
            if pilot_v[g] > 1 or nv == int(pilot_v[g]):
                for nr in (1, 3):
                    if reps[g] or nr == int(pilot_r[g]):
                        allocs.add((nv, nr))
        for nv, nr in sorted(allocs):
            ni = np.ones_like(ni_grid) if units[g] else ni_grid
            var = design_variance(
                S[g, 0, 0], ni, float(nv), float(nr), over=over, replicated=reps[g]
            )
            calls = ni * nv * nr
            cost = (
                costs["item"] * (0 if units[g] else ni)
                + costs["variant"] * nv
                + call_cost[g] * calls
            )
            for k in range(ni.size):
                rows.append(
                    {
                        **base,
                        "allocation": f"{plural(nv, 'variant')} x {plural(nr, 'run')}",
                        "n_items": int(ni[k]),
                        "n_variants": nv,
                        "n_runs": nr,
                        "cost": float(cost[k]),
                        "width": float(2 * z * math.sqrt(var[k])),
                    }
                )
                if units[g]:
                    break
    schema = {k: w.schema[k] for k in keys} | {
        "model_b": pl.String,
        "allocation": pl.String,
        "n_items": pl.Int64,
        "n_variants": pl.Int64,
        "n_runs": pl.Int64,
        "cost": pl.Float64,
        "width": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
