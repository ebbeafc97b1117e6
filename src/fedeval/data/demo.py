"""Built-in demo data: a generated tabular task scored by gradient boosting.

The data are created deterministically (fixed seeds) and cached as Parquet, so
the demo is reproducible and the second run skips training.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEMO_VERSION", "default_cache_dir", "demo_frame"]

DEMO_VERSION = 1
N_TRAIN = 60_000
N_SCORED = 300_000
N_CLIENTS = 30_000


def default_cache_dir() -> Path:
    """``$FEDEVAL_CACHE`` or ``~/.cache/fedeval``."""
    env = os.environ.get("FEDEVAL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "fedeval"


def demo_frame(cache_dir: str | Path | None = None, *, refresh: bool = False) -> pd.DataFrame:
    """Scores, labels and client ids of the demo task.

    A binary task from ``sklearn.datasets.make_classification`` (20 features,
    some label noise, 35 % positives); a ``HistGradientBoostingClassifier`` is
    trained on 60,000 examples and scores 300,000 held-out examples, which are
    spread over 30,000 clients with skewed sizes (a Zipf-like draw).

    Returns
    -------
    pandas.DataFrame with columns ``score``, ``label``, ``client``.
    """
    import pandas as pd  # here, not at import: pandas costs ~0.25 s and fe.evaluate never needs it
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier

    path = Path(cache_dir or default_cache_dir()) / f"demo-v{DEMO_VERSION}.parquet"
    if path.is_file() and not refresh:
        return pd.read_parquet(path)
    x, y = make_classification(
        n_samples=N_TRAIN + N_SCORED,
        n_features=20,
        n_informative=8,
        n_redundant=4,
        flip_y=0.08,
        class_sep=0.8,
        weights=[0.65, 0.35],
        random_state=20231122,
    )
    model = HistGradientBoostingClassifier(max_iter=150, random_state=0)
    model.fit(x[:N_TRAIN], y[:N_TRAIN])
    scores = model.predict_proba(x[N_TRAIN:])[:, 1]
    rng = np.random.default_rng(7)
    weights = 1.0 / np.arange(1, N_CLIENTS + 1) ** 0.6
    clients = rng.choice(N_CLIENTS, size=N_SCORED, p=weights / weights.sum())
    df = pd.DataFrame({"score": scores, "label": y[N_TRAIN:].astype(np.int8), "client": clients})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(path)
    return df
