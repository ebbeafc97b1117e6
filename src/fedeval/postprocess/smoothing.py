"""Monotone smoothing of a private ECDF (Barczewski et al. 2025, §3.2, eq. 3).

Post-processing. The smoothed function is computed from the released noisy
counts only, so it is exactly as private as the release it starts from and
charges no budget.

Problem (eq. 3)
---------------
For a chosen set B of grid points, find corrections ν to the tree noise
variables (only the nodes on the root paths of B matter) minimising
Σ |ν_{j,l}|^p such that the corrected values

    F́(τ_i) = F̂(τ_i) + (1/n) Σ_l ν_{⌈i/2^l⌉, l},   i ∈ B,

are non-decreasing over B, with F́(min B) ≥ 0 and F́(max B) ≤ 1. p = 1 is a
linear program (solved by HiGHS through :func:`scipy.optimize.linprog`), p = 2
a quadratic program (solved by Clarabel's interior-point method). We solve in
count units (ν scaled by n), which has the same minimiser and better scaling.

If the input already satisfies the constraints, ν = 0 is the unique optimum
(the objective is 0 only at ν = 0), and the input is returned unchanged.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §3.2, eq. (3).
.. [2] Q. Huangfu and J. A. J. Hall, "Parallelizing the dual revised simplex
   method", Math. Prog. Comp. 10 (2018) (HiGHS).
.. [3] P. J. Goulart and Y. Chen, "Clarabel: an interior-point solver for conic
   programs with quadratic objectives", arXiv:2405.12762 (2024).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.sketches.prefix_tree import DecodedECDF
from fedeval.sketches.tree import Tree, binary_height

if TYPE_CHECKING:  # scipy.sparse (~0.1 s) is imported where a problem is built or solved
    from scipy import sparse

__all__ = ["SmoothingProblem", "Solver", "smooth_ecdf", "smoothing_problem"]

Solver = Literal["highs", "clarabel"]

#: A decoded ECDF, or the ``ecdf`` layer's :class:`fedeval.ecdf.PrivateECDF`: smoothing
#: returns the type it is given.
ECDFT = TypeVar("ECDFT", bound=DecodedECDF)


@dataclass(frozen=True)
class SmoothingProblem:
    """Eq. (3) in count units: minimise Σ|ν|^p subject to ``G ν ≥ h``.

    Attributes
    ----------
    paths : scipy.sparse.csr_array, shape (B, V)
        Path matrix of the B points over the V tree nodes they touch.
    constraints : scipy.sparse.csr_array, shape (B + 1, V)
        G: B - 1 monotonicity rows, then the lower and the upper bound rows.
    bounds : ndarray, shape (B + 1,)
        h.
    counts : ndarray, shape (B,)
        The released counts n·F̂ at the points of B.
    """

    paths: sparse.csr_array
    constraints: sparse.csr_array
    bounds: NDArray[np.float64]
    counts: NDArray[np.float64]

    @property
    def n_variables(self) -> int:
        return int(self.paths.shape[1])

    def smoothed_counts(self, nu: NDArray[np.float64]) -> NDArray[np.float64]:
        """n·F́ = n·F̂ + A ν."""
        return np.asarray(self.counts + self.paths @ nu, dtype=np.float64)


def smoothing_problem(
    ecdf: DecodedECDF, points: ArrayLike | None = None
) -> tuple[SmoothingProblem, NDArray[np.int64]]:
    """Build eq. (3) for ``ecdf`` restricted to ``points`` (positions in ``ecdf.grid``).

    Returns
    -------
    problem : SmoothingProblem
    positions : ndarray of int64
        The sorted, validated positions B.
    """
    from scipy import sparse

    n_here = ecdf.grid.size
    if points is None:
        pos = np.arange(n_here, dtype=np.int64)
    else:
        raw = np.asarray(points)
        if raw.dtype.kind not in "iu":
            raise TypeError(f"points must be integer positions in the grid, got dtype {raw.dtype}")
        pos = np.unique(raw.astype(np.int64))
        if pos.size < 1 or pos[0] < 0 or pos[-1] >= n_here:
            raise ValueError(f"points must be non-empty positions in [0, {n_here - 1}]")
    tree = Tree(2, binary_height(ecdf.n_tree_points), n_points=ecdf.n_tree_points)
    full = tree.path_matrix(ecdf.indices[pos])
    used = np.unique(full.indices)
    paths = sparse.csr_array(full[:, used])
    b = pos.size
    diff = sparse.diags_array(
        [-np.ones(b - 1), np.ones(b - 1)], offsets=[0, 1], shape=(b - 1, b), format="csr"
    )
    first = sparse.csr_array(([1.0], ([0], [0])), shape=(1, b))
    last = sparse.csr_array(([-1.0], ([0], [b - 1])), shape=(1, b))
    g = sparse.csr_array(sparse.vstack([diff, first, last]) @ paths)
    c = ecdf.counts[pos]
    h = np.concatenate([c[:-1] - c[1:], [-c[0]], [c[-1] - ecdf.total]])
    return SmoothingProblem(paths, g, h, c), pos


def _solve_highs_l1(prob: SmoothingProblem, method: str = "highs") -> NDArray[np.float64]:
    from scipy import sparse

    v = prob.n_variables
    g = prob.constraints
    # ν = ν⁺ - ν⁻ with ν± ≥ 0; G ν ≥ h  ⇔  -G ν⁺ + G ν⁻ ≤ -h.
    a_ub = sparse.hstack([-g, g], format="csr")
    from scipy.optimize import linprog  # on first use: scipy.optimize costs ~0.15 s

    res = linprog(np.ones(2 * v), A_ub=a_ub, b_ub=-prob.bounds, bounds=(0, None), method=method)
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the L1 smoothing LP: {res.message}")
    x = np.asarray(res.x, dtype=np.float64)
    return x[:v] - x[v:]


def _solve_clarabel(prob: SmoothingProblem, norm: Literal[1, 2]) -> NDArray[np.float64]:
    import clarabel
    from scipy import sparse

    v = prob.n_variables
    g = sparse.csc_matrix(prob.constraints)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    if norm == 2:
        p = sparse.identity(v, format="csc")
        q = np.zeros(v)
        a = -g
        b = -prob.bounds
        cones = [clarabel.NonnegativeConeT(g.shape[0])]
    else:
        # Epigraph: minimise Σ t with t ≥ ν and t ≥ -ν; variables [ν, t].
        eye = sparse.identity(v, format="csc")
        zeros = sparse.csc_matrix((g.shape[0], v))
        p = sparse.csc_matrix((2 * v, 2 * v))
        q = np.concatenate([np.zeros(v), np.ones(v)])
        a = sparse.vstack(
            [sparse.hstack([-g, zeros]), sparse.hstack([eye, -eye]), sparse.hstack([-eye, -eye])],
            format="csc",
        )
        b = np.concatenate([-prob.bounds, np.zeros(2 * v)])
        cones = [clarabel.NonnegativeConeT(g.shape[0] + 2 * v)]
    solver = clarabel.DefaultSolver(sparse.triu(p, format="csc"), q, a, b, cones, settings)
    sol = solver.solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"Clarabel failed on the L{norm} smoothing problem: {sol.status}")
    return np.asarray(sol.x, dtype=np.float64)[:v]


def smooth_ecdf(
    ecdf: ECDFT,
    *,
    norm: Literal[1, 2] = 2,
    points: ArrayLike | None = None,
    solver: Solver | None = None,
) -> ECDFT:
    """Non-decreasing, [0, 1]-valued ECDF closest to the release in tree-noise space (eq. 3).

    Post-processing: uses only the released counts, so the result keeps the
    input's guarantee and costs no privacy budget.

    Parameters
    ----------
    ecdf : DecodedECDF or PrivateECDF
        A release (or an earlier smoothing of one).
    norm : {1, 2}
        p in eq. (3): 1 (LP; the Laplace log-likelihood) or 2 (QP).
    points : array_like of int, optional
        Positions in ``ecdf.grid`` forming the set B (default: all).
    solver : {"highs", "clarabel"}, optional
        Default: "highs" for p = 1, "clarabel" for p = 2 (HiGHS in scipy has
        no QP interface).

    Returns
    -------
    DecodedECDF or PrivateECDF
        Of the type of ``ecdf``, on the grid points of B, with ``post_processing`` extended by the
        smoothing step.

    Raises
    ------
    ValueError
        Bad ``norm``, ``points`` or ``solver``.
    RuntimeError
        If the solver reports failure.

    Notes
    -----
    Privacy: post-processing of an ε-DP release is ε-DP; no budget is charged.
    The solver's answer is finally made exactly feasible (running maximum,
    then clipping to [0, n]), which moves it by at most the solver tolerance.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §3.2, eq. (3).
    """
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 or 2, got {norm!r}")
    chosen: Solver = solver if solver is not None else ("highs" if norm == 1 else "clarabel")
    if chosen not in ("highs", "clarabel"):
        raise ValueError(f"solver must be 'highs' or 'clarabel', got {solver!r}")
    if chosen == "highs" and norm == 2:
        raise ValueError(
            "solver 'highs' (scipy.optimize.linprog) solves the L1 LP only; use 'clarabel'"
        )
    prob, pos = smoothing_problem(ecdf, points)
    label = f"monotone L{norm} smoothing (eq. 3, post-processing)"
    if np.all(prob.bounds <= 0):
        # ν = 0 is feasible, and it is the unique minimiser of Σ|ν|^p.
        counts = prob.counts.copy()
    else:
        nu = _solve_highs_l1(prob) if chosen == "highs" else _solve_clarabel(prob, norm)
        counts = np.clip(np.maximum.accumulate(prob.smoothed_counts(nu)), 0.0, ecdf.total)
    return replace(
        ecdf,
        grid=ecdf.grid[pos],
        counts=counts,
        indices=ecdf.indices[pos],
        post_processing=(*ecdf.post_processing, f"{label} by {chosen}"),
    )
