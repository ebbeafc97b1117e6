"""fedeval's own warning classes, so a user can filter them apart from everyone else's.

Every warning fedeval raises is a :class:`FedevalWarning` (a ``UserWarning``):
``warnings.simplefilter("ignore", fe.FedevalWarning)`` silences fedeval and
nothing else, and each subclass names one kind of finding.
"""

from __future__ import annotations

__all__ = [
    "FedevalWarning",
    "PublicFactWarning",
    "SeededRandomnessWarning",
    "SmallDataWarning",
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
