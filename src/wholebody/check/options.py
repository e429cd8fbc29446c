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
    "ENGINE_FLOOR",
    "SENSOR_NOISE_KEYS",
    "Tolerances",
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


#: The residual tolerances of a simulator's log whose accelerations are the engine's own, by
#: the engine's number type, relative to the weight (force) and to the weight times 1 m
#: (moment). Measured engine floors (median residual, a G1 standing and squatting): float64
#: engines 6e-14 .. 2e-11 N (2e-16 .. 6e-14 m g), float32 engines 2e-5 .. 8e-5 N (7e-8 ..
#: 3e-7 m g); the float64 floor sits above the single samples where a contact solver's
#: tolerance shows (MuJoCo's walking log: 7e-6 N, 1e-8 m g, at one contact switch), the
#: float32 floor two orders above its medians, and millinewton readout mistakes (a forgotten
#: forward pass, a one-step lag, a wrong point) far above the float64 floor (6e-5 N on a
#: 65 kg humanoid).
ENGINE_FLOOR = {"float64": 1e-7, "float32": 2e-5}


#: Tolerance presets. ``physical``: 1 % of the weight and 1 cm of CoP, for sensor logs and for
#: simulator logs whose accelerations were differentiated (their precision is the
#: differentiation's). ``simulation``: the engine's floor for its number type
#: (:data:`ENGINE_FLOOR`) when the accelerations are the engine's, else ``physical``'s.
#: ``measured``: residual tolerances from the noise measured in the log
#: (:mod:`wholebody.check.noise`; None here), cones with sensor slack. Without a preset a log
#: whose metadata names its simulator (``"simulator"``, as wholebody's recorders write it) is
#: checked with ``simulation``, any other with ``physical``.
TOLERANCE_PRESETS: dict[str, dict[str, float | None]] = {
    "physical": {
        "force_tolerance": DEFAULT_FORCE_TOLERANCE,
        "moment_tolerance": DEFAULT_MOMENT_TOLERANCE,
        "cone_tolerance": DEFAULT_CONE_TOLERANCE,
        "cone_tolerance_relative": 0.0,
    },
    "simulation": {
        "force_tolerance": None,
        "moment_tolerance": None,
        "cone_tolerance": DEFAULT_CONE_TOLERANCE,
        "cone_tolerance_relative": 0.0,
    },
    "measured": {
        "force_tolerance": None,
        "moment_tolerance": None,
        "cone_tolerance": 2e-3,
        "cone_tolerance_relative": 0.05,
    },
}


@dataclass(frozen=True)
class Tolerances:
    """The tolerances a log is checked with, and why (:meth:`CheckOptions.for_log`).

    Attributes
    ----------
    preset : str
        The preset that applies (``"physical"``, ``"simulation"`` or ``"measured"``).
    values : dict of str to float
        ``force_tolerance``, ``moment_tolerance`` (relative to m g; m), ``cone_tolerance``,
        ``cone_tolerance_relative``. The measured preset's residual tolerances are NaN until
        the noise is measured (:meth:`with_noise`).
    basis : str
        What they rest on, in words.
    """

    preset: str
    values: dict[str, float]
    basis: str

    @property
    def from_noise(self) -> bool:
        """Whether the residual tolerances come from the measured noise."""
        return not math.isfinite(self.values["force_tolerance"]) or not math.isfinite(
            self.values["moment_tolerance"]
        )

    def with_noise(self, force: float, moment: float, basis: str) -> Tolerances:
        """The residual tolerances the noise gives (relative to m g; m), where none was
        given, and the basis said (the given ones still named)."""
        values = dict(self.values)
        for name, value in (("force_tolerance", force), ("moment_tolerance", moment)):
            if not math.isfinite(values[name]):
                values[name] = value
        given = self.basis.partition("; given: ")[2]
        return Tolerances(self.preset, values, basis + (f"; given: {given}" if given else ""))


