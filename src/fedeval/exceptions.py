"""fedeval's own warning classes, so a user can filter them apart from everyone else's.

Every warning fedeval raises is a :class:`FedevalWarning` (a ``UserWarning``):
``warnings.simplefilter("ignore", fe.FedevalWarning)`` silences fedeval and
nothing else, and each subclass names one kind of finding.
"""

from __future__ import annotations

import sys
import warnings

__all__ = [
    "FedevalWarning",
    "PublicFactWarning",
    "SeededRandomnessWarning",
    "SmallDataWarning",
    "warn_at_caller",
]


class FedevalWarning(UserWarning):
    """Base class of every warning fedeval raises."""


class SeededRandomnessWarning(FedevalWarning):
    """A differentially private release drew its noise from a seed the caller chose.

    Reproducible simulation needs that; a deployment must not: anyone who knows
    the seed can regenerate the noise and subtract it, so the release then has
    no privacy against them. The release's receipt says so too.
    """


class SmallDataWarning(FedevalWarning):
    """A release is imprecise against its privacy noise (few examples, small ε)."""


class PublicFactWarning(FedevalWarning):
    """A quantity that is not public under the privacy model was needed and handled privately."""


def warn_at_caller(message: str, category: type[FedevalWarning]) -> None:
    """Warn at the first frame outside fedeval: the user's line that called fedeval.

    A fixed ``stacklevel`` points into fedeval when the same warning is reached
    through different entry points (``fe.evaluate``, a Context, a comparison),
    and a warning shown at fedeval's own line says nothing to the user (and
    Python's default filter then shows it once per fedeval line, not once per
    call site).
    """
    frame = sys._getframe(1)
    level = 2
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        "fedeval."
    ):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
