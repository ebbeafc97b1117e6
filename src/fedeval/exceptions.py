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
    "certainly_ignored",
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


def certainly_ignored(category: type[Warning]) -> bool:
    """True when the warnings filters ignore ``category`` wherever and however it is raised.

    Lets a check whose only output is a warning skip its work when nobody
    will see the warning (the tiny releases of a privacy audit, a simulation
    that silences fedeval): the first filter that matches the category
    decides, as in :func:`warnings.warn`, but only a filter that matches
    every message, module and line (``warnings.simplefilter("ignore", ...)``
    and ``-W ignore``) counts; any other filter for the category (a message
    or module pattern, "error", "always", ...) answers False, and the check
    runs and warns as it always did. Also False under context-aware warnings
    (Python ≥ 3.14's ``sys.flags.context_aware_warnings``), where
    ``warnings.filters`` need not be the filters in force.
    """
    if getattr(sys.flags, "context_aware_warnings", False):
        return False
    for action, message, kind, module, lineno in warnings.filters:
        if not issubclass(category, kind):
            continue
        return action == "ignore" and message is None and module is None and not lineno
    return False  # no filter: Python's default action shows a UserWarning