#: The sensors' stated noise a profile may give (``[sensors]``): std per axis [N], [N m].
SENSOR_NOISE_KEYS = ("force_noise", "moment_noise")


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
    preset : {"physical", "simulation", "measured"}, optional
        Default tolerances (:data:`TOLERANCE_PRESETS`); the arguments below override them.
        None: ``simulation`` for a log whose metadata names its simulator, else ``physical``.
    force_tolerance : float, optional
        Residual force tolerance, relative to the weight (physical: 0.01).
    moment_tolerance : float, optional
        Residual moment tolerance over the weight [m] (physical: 0.01, 1 cm of CoP).
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
    sensor_noise : dict of str to float, optional
        The sensors' stated noise (std per axis): ``"force_noise"`` [N] and
        ``"moment_noise"`` [N m] per contact (a profile's ``[sensors]`` table). The
        measured preset takes them as a floor on the noise it measures
        (:mod:`wholebody.check.noise`).

    Raises
    ------
    InvalidArgumentError
        An unknown preset, a tolerance that is not a finite number >= 0, ``workers`` or
        ``chunk_size`` not an integer >= 1, a share outside [0, 1].

    Examples
    --------
    >>> from wholebody.check import CheckOptions
    >>> options = CheckOptions(preset="physical", t_start=0.5, workers=2)
    >>> options.for_log({}, estimated=False, float32=False).values["force_tolerance"]
    0.01
    >>> floor = CheckOptions().for_log({"simulator": "MuJoCo 3.3"}, estimated=False, float32=False)
    >>> floor.values["force_tolerance"], floor.preset  # the float64 engine floor, relative to m g
    (1e-07, 'simulation')
    >>> CheckOptions(workers=0)
    Traceback (most recent call last):
    ...
    wholebody.errors.InvalidArgumentError: workers must be an integer >= 1, got 0 (or 'auto')
    """

    preset: str | None = None
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
    sensor_noise: dict[str, float] | None = None

    def __post_init__(self) -> None:
        if self.preset is not None and self.preset not in TOLERANCE_PRESETS:
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
        if self.sensor_noise is not None:
            unknown = sorted(set(self.sensor_noise) - set(SENSOR_NOISE_KEYS))
            if unknown:
                raise InvalidArgumentError(
                    f"unknown sensor noise {unknown}; the keys: {list(SENSOR_NOISE_KEYS)}"
                )
            validate_tolerances(**self.sensor_noise)
        for name in ("min_checked_share", "max_waived_share"):
            value = getattr(self, name)
            validate_tolerances(**{name: value})
            if value > 1:
                raise InvalidArgumentError(f"{name} must be a share between 0 and 1, got {value!r}")

    def _given_tolerances(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in TOLERANCE_PRESETS["physical"]
            if getattr(self, name) is not None
        }

    def for_log(self, metadata: dict[str, Any], *, estimated: bool, float32: bool) -> Tolerances:
        """The tolerances for a log (:class:`Tolerances`): the given ones, else the preset's
        (:data:`TOLERANCE_PRESETS`), the preset chosen from the log's metadata when none
        is given.

        Parameters
        ----------
        metadata : dict
            The log's metadata: ``"simulator"`` names the engine, ``"dtype"`` its number
            type.
        estimated : bool
            Whether the accelerations were differentiated (not the engine's own).
        float32 : bool
            Whether the log's values are stored in single precision.
        """
        simulator = metadata.get("simulator")
        preset = self.preset or ("simulation" if simulator else "physical")
        values = {
            k: float("nan") if v is None else float(v) for k, v in TOLERANCE_PRESETS[preset].items()
        }
        if preset == "simulation":
            engine = f"a log of {simulator}" if simulator else "a simulator's log (preset)"
            if estimated:
                basis = (
                    f"{engine} with differentiated accelerations: the physical tolerances "
                    "(the engine's floor is below the differentiation's precision)"
                )
                values.update(
                    force_tolerance=DEFAULT_FORCE_TOLERANCE,
                    moment_tolerance=DEFAULT_MOMENT_TOLERANCE,
                )
            else:
                dtype = str(metadata.get("dtype", "float32" if float32 else "float64"))
                dtype = "float32" if dtype == "float32" or float32 else "float64"
                floor = ENGINE_FLOOR[dtype]
                values.update(force_tolerance=floor, moment_tolerance=floor)
                basis = f"the engine's floor: {engine} in {dtype}, its accelerations logged"
        elif preset == "physical":
            basis = "physical: 1 % of the weight, 1 cm of CoP" + (
                "" if self.preset else " (no simulator named in the log's metadata)"
            )
        else:
            basis = "measured: from the noise measured in the log"
        given = self._given_tolerances()
        if given:
            basis += "; given: " + ", ".join(f"{k} = {v:g}" for k, v in given.items())
        values.update({k: float(v) for k, v in given.items()})
        return Tolerances(preset, values, basis)

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
