"""Checks of logs: are the contact wrenches consistent with the motion and friction?

:func:`check_trajectory` (a :class:`~wholebody.trajectory.Trajectory` in memory) and
:func:`check_log` (a file, streamed) give a :class:`Report`, with the options of
:class:`CheckOptions`; :func:`check_many` checks many logs (on processes or a Dask
cluster). The parts: :mod:`~wholebody.check.options` (how a log is checked),
:mod:`~wholebody.check.analysis` (the checks of one log), :mod:`~wholebody.check.sources`
(where the samples come from), :mod:`~wholebody.check.engine` (the run over chunks: read,
evaluate, merge; what the diagnosis keeps), :mod:`~wholebody.check.evidence` (share
checked, bounds, bias, held streams, cone findings), :mod:`~wholebody.check.report` (the
verdict) and :mod:`~wholebody.check.report_text` (its summary, text and CSV),
:mod:`~wholebody.check.plots` (figures), :mod:`~wholebody.check.many`.
"""

from __future__ import annotations

from .analysis import check_log, check_trajectory, estimate_trajectory
from .many import check_many
from .options import (
    DEFAULT_CONE_TOLERANCE,
    DEFAULT_FORCE_TOLERANCE,
    DEFAULT_MOMENT_TOLERANCE,
    TOLERANCE_PRESETS,
    CheckOptions,
    validate_tolerances,
)
from .report import Report

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
