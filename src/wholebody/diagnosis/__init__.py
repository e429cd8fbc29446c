"""Why is a log inconsistent? Test known causes against the Newton-Euler residual.

Each cause corrects the log in one way (flip a sign, change axes, move the moments' point,
swap two contacts, shift the forces in time, rescale the mass, move the CoM, remove sensor
offsets or gains, turn a sensor's frame, tilt gravity, add a payload to a link, put two joint
columns back, pair the forces with the state they belong to, drop stale forces) and
recomputes the residual with the same formula as the check; a fall is read from the motion
of the loaded contacts. Continuous causes are fitted, with one standard error per value, and
refitted on held-out windows. One ranking (:class:`Ranking`, :mod:`.ranking`) orders them:
a cause is named when it is the best by the evidence criterion and explains at least
:data:`EXPLAINED_THRESHOLD` of the residual; causes the log cannot tell apart are said
together ("A or B, indistinguishable in this log because ..."); when none explains it, the
report says so, with the best attempt, and describes the residual as missing forces, event by
event. Every cause tested comes back with its score.

The verdicts, the causes and how to read them (``docs/diagnosis.md``):

.. include:: ../../../docs/diagnosis.md
"""

from __future__ import annotations

import numpy as np

from .core import LENGTH_SCALE, DiagnosisData, Finding, LinearFit, linear_fit
from .ranking import (
    DESCRIPTIVE_CAUSES,
    EXPLAINED_THRESHOLD,
    HELD_OUT_WINDOWS,
    MAX_MISSING_EVENTS,
    Family,
    RankedCause,
    Ranking,
    Tie,
)

__all__ = [
    "Finding",
    "DiagnosisData",
    "diagnose",
    "Ranking",
    "RankedCause",
    "Tie",
    "Family",
    "EXPLAINED_THRESHOLD",
    "HELD_OUT_WINDOWS",
    "MAX_SAMPLES",
    "MAX_MISSING_EVENTS",
    "DESCRIPTIVE_CAUSES",
    "LENGTH_SCALE",
    "LinearFit",
    "linear_fit",
]

#: Samples the diagnosis keeps (evenly spread over the valid ones).
MAX_SAMPLES = 4000


def diagnose(data: DiagnosisData) -> list[Finding]:
    """Rank the known causes of the residual in ``data``; the first finding is the verdict.

    Returns an empty list when no sample is over tolerance, no joint row is over its
    tolerance, no loaded contact is misplaced and no convention check failed.
    Otherwise every cause tested, in the order of the :class:`Ranking` (held-out windows,
    the evidence criterion; :mod:`wholebody.diagnosis.ranking`), which the first finding
    carries (``findings[0].ranking``): the named cause, its ties said ("A or B,
    indistinguishable in this log because ..."), its runner-up and the margin; or an
    ``"unexplained"`` finding and the best attempt when no cause explains
    :data:`EXPLAINED_THRESHOLD` of the residual on held-out windows. Failed convention checks
    (``data.conventions``) head, unless the named cause explains them all.
    """
    from .causes import (  # on the first diagnosis only
        CAUSES,
        KINEMATIC_CAUSES,
        PLACEMENT_CAUSES,
        REFITTED,
        TORQUE_CAUSES,
    )
    from .causes_torque import torque_shares
    from .ranking import held_out_shares, rank

    residual = bool(data.over.any()) and data.base_score > 0
    torque = data.joints is not None and bool(data.joints.over.any())
    placed = data.placement is not None and bool(data.placement.failing)
    if not (residual or torque or placed or data.conventions):
        return []
    causes = list(CAUSES if residual else KINEMATIC_CAUSES)
    causes += (TORQUE_CAUSES if torque else ()) + (PLACEMENT_CAUSES if placed else ())
    produced = []
    with np.errstate(all="ignore"):
        for cause in causes:
            produced.append((cause, cause(data)))
    findings = held_out_shares(data, produced, REFITTED)
    if torque:  # the wrench causes correct the joint rows too
        findings = torque_shares(data, findings)
    families = {"wrench": Family("wrench", data.n_independent, data.floor)}
    families.update(data.cache.get("families", {}))
    return rank(data, findings, families)
