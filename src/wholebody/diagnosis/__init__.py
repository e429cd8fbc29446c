"""Why is a log inconsistent? Test known causes against the Newton-Euler residual.

Each cause corrects the log in one way (flip a sign, change axes, move the moments' point,
swap two contacts, shift the forces in time, rescale the mass, move the CoM, remove sensor
offsets or gains, drop stale forces) and recomputes the residual with the kinematics already
computed (no new Pinocchio pass). Continuous causes are fitted, with one standard error per
value. A cause is named when it explains at least :data:`EXPLAINED_THRESHOLD` of the residual;
two causes that explain it equally are both said ("A, or B"); when none does, the report says
that no known cause explains it and describes the residual as missing forces, event by event.
Every cause tested comes back with its score.

The verdicts, the causes and how to read them (``docs/diagnosis.md``):

.. include:: ../../../docs/diagnosis.md
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from .causes import CAUSES
from .core import LENGTH_SCALE, DiagnosisData, Finding, LinearFit, linear_fit

__all__ = [
    "Finding",
    "DiagnosisData",
    "diagnose",
    "EXPLAINED_THRESHOLD",
    "TIE_MARGIN",
    "MAX_SAMPLES",
    "LENGTH_SCALE",
    "LinearFit",
    "linear_fit",
]

Array = NDArray[np.float64]
#: A correction must remove this share of the residual score to be named a cause.
EXPLAINED_THRESHOLD = 0.8
#: Causes whose explained shares differ by less than this are a tie (said, not decided).
TIE_MARGIN = 0.02
#: Samples the diagnosis keeps (evenly spread over the valid ones).
MAX_SAMPLES = 4000


def diagnose(data: DiagnosisData) -> list[Finding]:
    """Rank the known causes of the residual in ``data``; the first finding is the verdict.

    Returns an empty list when no sample is over tolerance. Otherwise every cause tested,
    best first. The first is the named cause (with ties in ``alternatives``), or an
    ``"unexplained"`` finding when the best explains less than :data:`EXPLAINED_THRESHOLD`.
    """
    if not data.over.any() or data.base_score <= 0:
        return []
    findings: list[Finding] = []
    with np.errstate(all="ignore"):
        for cause in CAUSES:
            findings.extend(cause(data))
    # Best first; among equals (within TIE_MARGIN), the one leaving fewer cone violations, then
    # the simpler cause, then list order.
    order = {id(f): i for i, f in enumerate(findings)}
    findings.sort(
        key=lambda f: (
            -round(f.explained / TIE_MARGIN),
            round(f.cone_violations, 2),
            f.n_parameters,
            order[id(f)],
        )
    )
    # Missing forces (a size per sample) describe any residual: named only when no fitted
    # cause explains it.
    fitted = [f for f in findings if f.cause != "missing_force"]
    missing = next((f for f in findings if f.cause == "missing_force"), None)
    best = fitted[0] if fitted else missing
    if best is None:
        return []
    if (
        best.explained < EXPLAINED_THRESHOLD
        and missing is not None
        and missing.explained >= EXPLAINED_THRESHOLD
    ):
        best = missing
    if best.cause != "missing_force":
        ties = [
            f
            for f in fitted[1:]
            if best.explained - f.explained < TIE_MARGIN and f.cause != best.cause
        ]
        if ties:
            best = dataclasses.replace(best, alternatives=[f.message for f in ties[:3]])
    findings = [best] + [f for f in findings if f.message != best.message]
    if best.explained < EXPLAINED_THRESHOLD:
        described = f"; read as missing forces: {missing.message}" if missing is not None else ""
        findings.insert(
            0,
            Finding(
                "unexplained",
                best.explained,
                "no known cause explains this residual (the best, "
                f"{best.cause.replace('_', ' ')}, explains "
                f"{100 * best.explained:.0f} %){described}",
                {"best_cause": best.cause},
            ),
        )
    return findings
