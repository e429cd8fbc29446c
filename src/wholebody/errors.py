"""Exceptions and warnings raised by wholebody.

Every error the library raises on purpose derives from :class:`WholebodyError`, so
``except wholebody.WholebodyError`` catches them all. Where an error also fits a
built-in category (a missing file, a bad value, an unknown name) it derives from the
built-in class too, so generic handlers keep working.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from types import ModuleType

__all__ = [
    "WholebodyError",
    "ModelError",
    "ModelFileNotFoundError",
    "URDFParseError",
    "InvalidInertiaError",
    "InvalidJointError",
    "MissingDependencyError",
    "require",
    "MJCFParseError",
    "FrameNotFoundError",
    "JointNotFoundError",
    "RobotNotFoundError",
    "ContactNotFoundError",
    "StateError",
    "ContactError",
    "PointMismatchError",
    "InvalidArgumentError",
    "LogFormatError",
    "LogFileError",
    "OutputError",
    "ProfileError",
    "RecordingError",
    "ExtrapolationError",
    "OutsideInputError",
    "SizeLimitError",
    "SolverNotAvailableError",
    "SolverError",
    "ProjectionError",
    "ClusterError",
    "WholebodyWarning",
    "ModelWarning",
    "StateWarning",
]


class WholebodyError(Exception):
    """Base class of every error raised by wholebody."""


# --- models -------------------------------------------------------------------------------


class ModelError(WholebodyError, ValueError):
    """A robot model that cannot be used as it is (names the link or joint at fault)."""


class ModelFileNotFoundError(ModelError, FileNotFoundError):
    """The robot description file does not exist."""


class URDFParseError(ModelError):
    """The URDF does not parse; the message carries the parser's reason and position."""


class InvalidInertiaError(ModelError):
    """A link's mass or inertia is physically impossible or makes the mass matrix singular."""


class InvalidJointError(ModelError):
    """A joint is malformed (for example a zero-length axis)."""


