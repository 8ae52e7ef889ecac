"""Numeric core of the sparse-grid estimator: numpy and scipy arrays in, arrays out.

A crossed logistic model of item x prompt cells, fitted by penalised likelihood:

    logit P(correct | item i, prompt p) = mu + a_i + sum_f c_f[level_f(p)] + u_p

with a_i ~ N(0, s_a^2), c_f ~ N(0, s_f^2) (one variance per prompt factor) and
u_p ~ N(0, s_u^2). Modes by exact Newton steps through the Schur complement of the larger
crossed facet (:class:`_Blocks`; its cross block kept sparse where the grid is; Newton-CG on
the sparse design matrix beyond :data:`MAX_REST`); variances started by the fixed point of the
EM update s^2 = mean(theta^2 + v) and refined by the Laplace marginal likelihood, with its
exact gradient (:mod:`evalstats.sparse._laplace`); then the item variance by the items' exact
marginal likelihood (:mod:`evalstats.sparse._items`) and each prompt factor's variance at its
posterior median (:func:`evalstats.sparse._laplace.factor_variances`), where the Laplace
values are biased low with few cells an item or few levels; posterior variances v from the diagonal of
the penalised Hessian with a one-step Schur correction for the crossed facet (module
``_draws`` uses them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.special import expit

__all__ = ["CellData", "Fit", "fit_cells"]

#: Smallest variance of a random-effect block (logit scale): keeps the penalty finite when a
#: facet has no variation at all.
_MIN_VAR = 1e-4
#: Prior precision of the intercept: normal with the variance of the standard logistic
#: (pi^2 / 3), the logit of a grand accuracy uniform on (0, 1). It matters only where the cells
#: barely tell the level: where every observed cell is right (or wrong) a flat prior left the
#: intercept running off to 18 logits and the draws' level uncertain by 1e6 (a group of 400
#: right cells came out at 0.60); with it the level is about log of the cells' count, as a
#: Beta(N + 1, 1) posterior of the grand accuracy has it. With thousands of cells it moves the
#: intercept by less than 0.001 logit.
_MU_PRECISION = 3.0 / np.pi**2
#: Largest dense block (intercept, factor levels, smaller facet) of the exact Newton steps and
#: the Laplace fit; beyond it the trust-region solver and the quasi-likelihood variances.
MAX_REST = 2500
#: A sparse cross block (:meth:`_Blocks._sparse_cross`) is used when its pairs of entries
#: sharing a row, times this, are fewer than the dense product's terms (a pair costs a
#: scattered add, a dense term a fused multiply-add; measured on 400 x 100 grids, one BLAS
#: thread: the two cost the same at a ratio of 120-150, the sparse one 3.8x faster at 2 %).
_PAIR_COST = 120
#: Relative tolerance of the fixed point when it only starts the Laplace fit.
_START_TOL = 2e-2
#: Most fixed-point steps when they only start the Laplace fit (a variance heading for its
#: floor moves by a few per cent a step; the Laplace fit takes it there).
_START_ITER = 25


@dataclass(frozen=True)
class CellData:
    """The observed cells of one group, as integer codes and success counts.

    ``item`` and ``prompt`` are codes into ``0..n_items-1`` and ``0..n_prompts-1``; ``k`` the
    sum of scores of the cell (successes, fractional for fractional scores), ``n`` its number
    of scored outputs (runs); ``levels`` is ``n_prompts x n_factors`` level codes (possibly
    zero columns).
    """

    item: np.ndarray
    prompt: np.ndarray
    k: np.ndarray
    n: np.ndarray
    n_items: int
    n_prompts: int
    levels: np.ndarray

    @property
    def n_levels(self) -> list[int]:
        """Number of levels of each prompt factor."""
        return [int(self.levels[:, f].max()) + 1 for f in range(self.levels.shape[1])]


@dataclass(frozen=True)
class Fit:
    """Modes, posterior variances and variance components of the fitted model."""

    mu: float
    a: np.ndarray
    a_var: np.ndarray
    c: list[np.ndarray]
    c_var: list[np.ndarray]
    u: np.ndarray
    u_var: np.ndarray
    var_item: float
    var_factor: list[float]
    var_prompt: float
    iterations: int
    converged: bool
    variance_method: str = "pql"
    #: The intercept paired with the item variance by the items' exact marginal likelihood
    #: (:mod:`evalstats.sparse._items`), None when not computed: the items never observed are
    #: drawn around it (``mu`` is the joint mode's, for the observed ones).
    mu_marginal: float | None = None

    def prompt_effect(self, levels: np.ndarray) -> np.ndarray:
        """b_p = sum_f c_f[level] + u_p for every prompt."""
        b = self.u.copy()
        for f, c in enumerate(self.c):
            b += c[levels[:, f]]
        return b


def _design(cells: CellData) -> tuple[sp.csr_matrix, list[slice]]:
    """Sparse 0/1 design matrix (cells x parameters) and the slice of each parameter block."""
    m = cells.item.size
    sizes = [1, cells.n_items, *cells.n_levels, cells.n_prompts]
    offsets = np.cumsum([0, *sizes])
    cols = [np.zeros(m, dtype=np.int64), offsets[1] + cells.item]
    for f in range(cells.levels.shape[1]):
        cols.append(offsets[2 + f] + cells.levels[cells.prompt, f])
    cols.append(offsets[-2] + cells.prompt)
    col = np.concatenate(cols)
    row = np.tile(np.arange(m), len(cols))
    x = sp.csr_matrix((np.ones(col.size), (row, col)), shape=(m, int(offsets[-1])))
    blocks = [slice(int(offsets[j]), int(offsets[j + 1])) for j in range(len(sizes))]
    return x, blocks


class _Blocks:
    """The crossed structure of the design, for exact Newton steps and log-determinants.

    Every cell has one column in each block (intercept, item, each factor, prompt), so the
    penalised Hessian X'WX + diag(lam) has a diagonal block for the larger crossed facet
    (``diag``) and a dense block for the rest (intercept, factor levels, the smaller facet).
    Both, and their cross block, are sums of the cells' weights (``np.bincount``); a Newton
    step and log|H| go through the Schur complement of the diagonal block (Cholesky of a
    dense matrix of the rest's size, :data:`MAX_REST` at most).
    """

    def __init__(self, cells: CellData, blocks: list[slice]):
        slots = [np.zeros(cells.item.size, dtype=np.int64), blocks[1].start + cells.item]
        for f in range(cells.levels.shape[1]):
            slots.append(blocks[2 + f].start + cells.levels[cells.prompt, f])
        slots.append(blocks[-1].start + cells.prompt)
        self.diag = blocks[1] if cells.n_items >= cells.n_prompts else blocks[-1]
        d_slot = 1 if self.diag is blocks[1] else len(slots) - 1
        n_par = blocks[-1].stop
        self.rest = np.r_[0 : self.diag.start, self.diag.stop : n_par]
        local = np.full(n_par, -1, dtype=np.int64)
        local[self.rest] = np.arange(self.rest.size)
        self.n_diag = self.diag.stop - self.diag.start
        self.n_rest = self.rest.size
        self.d = slots[d_slot] - self.diag.start
        self.r = [local[s] for j, s in enumerate(slots) if j != d_slot]
        # the rest block's nonzero pattern (upper triangle): each cell adds its weight to the
        # pairs of its rest columns
        nr = self.n_rest
        keys = np.concatenate(
            [
                np.minimum(ri, rj) * nr + np.maximum(ri, rj)
                for i, ri in enumerate(self.r)
                for rj in self.r[i:]
            ]
        )
        pattern, self.s_idx = np.unique(keys, return_inverse=True)
        self.s_pattern = (pattern // nr, pattern % nr)
        self.s_copies = len(keys) // max(self.d.size, 1)
        self._sparse_cross()

    def _sparse_cross(self) -> None:
        """The cross block's nonzero pattern and the pairs of its entries sharing a row.

        b' diag(1/a) b sums, over each row d of b, b_dr b_dr' / a_d for the pairs (r, r') of
        its nonzero columns. Where those pairs are far fewer than the dense product's
        n_diag x n_rest^2 terms (a sparse grid: a few cells an item), the cross block is kept
        sparse and the Schur complement built from the pairs (``self.pairs`` None: dense).
        """
        nr = self.n_rest
        keys = np.concatenate([self.d * nr + r for r in self.r])
        pattern, self.b_idx = np.unique(keys, return_inverse=True)
        row, col = pattern // nr, pattern % nr
        # entry e pairs with the entries e' >= e of its row (the pattern is row-major)
        row_end = np.searchsorted(row, row, side="right")
        count = row_end - np.arange(pattern.size)
        n_pairs = int(count.sum())
        self.pairs = None
        self.b_pattern = None
        if n_pairs * _PAIR_COST >= self.n_diag * nr * nr:
            return
        e1 = np.repeat(np.arange(pattern.size), count)
        e2 = e1 + np.arange(n_pairs) - np.repeat(np.cumsum(count) - count, count)
        off = e1 != e2
        self.pairs = (
            e1,
            e2,
            row[e1],
            np.concatenate([col[e1] * nr + col[e2], col[e2[off]] * nr + col[e1[off]]]),
            off,
        )
        self.b_pattern = (row, col)

    def _b_dot(self, b: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The product b @ x, b dense or the sparse pattern's values."""
        if self.b_pattern is None:
            return b @ x
        row, col = self.b_pattern
        return np.bincount(row, b * x[col], self.n_diag)

    def _bt_dot(self, b: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The product b' @ y, b dense or the sparse pattern's values."""
        if self.b_pattern is None:
            return b.T @ y
        row, col = self.b_pattern
        return np.bincount(col, b * y[row], self.n_rest)

    def _b_dense(self, b: np.ndarray) -> np.ndarray:
        if self.b_pattern is None:
            return b
        out = np.zeros((self.n_diag, self.n_rest))
        out[self.b_pattern] = b
        return out

    def parts(self, w: np.ndarray, lam: np.ndarray):
        """Diagonal block a, cross block b (n_diag x n_rest) and rest block s of H."""
        nr = self.n_rest
        a = np.bincount(self.d, w, self.n_diag) + lam[self.diag]
        if self.b_pattern is not None:
            b = np.bincount(self.b_idx, np.tile(w, len(self.r)))
        else:
            b = np.zeros(self.n_diag * nr)
            for r in self.r:
                b += np.bincount(self.d * nr + r, w, self.n_diag * nr)
            b = b.reshape(self.n_diag, nr)
        vals = np.bincount(self.s_idx, np.tile(w, self.s_copies))
        s = np.zeros((nr, nr))
        rows, cols = self.s_pattern
        s[rows, cols] = vals
        s[cols, rows] = vals
        s[np.diag_indices(nr)] += lam[self.rest]
        return a, b, s

    def schur(self, w: np.ndarray, lam: np.ndarray):
        """(a, b, Cholesky factor of the Schur complement s - b' diag(1/a) b)."""
        a, b, s = self.parts(w, lam)
        if self.pairs is None:
            btb = (b.T / a) @ b
        else:
            e1, e2, d, flat, off = self.pairs
            v = b[e1] * b[e2] / a[d]
            nr = self.n_rest
            btb = np.bincount(flat, np.concatenate([v, v[off]]), nr * nr).reshape(nr, nr)
        c, _ = cho_factor(s - btb, lower=True, check_finite=False)
        return a, b, c

    def solve(self, w: np.ndarray, lam: np.ndarray, g: np.ndarray) -> np.ndarray:
        """H^{-1} g by block elimination."""
        a, b, c = self.schur(w, lam)
        gd, gr = g[self.diag], g[self.rest]
        xr = cho_solve((c, True), gr - self._bt_dot(b, gd / a), check_finite=False)
        out = np.empty_like(g)
        out[self.diag] = (gd - self._b_dot(b, xr)) / a
        out[self.rest] = xr
        return out

    def rest_covariance(self, w: np.ndarray, lam: np.ndarray, params: np.ndarray) -> np.ndarray:
        """The block of H^{-1} at ``params`` (parameter indices, all in the rest block).

        It is the inverse Schur complement's block there.
        """
        _, _, c = self.schur(w, lam)
        pos = np.where(params < self.diag.start, params, params - self.n_diag)
        unit = np.zeros((self.n_rest, pos.size))
        unit[pos, np.arange(pos.size)] = 1.0
        return cho_solve((c, True), unit, check_finite=False)[pos]

    def logdet(self, w: np.ndarray, lam: np.ndarray) -> float:
        """log|X'WX + diag(lam)|."""
        a, _, c = self.schur(w, lam)
        return float(np.sum(np.log(a)) + 2.0 * np.sum(np.log(np.diag(c))))

    def inverse(self, w: np.ndarray, lam: np.ndarray):
        """log|H|, diag(H^{-1}), every cell's leverage x_c' H^{-1} x_c, and g -> H^{-1} g.

        With G = diag(1/a) b and Z the inverse Schur complement, the diagonal block of H^{-1}
        is diag(1/a) + G Z G', its cross block -G Z and its rest block Z; a cell has one
        column in the diagonal block (d) and one in the rest per other facet (R), so its
        leverage is 1/a_d + (G Z G')_dd - 2 sum_{r in R} (G Z)_dr + sum_{r, r' in R} Z_rr'.
        """
        a, b, c = self.schur(w, lam)
        z = cho_solve((c, True), np.eye(self.n_rest), check_finite=False)
        g = self._b_dense(b) / a[:, None]
        m = g @ z
        q = np.einsum("ij,ij->i", m, g)
        lev = 1.0 / a[self.d] + q[self.d]
        for i, ri in enumerate(self.r):
            lev -= 2.0 * m[self.d, ri]
            lev += z[ri, ri]
            for rj in self.r[i + 1 :]:
                lev += 2.0 * z[ri, rj]
        diag = np.empty(self.n_diag + self.n_rest)
        diag[self.diag] = 1.0 / a + q
        diag[self.rest] = np.diag(z)
        logdet = float(np.sum(np.log(a)) + 2.0 * np.sum(np.log(np.diag(c))))

        def solve(v: np.ndarray) -> np.ndarray:
            vd, vr = v[self.diag], v[self.rest]
            xr = z @ (vr - self._bt_dot(b, vd / a))
            out = np.empty_like(v)
            out[self.diag] = (vd - self._b_dot(b, xr)) / a
            out[self.rest] = xr
            return out

        return logdet, diag, lev, solve


def _newton_mode(
    x: sp.csr_matrix,
    xt: sp.csr_matrix,
    k: np.ndarray,
    n: np.ndarray,
    lam: np.ndarray,
    theta0: np.ndarray,
    structure: _Blocks,
) -> tuple[np.ndarray, bool]:
    """The penalised mode by exact Newton steps with step halving (structure: :class:`_Blocks`).

    The objective is convex; a step is halved until it does not increase it. Converged when
    the largest gradient component is below 1e-6 (as the trust-region solver's ``gtol``).
    """

    def objective(eta: np.ndarray, theta: np.ndarray) -> float:
        return float(np.sum(n * np.logaddexp(0.0, eta) - k * eta)) + 0.5 * float(
            np.sum(lam * theta * theta)
        )

    theta = theta0.copy()
    eta = x @ theta
    f = objective(eta, theta)
    for _ in range(100):
        p = expit(eta)
        g = xt @ (n * p - k) + lam * theta
        if np.max(np.abs(g)) < 1e-6:
            return theta, True
        step = structure.solve(n * p * (1 - p), lam, g)
        t = 1.0
        for _ in range(30):
            new = theta - t * step
            eta_new = x @ new
            f_new = objective(eta_new, new)
            if f_new <= f + 1e-12 * abs(f):
                break
            t *= 0.5
        else:
            return theta, False
        theta, eta, f = new, eta_new, f_new
    return theta, False


def _precision(blocks: list[slice], variances: list[float]) -> np.ndarray:
    lam = np.empty(blocks[-1].stop)
    lam[blocks[0]] = _MU_PRECISION
    for s, v in zip(blocks[1:], variances):
        lam[s] = 1.0 / v
    return lam


def _mode(
    x: sp.csr_matrix,
    xt: sp.csr_matrix,
    k: np.ndarray,
    n: np.ndarray,
    lam: np.ndarray,
    theta0,
    structure: _Blocks | None = None,
) -> tuple[np.ndarray, bool]:
    """Penalised maximum-likelihood mode.

    Exact Newton steps through ``structure`` when given (:func:`_newton_mode`), else (or when
    those fail) Newton-CG with exact Hessian-vector products.
    """
    if structure is not None:
        try:
            theta, ok = _newton_mode(x, xt, k, n, lam, theta0, structure)
        except (LinAlgError, ValueError):
            ok = False
        if ok:
            return theta, ok

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = x @ theta
        # n*log(1 + e^eta) - k*eta, stably
        nll = float(np.sum(n * np.logaddexp(0.0, eta) - k * eta))
        pen = 0.5 * float(np.sum(lam * theta * theta))
        grad = xt @ (n * expit(eta) - k) + lam * theta
        return nll + pen, grad

    cache: dict[str, np.ndarray] = {}

    def hessp(theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        # the solver asks for many products at one theta: weights computed once per theta
        if "theta" not in cache or not np.array_equal(cache["theta"], theta):
            p = expit(x @ theta)
            cache["theta"], cache["w"] = theta.copy(), n * p * (1 - p)
        return xt @ (cache["w"] * (x @ v)) + lam * v

    res = minimize(fun, theta0, jac=True, hessp=hessp, method="trust-ncg", options={"gtol": 1e-6})
    return res.x, bool(res.success)


def _posterior_var(
    x: sp.csr_matrix,
    theta: np.ndarray,
    n: np.ndarray,
    lam: np.ndarray,
    cells: CellData,
    blocks: list[slice],
) -> np.ndarray:
    """Approximate marginal posterior variances: diagonal of H with a Schur correction.

    For an item effect, the information its cells carry is reduced by what the prompt
    effects of those cells absorb (sum_p w_ip^2 / H_pp), and symmetrically for prompts: the
    first term of the block inverse, which the plain 1/H_jj ignores.
    """
    p = expit(x @ theta)
    w = n * p * (1 - p)
    h = (x.T @ w) + lam  # diagonal of X'WX + Lambda (X is 0/1)
    ia, iu = blocks[1], blocks[-1]
    h_item = h[ia]
    h_prompt = h[iu]
    corr_item = np.bincount(cells.item, w * w / h_prompt[cells.prompt], cells.n_items)
    corr_prompt = np.bincount(cells.prompt, w * w / h_item[cells.item], cells.n_prompts)
    var = 1.0 / h
    var[ia] = 1.0 / np.maximum(h_item - corr_item, lam[ia])
    var[iu] = 1.0 / np.maximum(h_prompt - corr_prompt, lam[iu])
    return var


def _update(theta: np.ndarray, var: np.ndarray, current: float) -> float:
    """MacKay's fixed-point update of a block variance: sum(theta^2) / effective parameters.

    Same fixed point as the Laplace EM update mean(theta^2 + v), reached in a few steps
    instead of hundreds when the data say little (v close to the prior variance).
    """
    gamma = float(np.sum(1.0 - var / current))
    if gamma <= 1e-8:
        return max(float(np.mean(theta**2 + var)), _MIN_VAR)
    return max(float(np.sum(theta**2)) / gamma, _MIN_VAR)


#: Whether, after the Laplace fit, the item variance is re-estimated by the items' exact
#: marginal likelihood (:mod:`evalstats.sparse._items`) and each prompt factor's variance
#: taken at its posterior median (:func:`evalstats.sparse._laplace.factor_variances`).
_EXACT_ITEMS = True
_FACTOR_MEDIAN = True


def fit_cells(
    cells: CellData, *, max_iter: int = 200, tol: float = 1e-3, laplace: bool = True
) -> Fit:
    """Fit the crossed logistic model to the observed cells (module docstring).

    The variance components start at 1 (items), 0.25 (prompt factors, prompts) and are
    updated by MacKay's fixed point (that of the EM update s^2 = mean(theta^2 + v)) until every one moves by less than ``tol``
    relatively (or ``max_iter`` updates). With ``laplace`` they are then refined by the
    Laplace approximation of the marginal likelihood (:mod:`evalstats.sparse._laplace`), which
    the penalised-quasi-likelihood fixed point underestimates for binary cells; beyond its
    size limit the fixed point is kept (``variance_method`` says which). After the Laplace
    fit, the item variance is re-estimated from the items' exact marginal likelihood and the
    factor variances are taken at their posterior medians (module docstring).
    """
    x, blocks = _design(cells)
    xt = x.T.tocsr()
    structure = _Blocks(cells, blocks)
    if structure.n_rest > MAX_REST:
        structure = None
    k = cells.k.astype(float)
    n = cells.n.astype(float)
    n_fac = cells.levels.shape[1]
    variances = [1.0, *([0.25] * n_fac), 0.25]
    theta = np.zeros(blocks[-1].stop)
    pbar = np.clip(k.sum() / n.sum(), 1e-3, 1 - 1e-3)
    theta[0] = np.log(pbar / (1 - pbar))
    converged = False
    it = 0
    ok = True
    use_laplace = laplace and structure is not None
    # the fixed point only starts the Laplace fit: a looser tolerance (the Laplace optimum is
    # found from any start near it; measured: variances equal to 3 digits, 2-5x fewer steps)
    if use_laplace:
        tol, max_iter = max(tol, _START_TOL), min(max_iter, _START_ITER)
    for it in range(1, max_iter + 1):  # noqa: B007
        lam = _precision(blocks, variances)
        theta, ok = _mode(x, xt, k, n, lam, theta, structure)
        var = _posterior_var(x, theta, n, lam, cells, blocks)
        new = [_update(theta[s], var[s], v) for s, v in zip(blocks[1:], variances)]
        change = max(abs(a - b) / max(b, _MIN_VAR) for a, b in zip(new, variances))
        variances = new
        if change < tol:
            converged = True
            break
    method = "pql"
    if use_laplace:
        from evalstats.sparse._laplace import laplace_variances

        found = laplace_variances(
            x,
            k,
            n,
            structure,
            variances,
            theta,
            lambda lam, t0: _mode(x, xt, k, n, lam, t0, structure),
            lambda v: _precision(blocks, v),
            _MIN_VAR,
            blocks,
        )
        variances, theta = found
        method = "laplace"
        if n_fac and _FACTOR_MEDIAN:
            from evalstats.sparse._laplace import factor_variances

            variances = factor_variances(
                structure, x, n, theta, variances, _precision(blocks, variances), blocks
            )
    mu_marginal = None
    if _EXACT_ITEMS and method == "laplace":
        from evalstats.sparse._items import item_variance

        lam = _precision(blocks, variances)
        theta, ok = _mode(x, xt, k, n, lam, theta, structure)
        var = _posterior_var(x, theta, n, lam, cells, blocks)
        b_mean, b_var = theta[blocks[-1]].copy(), var[blocks[-1]].copy()
        for f, blk in enumerate(blocks[2:-1]):
            b_mean += theta[blk][cells.levels[:, f]]
            b_var += var[blk][cells.levels[:, f]]
        found = item_variance(
            cells, float(theta[0]), (theta[blocks[1]], var[blocks[1]]), (b_mean, b_var)
        )
        if found is not None:
            variances[0], mu_marginal = found
    lam = _precision(blocks, variances)
    theta, ok = _mode(x, xt, k, n, lam, theta, structure)
    var = _posterior_var(x, theta, n, lam, cells, blocks)
    fb = blocks[2 : 2 + n_fac]
    return Fit(
        mu=float(theta[0]),
        a=theta[blocks[1]],
        a_var=var[blocks[1]],
        c=[theta[s] for s in fb],
        c_var=[var[s] for s in fb],
        u=theta[blocks[-1]],
        u_var=var[blocks[-1]],
        var_item=variances[0],
        var_factor=variances[1:-1],
        var_prompt=variances[-1],
        iterations=it,
        converged=converged and ok,
        variance_method=method,
        mu_marginal=mu_marginal,
    )
