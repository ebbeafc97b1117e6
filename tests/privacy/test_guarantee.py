"""A differential-privacy guarantee and its one encoding of "no DP" (privacy/guarantee.py)."""

from __future__ import annotations

import json
import math

from fedeval.privacy.guarantee import Guarantee


def test_no_dp_has_one_encoding() -> None:
    g = Guarantee.none("secure aggregation only", public=("the score domain",))
    assert g.epsilon == math.inf and g.delta == 0.0 and g.unit == "none"
    assert not g.is_private
    assert g.relation == "none (no differential privacy)"
    assert g.details == "secure aggregation only"
    assert str(g) == "no differential privacy (exact sums)"
    data = json.loads(json.dumps(g.as_dict(), allow_nan=False))
    assert data["epsilon"] is None and data["public_inputs"] == ["the score domain"]


def test_the_neighbouring_relation_is_stated_in_words() -> None:
    add = Guarantee(1.0, 0.0, "example", "s")
    rep = Guarantee(2.0, 1e-6, "client", "s", "replace")
    assert add.relation == "add or remove one example"
    assert rep.relation == "replace one client's data"
    assert add.details == "(ε=1)-DP, neighbours add or remove one example: s"
    assert rep.details == "(ε=2, δ=1e-06)-DP, neighbours replace one client's data: s"
    # Issue 29: the one-line form is str(); the paragraph is .details.
    assert str(add) == "(ε=1, δ=0)-DP per example (add/remove)"
    assert str(rep) == "(ε=2, δ=1e-06)-DP per client (replace)"
    assert rep.as_dict()["neighbouring"] == "replace one client's data"
