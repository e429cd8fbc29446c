"""Checks of logs: are the contact wrenches consistent with the motion and friction?

:func:`check_trajectory` (a :class:`~wholebody.trajectory.Trajectory` in memory) and
:func:`check_log` (a file, streamed) give a :class:`Report`, with the options of
:class:`CheckOptions`; :func:`check_many` checks many logs (on processes or a Dask
cluster). The parts: :mod:`~wholebody.check.analysis` (the check of one log: the options,
where samples come from, the run over chunks with the per-sample pass, the residual, the
conventions, the expected errors, the diagnosis), :mod:`~wholebody.check.report` (the verdict,
the evidence behind it: share checked, bounds, bias, held streams, cone findings; and its
outputs), :mod:`~wholebody.check.plots` (figures), :mod:`~wholebody.check.many`.
The names are imported on first use, so importing a part does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .analysis import (
        DEFAULT_CONE_TOLERANCE,
        DEFAULT_FORCE_TOLERANCE,
        DEFAULT_MOMENT_TOLERANCE,
        TOLERANCE_PRESETS,
        CheckOptions,
        check_log,
        check_trajectory,
        estimate_trajectory,
        validate_tolerances,
    )
    from .many import check_many
    from .report import Report

# name -> module of this package, imported on first access (PEP 562).
_LAZY = {
    "CheckOptions": "analysis",
    "Report": "report",
    "check_trajectory": "analysis",
    "check_log": "analysis",
    "estimate_trajectory": "analysis",
    "validate_tolerances": "analysis",
    "TOLERANCE_PRESETS": "analysis",
    "DEFAULT_FORCE_TOLERANCE": "analysis",
    "DEFAULT_MOMENT_TOLERANCE": "analysis",
    "DEFAULT_CONE_TOLERANCE": "analysis",
    "check_many": "many",
}

__all__ = [
    "CheckOptions",
    "Report",
    "check_trajectory",
    "check_log",
    "estimate_trajectory",
    "validate_tolerances",
    "TOLERANCE_PRESETS",
    "DEFAULT_FORCE_TOLERANCE",
    "DEFAULT_MOMENT_TOLERANCE",
    "DEFAULT_CONE_TOLERANCE",
    "check_many",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
