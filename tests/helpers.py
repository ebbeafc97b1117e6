"""Small helpers shared by the tests (on ``sys.path`` through ``pythonpath`` in pyproject)."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import release
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec, LevelBudget, layout_of


def release_hierarchy(
    fed: Federation,
    privacy: Any,
    *,
    height: int,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: str = "fast",
    rng: Any = None,
    ledger: BudgetLedger | None = None,
) -> HierarchicalHistogram:
    """The raw (not yet consistent) per-class hierarchy of ``fed`` released under ``privacy``."""
    if fed.kind != "binary":
        raise ValueError("hierarchical score histograms need a binary task (1-D scores)")
    sketch = HierarchySketch(HierarchySpec(height, branching, fed.score_range, 2))
    tree: HierarchicalHistogram = release(
        fed,
        sketch,
        privacy,
        layout=layout_of(level_budget),
        path=path,  # type: ignore[arg-type]
        rng=rng,
        ledger=ledger,
    ).decode()
    return tree


# (noise, rank sensitivity, allocation): the combinations fedeval.vertical supports. The old
# mechanism strings map to LabelDP(ε, noise=...) with rank_sensitivity (see the brief).
VERTICAL_COMBOS = [
    ("rr", "local", "fixed"),
    ("laplace", "global", "fixed"),
    ("laplace", "local", "fixed"),
    ("laplace", "local", "orthogonal"),
    ("laplace", "local", "adaptive"),
    ("gaussian", "global", "fixed"),
    ("gaussian", "local", "fixed"),
    ("gaussian", "local", "orthogonal"),
    ("gaussian", "local", "adaptive"),
]


def vertical_data(
    seed: int, m: int = 400, n_clients: int = 17, decimals: int = 1
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Vertical-AUC test data: scores rounded to create many ties, labels with signal,
    arbitrary client ids."""
    rng = np.random.default_rng(seed)
    y = (rng.random(m) < 0.3).astype(np.int64)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=m) + 1.2 * y, decimals)
    ids = rng.choice(np.array([-7, 3, 11, 10**9, 42, *range(100, 100 + n_clients)]), m)
    return s, y, ids


# ------------------------------------------------------------ small data sets
def toy_arrays(
    n: int = 50, n_clients: int = 7, seed: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Uniform scores, fair-coin labels and random client ids."""
    gen = np.random.default_rng(seed)
    return gen.random(n), gen.integers(0, 2, n), gen.integers(0, n_clients, n)


def client_sets(fed: Federation) -> dict[object, list[tuple[float, int]]]:
    """Each client's examples, as sorted (score, label) lists keyed by client id."""
    return {
        view.client_id: sorted(zip(view.scores.tolist(), view.labels.tolist(), strict=True))
        for view in fed.clients()
    }


def expected_client_sets(
    scores: NDArray[np.float64], labels: NDArray[np.int64], clients: NDArray[Any]
) -> dict[object, list[tuple[float, int]]]:
    """What :func:`client_sets` must give for these arrays."""
    out: dict[object, list[tuple[float, int]]] = {}
    for s, y, c in zip(scores.tolist(), labels.tolist(), clients.tolist(), strict=True):
        out.setdefault(c, []).append((s, y))
    return {c: sorted(v) for c, v in out.items()}


def normal_scores(n: int = 4000, seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Scores N(0.4 + 0.2y, 0.15) clipped to [0, 1], fair-coin labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1), y


def beta_scores(n: int = 500, seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Scores Beta(4, 2) for positives and Beta(2, 4) for negatives, fair-coin labels."""
    gen = np.random.default_rng(seed)
    labels = gen.integers(0, 2, n)
    return np.where(labels == 1, gen.beta(4, 2, n), gen.beta(2, 4, n)), labels


@cache
def digits_task() -> tuple[
    Federation, NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]
]:
    """Issue 14's task: digits, LogisticRegression(C=10) logits × 3, 100 clients, Dirichlet 0.5.

    Returns the calibration federation, its logits and labels, and held-out logits and labels.
    """
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from fedeval.data.partition import dirichlet

    x, y = load_digits(return_X_y=True)
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, train_size=0.5, random_state=0, stratify=y)
    x_cal, x_te, y_cal, y_te = train_test_split(
        x_rest, y_rest, train_size=0.5, random_state=0, stratify=y_rest
    )
    model = LogisticRegression(C=10, max_iter=5000).fit(x_tr, y_tr)
    z_cal = 3 * model.decision_function(x_cal)
    z_te = 3 * model.decision_function(x_te)
    fed = dirichlet(
        Federation.from_arrays(z_cal, y_cal, kind="logits"), n_clients=100, beta=0.5, rng=0
    )
    return fed, z_cal, y_cal, z_te, y_te


def softmax_rows(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax (the uncalibrated probabilities of logits)."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


@cache
def generated_logits_task() -> tuple[Federation, NDArray[np.float64], NDArray[np.int64]]:
    """Six Gaussian classes; the model's logits are 3 × the Bayes logits plus noise
    (overconfident); 4,000 calibration examples over 100 Dirichlet(0.5) clients.

    Returns the calibration federation and held-out logits and labels (issue 27).
    """
    from fedeval.data.partition import dirichlet

    rng = np.random.default_rng(0)
    c, n = 6, 4000
    means = rng.normal(size=(c, 8)) * 1.2
    y = rng.integers(0, c, 2 * n)
    x = means[y] + rng.normal(size=(2 * n, 8))
    bayes = x @ means.T - 0.5 * np.sum(means**2, axis=1)
    z = 3.0 * bayes + rng.normal(size=bayes.shape)
    pooled = Federation.from_arrays(z[:n], y[:n], kind="logits")
    return dirichlet(pooled, n_clients=100, beta=0.5, rng=0), z[n:], y[n:]
