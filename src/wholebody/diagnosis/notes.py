"""Notes beside a consistent verdict: a residual within tolerance that one parameter removes
almost entirely is not noise but a finding (a simulator's contact forces read one step before
its state: 7.7e-3 N of residual that a one-sample shift brings to 1e-11 N).

Held readings (a stream that ended, held by the resampler) are noted there too, their
samples listed with the reason. The verdict is not changed; the notes are said beside it
(``Report.notes``, the JSON's ``notes``, the summary's ``note`` lines).
"""

from __future__ import annotations

from typing import Any

from .causes_artefacts import held_stream_notes
from .causes_timing import lag_notes
from .core import DiagnosisData, Finding

__all__ = ["consistent_log_notes", "limit_notes", "NOTES"]

#: The one-parameter corrections tried on a log within tolerance.
NOTES = (lag_notes, held_stream_notes)


def consistent_log_notes(d: DiagnosisData) -> list[Finding]:
    """Every note on a log within tolerance (``d`` built over its valid samples, none over
    tolerance), best first."""
    out: list[Finding] = []
    for note in NOTES:
        out.extend(note(d))
    return sorted(out, key=lambda f: -f.explained)


def limit_notes(conventions: Any) -> list[Finding]:
    """A note for samples beyond the URDF's joint limits that the convention check passed
    (not degrees): ``parameters["flagged"]`` sample -> joint and value."""
    if conventions is None:
        return []
    for check in conventions.all_checks:
        if check.name == "joint_positions_within_limits" and check.passed:
            flagged = check.evidence.get("flagged")
            if flagged:
                return [
                    Finding(
                        "joint_limits",
                        0.0,
                        check.message,
                        {"flagged": flagged, "joints": check.evidence.get("joints", {})},
                    )
                ]
    return []
