"""How a log is checked: :class:`CheckOptions`, the tolerance presets and their defaults."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..parallel import auto_workers
from .evidence import MAX_WAIVED_SHARE, MIN_CHECKED_SHARE

__all__ = [
    "CheckOptions",
    "given_options",
    "validate_tolerances",
    "TOLERANCE_PRESETS",
    "DEFAULT_FORCE_TOLERANCE",
    "DEFAULT_MOMENT_TOLERANCE",
    "DEFAULT_CONE_TOLERANCE",
]


#: A sample is consistent when its residual force is below this share of the weight...
DEFAULT_FORCE_TOLERANCE = 0.01


#: ...and its residual moment over the weight below this length [m] (1 cm of CoP error).
DEFAULT_MOMENT_TOLERANCE = 0.01


#: Cone margins below -this share of the weight count as violations. Simulators place contact
#: points a fraction of a millimetre outside a tilted sole (penetration): 1e-4 m g is 0.06 N.
DEFAULT_CONE_TOLERANCE = 1e-4


#: Tolerance presets: simulation logs balance to numerical precision; measured data carries
#: sensor noise, calibration and model errors of a few per cent.
TOLERANCE_PRESETS: dict[str, dict[str, float]] = {
    "simulation": {
        "force_tolerance": 0.01,
        "moment_tolerance": 0.01,
        "cone_tolerance": 1e-4,
        "cone_tolerance_relative": 0.0,
    },
    "measured": {
        "force_tolerance": 0.05,
        "moment_tolerance": 0.03,
        "cone_tolerance": 2e-3,
        "cone_tolerance_relative": 0.05,
    },
}


def validate_tolerances(**tolerances: float) -> None:
    """Raise :class:`InvalidArgumentError` unless every tolerance is a finite number >= 0."""
    for name, value in tolerances.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise InvalidArgumentError(
                f"{name} must be a number, got {type(value).__name__} {value!r}"
            )
        if not (math.isfinite(value) and value >= 0):
            raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}")


def _is_count(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, np.integer)) and bool(x >= 1)


@dataclass(frozen=True)
class CheckOptions:
    """How a log is checked: the options of :func:`~wholebody.check.check_trajectory`,
    :func:`~wholebody.check.check_log`, :func:`~wholebody.check.check_many` and
    ``wholebody check``, documented once.

    Every field has a default; a tolerance left None takes the preset's value. The options
    are checked when made.

    Parameters
    ----------
    preset : {"simulation", "measured"}
        Default tolerances (:data:`TOLERANCE_PRESETS`); the arguments below override them.
    force_tolerance : float, optional
        Residual force tolerance, relative to the weight (simulation: 0.01).
    moment_tolerance : float, optional
        Residual moment tolerance over the weight [m] (simulation: 0.01, 1 cm of CoP).
    cone_tolerance : float, optional
        Cone margin below which a contact counts as violating, relative to the weight.
    cone_tolerance_relative : float, optional
        Further cone slack relative to each contact's own normal force.
    t_start, t_stop : float, optional
        Check only the samples with ``t_start <= time <= t_stop`` [s].
    ground : Ground or float, optional
        The ground for the convention checks (a height [m] or a
        :class:`wholebody.conventions.Ground`); by default loaded contacts must agree.
    conventions : bool
        Run :func:`wholebody.conventions.check_conventions` before dynamics (default), on
        each chunk of ``chunk_size`` samples: a check fails when it fails on some chunk (a log
        of at most ``chunk_size`` samples is one chunk). A failed check makes the log
        inconsistent and heads the diagnosis.
    savgol : (window, order), optional
        Smoothing of estimated accelerations (only when the log has none).
    diagnose_causes : bool
        Run :func:`wholebody.diagnosis.diagnose` when some samples are inconsistent.
    workers : int or "auto"
        Processes for the per-sample work (one Pinocchio pass each); results are identical
        to ``workers=1``. A chunk that fails flags its samples with the error. ``"auto"``:
        one process for a log shorter than :data:`wholebody.parallel.AUTO_MIN_SAMPLES` or
        of one chunk (workers would only cost time), else one per chunk up to the CPUs
        (:func:`wholebody.parallel.auto_workers`).
    chunk_size : int
        Samples per chunk: the work memory grows with it, not with the log. The convention
        checks and the noise of ``v`` (for the expected error of differentiated
        accelerations) are estimated per chunk.
    progress : bool
        A progress bar (tqdm) over the samples.
    min_checked_share : float
        Below this share of the samples checked (not flagged) the verdict is
        ``"inconclusive"`` (default 0.5).
    max_waived_share : float
        Beyond this share of the checked samples waived (over tolerance, within the expected
        error of differentiated accelerations) the verdict is ``"inconclusive"`` (default 0.1).

    Raises
    ------
    InvalidArgumentError
        An unknown preset, a tolerance that is not a finite number >= 0, ``workers`` or
        ``chunk_size`` not an integer >= 1, a share outside [0, 1].

    Examples
    --------
    >>> from wholebody.check import CheckOptions
    >>> options = CheckOptions(preset="measured", t_start=0.5, workers=2)
    >>> options.tolerances["force_tolerance"]  # the measured preset's, relative to m g
    0.05
    >>> options.replace(force_tolerance=0.02).tolerances["force_tolerance"]
    0.02
    >>> CheckOptions(workers=0)
    Traceback (most recent call last):
    ...
    wholebody.errors.InvalidArgumentError: workers must be an integer >= 1, got 0 (or 'auto')
    """

    preset: str = "simulation"
    force_tolerance: float | None = None
    moment_tolerance: float | None = None
    cone_tolerance: float | None = None
    cone_tolerance_relative: float | None = None
    t_start: float | None = None
    t_stop: float | None = None
    ground: Any = None
    conventions: bool = True
    savgol: tuple[int, int] | None = None
    diagnose_causes: bool = True
    workers: int | str = 1
    chunk_size: int = 50_000
    progress: bool = False
    min_checked_share: float = MIN_CHECKED_SHARE
    max_waived_share: float = MAX_WAIVED_SHARE

    def __post_init__(self) -> None:
        if self.preset not in TOLERANCE_PRESETS:
            raise InvalidArgumentError(
                f"preset must be one of {sorted(TOLERANCE_PRESETS)}, got {self.preset!r}"
            )
        validate_tolerances(**self._given_tolerances())
        if self.workers != "auto" and not _is_count(self.workers):
            raise InvalidArgumentError(
                f"workers must be an integer >= 1, got {self.workers!r} (or 'auto')"
            )
        if not _is_count(self.chunk_size):
            raise InvalidArgumentError(
                f"chunk_size must be an integer >= 1, got {self.chunk_size!r}"
            )
        for name in ("min_checked_share", "max_waived_share"):
            value = getattr(self, name)
            validate_tolerances(**{name: value})
            if value > 1:
                raise InvalidArgumentError(f"{name} must be a share between 0 and 1, got {value!r}")

    def _given_tolerances(self) -> dict[str, Any]:
        preset = TOLERANCE_PRESETS[self.preset]
        return {
            name: preset[name] if getattr(self, name) is None else getattr(self, name)
            for name in preset
        }

    @property
    def tolerances(self) -> dict[str, float]:
        """The four tolerances, the preset's where a field is None."""
        return {k: float(v) for k, v in self._given_tolerances().items()}

    def workers_for(self, n: int) -> int:
        """Processes for a log of ``n`` samples (``"auto"``: :func:`.auto_workers`)."""
        if self.workers == "auto":
            return auto_workers(n, int(self.chunk_size))
        return int(self.workers)

    def replace(self, **changes: Any) -> CheckOptions:
        """A copy with some fields changed (checked like a new one).

        Raises
        ------
        InvalidArgumentError
            A name that is not a field (the message lists the fields), or a bad value.
        """
        names = [f.name for f in fields(self)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise InvalidArgumentError(f"unknown check options {unknown}; the options: {names}")
        return replace(self, **changes)


def given_options(options: CheckOptions | None) -> CheckOptions:
    """``options``, or the defaults when None.

    Raises
    ------
    InvalidArgumentError
        ``options`` is not a :class:`CheckOptions` (a dict, say).
    """
    if options is None:
        return CheckOptions()
    if not isinstance(options, CheckOptions):
        raise InvalidArgumentError(f"options must be a CheckOptions, got {type(options).__name__}")
    return options
