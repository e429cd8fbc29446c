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

from .core import LENGTH_SCALE, DiagnosisData, Finding, LinearFit, linear_fit

__all__ = [
    "Finding",
    "DiagnosisData",
    "diagnose",
    "EXPLAINED_THRESHOLD",
    "TIE_MARGIN",
    "MAX_SAMPLES",
    "MAX_MISSING_EVENTS",
    "DESCRIPTIVE_CAUSES",
    "LENGTH_SCALE",
    "LinearFit",
    "linear_fit",
]

Array = NDArray[np.float64]
#: A correction must remove this share of the residual score to be named a cause.
EXPLAINED_THRESHOLD = 0.8
#: Unused since causes are ranked by the evidence criterion (a tie is now a criterion within
#: one parameter's price, ``log n``); kept so that code importing it still runs.
TIE_MARGIN = 0.02
#: A residual read as more missing-force events than this is not named as missing forces
#: (many events describe a residual that nothing fits; "unexplained" says so).
MAX_MISSING_EVENTS = 3
#: Causes whose wrench is free per sample (the residual itself, read as what is missing): named
#: only when no fitted cause explains the residual, in this order.
DESCRIPTIVE_CAUSES = ("missing_contact", "missing_force")
#: Samples the diagnosis keeps (evenly spread over the valid ones).
MAX_SAMPLES = 4000


def diagnose(data: DiagnosisData) -> list[Finding]:
    """Rank the known causes of the residual in ``data``; the first finding is the verdict.

    Returns an empty list when no sample is over tolerance. Otherwise every cause tested,
    best first by the evidence criterion (:meth:`DiagnosisData.criterion`: the residual it
    leaves, paid for by its free parameters). The first is the named cause (with ties in
    ``alternatives``, its runner-up and the margin), or an ``"unexplained"`` finding when
    the best explains less than :data:`EXPLAINED_THRESHOLD`.
    """
    if not data.over.any() or data.base_score <= 0:
        return []
    from .causes import CAUSES  # the causes on the first diagnosis, not with the check

    findings: list[Finding] = []
    with np.errstate(all="ignore"):
        for cause in CAUSES:
            findings.extend(cause(data))
    findings = [
        dataclasses.replace(
            f, criterion=data.criterion(f.explained, f.n_parameters, f.structural_evidence)
        )
        for f in findings
    ]
    # Best first by the criterion; among equals, the one leaving fewer cone violations, then
    # the simpler cause, then list order.
    order = {id(f): i for i, f in enumerate(findings)}
    findings.sort(
        key=lambda f: (
            round(f.criterion, 6),
            round(f.cone_violations, 2),
            f.n_parameters,
            order[id(f)],
        )
    )
    # Missing forces and missing contacts (a size per sample) describe any residual: named
    # only when no fitted cause explains it; missing forces only as a few separate events
    # (more is a description of a residual that nothing fits, not a cause).
    fitted = [f for f in findings if f.cause not in DESCRIPTIVE_CAUSES]
    missing = next((f for f in findings if f.cause == "missing_force"), None)
    described = [
        f
        for f in findings
        if f.cause in DESCRIPTIVE_CAUSES
        and f.explained >= EXPLAINED_THRESHOLD
        and len(f.parameters.get("events", [])) <= MAX_MISSING_EVENTS
    ]
    described.sort(key=lambda f: DESCRIPTIVE_CAUSES.index(f.cause))
    best = fitted[0] if fitted else missing
    if best is None:
        return []
    if best.explained < EXPLAINED_THRESHOLD and described:
        best = described[0]
    pool = fitted if best.cause not in DESCRIPTIVE_CAUSES else findings
    # The runner-up: the best-ranked other cause that explains something.
    runner = next((f for f in pool if f.cause != best.cause and f.explained > 0), None)
    if runner is not None:
        # A descriptive cause is not compared on the criterion (its freedom is per sample).
        margin = (
            float(runner.criterion - best.criterion)
            if best.cause not in DESCRIPTIVE_CAUSES
            else float("nan")
        )
        best = dataclasses.replace(best, runner_up=runner.cause, margin=margin)
    if best.cause not in DESCRIPTIVE_CAUSES:
        price = float(np.log(max(data.n_independent, 2.0)))  # one parameter's price
        ties = [
            f
            for f in fitted[1:]
            if f.criterion - best.criterion <= price + 1e-9 and f.cause != best.cause
        ]
        if ties:
            best = dataclasses.replace(
                best,
                alternatives=[f.message for f in ties[:3]],
                parameters={**best.parameters, "alternative_causes": [f.cause for f in ties[:3]]},
            )
    findings = [best] + [f for f in findings if f.message != best.message]
    if best.explained < EXPLAINED_THRESHOLD:
        as_missing = f"; read as missing forces: {missing.message}" if missing is not None else ""
        findings.insert(
            0,
            Finding(
                "unexplained",
                best.explained,
                "no known cause explains this residual (the best, "
                f"{best.cause.replace('_', ' ')}, explains "
                f"{100 * best.explained:.0f} %){as_missing}",
                {"best_cause": best.cause},
                runner_up=best.cause,
            ),
        )
    return findings