class MissingDependencyError(WholebodyError, ImportError):
    """An optional dependency is needed; the message gives the ``pip install`` line."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import the optional dependency ``module``, or raise :class:`MissingDependencyError`
    naming the extra that installs it (``wholebody[extra]``: ``pip install -e '.[extra]'`` in
    a clone of wholebody); ``purpose`` says what needs it, in the plural ("HDF5 logs")."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{purpose} need {module.split('.')[0]}: the extra wholebody[{extra}] installs it "
            f"(pip install -e '.[{extra}]' in a clone of wholebody)"
        ) from None


class MJCFParseError(ModelError):
    """The MJCF does not parse or Pinocchio cannot build it; the message carries the reason."""


# --- names --------------------------------------------------------------------------------


def _close_matches(name: str, candidates: Iterable[str], n: int = 5) -> list[str]:
    candidates = list(candidates)
    close = difflib.get_close_matches(name, candidates, n=n, cutoff=0.5)
    # Substring matches catch "sole" -> "left_sole", which difflib ranks low.
    for c in candidates:
        if len(close) >= n:
            break
        if name.lower() in c.lower() and c not in close:
            close.append(c)
    return close


class _NameError(WholebodyError, LookupError):
    kind = "name"

    def __init__(self, name: str, available: Iterable[str]):
        available = list(available)
        self.name = name
        self.available = available
        close = _close_matches(name, available)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(available[:12]) + (", ..." if len(available) > 12 else "")
        super().__init__(f"{self.kind} {name!r} not found{hint} (available: {shown})")

    def __str__(self) -> str:  # LookupError would otherwise quote the message like a key
        return str(self.args[0])


class FrameNotFoundError(_NameError):
    """A frame name that the model does not have; lists close matches."""

    kind = "frame"


class RobotNotFoundError(_NameError):
    """A robot name that :func:`wholebody.load` does not know; lists the known ones."""

    kind = "robot"


class JointNotFoundError(_NameError):
    """A joint name that the model does not have; lists close matches."""

    kind = "joint"


class ContactNotFoundError(_NameError):
    """A contact name that a result or log does not have; lists the known ones."""

    kind = "contact"


# --- states and contacts ------------------------------------------------------------------


class StateError(WholebodyError, ValueError):
    """A configuration, velocity, acceleration or torque that is malformed.

    Wrong length or shape, non-finite values, or a base quaternion that is not of unit norm.
    """


class ContactError(WholebodyError, ValueError):
    """A contact description that is invalid (friction coefficient, sizes, frame)."""


class PointMismatchError(WholebodyError, ValueError):
    """Wrenches about different points were added; move one with ``Wrench.shift_to``."""


class InvalidArgumentError(WholebodyError, ValueError, TypeError):
    """An argument that is not a state but is still wrong: a tolerance that is NaN or
    negative, ``workers=0``, a point that is not a 3-vector, a frame given as an integer, an
    unknown option. Derives from both ``ValueError`` and ``TypeError``: generic handlers of
    either catch it."""


# --- files --------------------------------------------------------------------------------


class LogFormatError(WholebodyError, ValueError):
    """A log file or array set that cannot be read: names the file and the field."""


class LogFileError(LogFormatError, OSError):
    """A log path that cannot be opened (a directory, no permission, not a regular file)."""


class OutputError(WholebodyError, OSError):
    """An output that cannot be written (read-only folder, a directory in the way)."""


class ProfileError(WholebodyError, ValueError):
    """A robot profile that cannot be used: names the file and the entry."""


class RecordingError(LogFormatError):
    """A recording (ROS 2 bag, MCAP file, LeRobot dataset) that cannot be read as mapped: a
    missing topic or column, a wrong message type, a field the messages lack.

    Attributes
    ----------
    name : str
        The topic or column at fault (empty when the whole recording is).
    """

    def __init__(self, message: str, name: str = ""):
        super().__init__(message)
        self.name = name


class ExtrapolationError(RecordingError):
    """A topic that does not cover the time base within the tolerance: its samples would be
    extrapolated. ``name`` is the topic; ``covered`` its (first, last) stamps and
    ``requested`` the time base's (first, last) [s, from the recording's time origin]."""

    def __init__(
        self,
        message: str,
        name: str = "",
        covered: tuple[float, float] = (float("nan"), float("nan")),
        requested: tuple[float, float] = (float("nan"), float("nan")),
    ):
        super().__init__(message, name)
        self.covered = covered
        self.requested = requested


class OutsideInputError(WholebodyError, PermissionError):
    """A file that an input names (a dataset's ``data_path``, an MJCF ``<include>``, a bag's
    file) lies outside what the user gave: refused before any byte of it is read.

    Attributes
    ----------
    path : str
        The path that leaves, as the input wrote it.
    """

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:  # PermissionError would format its own (errno, text) message
        return str(self.args[0])


class SizeLimitError(WholebodyError, ValueError):
    """An input whose size (samples of a time grid, episodes, bodies or nesting depth of a
    model, decoded values) exceeds a limit of :mod:`wholebody.limits`, refused before the
    work starts; the message says what it would have cost and which limit to raise.

    Attributes
    ----------
    limit : str
        The name of the limit (a field of :class:`wholebody.limits.Limits`).
    """

    def __init__(self, message: str, limit: str = ""):
        super().__init__(message)
        self.limit = limit


# --- solvers and workers ------------------------------------------------------------------


class SolverNotAvailableError(WholebodyError, ValueError):
    """The named QP backend is not installed; the message lists those that are."""


class SolverError(WholebodyError, RuntimeError):
    """A QP backend raised; the backend's exception is kept as ``__cause__``."""


class ProjectionError(WholebodyError, RuntimeError):
    """A linear program of a support-area projection failed for a reason other than
    infeasibility."""


class ClusterError(WholebodyError, ConnectionError):
    """A Dask scheduler that cannot be reached in time, or a cluster that failed."""


# --- warnings -----------------------------------------------------------------------------


class WholebodyWarning(UserWarning):
    """Base class of every warning issued by wholebody."""


class ModelWarning(WholebodyWarning):
    """Something in a model that is allowed but worth knowing (mimic joints, massless links)."""


class StateWarning(WholebodyWarning):
    """A state that was accepted after a small correction (renormalised quaternion)."""
