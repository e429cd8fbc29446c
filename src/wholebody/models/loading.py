"""``wholebody.load(name)``: the shipped models, example-robot-data's humanoids, and files."""

from __future__ import annotations

from pathlib import Path

from ..errors import (
    InvalidArgumentError,
    MissingDependencyError,
    ModelFileNotFoundError,
    RobotNotFoundError,
)
from ..robot import Robot

__all__ = ["load", "available_robots", "path", "models_dir", "data_dir", "SHIPPED_NAMES"]

#: The names of the shipped models (``models/NAME.urdf``), in the order ``SHIPPED`` writes them.
SHIPPED_NAMES = ("pendulum", "two_link_arm", "humanoid", "human_dempster")


# name -> path below example-robot-data's "robots" folder; floating base for all of them.
EXAMPLE_ROBOT_DATA = {
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "icub": "icub_description/robots/icub_reduced.urdf",
    "icub_full": "icub_description/robots/icub.urdf",
    "romeo": "romeo_description/urdf/romeo_small.urdf",
    "human": "human_description/robots/human.urdf",
    "simple_humanoid": "simple_humanoid_description/urdf/simple_humanoid.urdf",
}

_FIXED_BASE_SHIPPED = {"pendulum", "two_link_arm"}


def available_robots() -> list[str]:
    """Names :func:`load` knows (example-robot-data ones need the ``robots`` extra)."""
    return sorted(SHIPPED_NAMES) + sorted(EXAMPLE_ROBOT_DATA)


def example_robot_data_dir() -> Path:
    """The ``robots`` folder of the installed example-robot-data package."""
    from importlib import metadata  # only example-robot-data's robots need it

    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        raise MissingDependencyError(
            "example-robot-data is not installed: the extra wholebody[robots] installs it "
            "(pip install -e '.[robots]' in a clone of wholebody)"
        ) from None
    for f in dist.files or ():
        parts = Path(f).parts
        if "example-robot-data" in parts and "robots" in parts:
            i = parts.index("robots")
            return Path(str(dist.locate_file(Path(*parts[: i + 1]))))
    raise MissingDependencyError(
        "example-robot-data is installed but holds no robots folder; "
        "reinstall it: pip install --force-reinstall example-robot-data"
    )


def load(name: str | Path, *, validate: str | None = None) -> Robot:
    """Load a robot by name, or from a URDF or MJCF file.

    Parameters
    ----------
    name : str or Path
        A shipped model (``"humanoid"``, ``"pendulum"``, ``"two_link_arm"``), a humanoid
        of example-robot-data (``"g1"``, ``"talos"``, ``"icub"``, ``"romeo"``, ``"human"``,
        ...; see :func:`available_robots`), the latter with a floating base, or the path of
        a URDF (``<robot>``) or MJCF (``<mujoco>``) file, told apart by its root element
        (a URDF gets a floating base; an MJCF keeps the base its file declares).
    validate : {"raise", "warn", "ignore"}, optional
        As in :meth:`Robot.from_urdf`. Default: ``"raise"`` for the shipped models and
        ``"warn"`` for third-party ones, some of which carry small defects (Romeo's
        shoulder links break the triangle inequality of inertia; the human model has
        massless intermediate links): they load, and the warning names the link.

    Raises
    ------
    RobotNotFoundError
        Unknown name (a ``LookupError``); the message lists close and known names.
    MissingDependencyError
        An example-robot-data robot without the ``robots`` extra installed.
    InvalidArgumentError
        ``name`` is not a string, or ``validate`` is not one of the policies.

    Examples
    --------
    >>> import wholebody
    >>> robot = wholebody.load("humanoid")
    >>> robot.nq, robot.nv  # a floating base: 7 + 19 joints, 6 + 19 velocities
    (26, 25)
    >>> round(robot.mass, 1)  # [kg]
    65.7
    """
    if isinstance(name, Path) or (
        isinstance(name, str)
        and name not in SHIPPED_NAMES
        and name not in EXAMPLE_ROBOT_DATA
        and Path(name).suffix.lower() in (".urdf", ".xml", ".mjcf")
    ):
        return _load_file(Path(name), validate or "warn")
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"name must be a robot name (str) or a path, got {type(name).__name__}"
        )
    if name in SHIPPED_NAMES:
        return Robot.from_urdf(
            path(name),
            floating_base=name not in _FIXED_BASE_SHIPPED,
            validate=validate or "raise",
            name=name,
        )
    if name in EXAMPLE_ROBOT_DATA:
        urdf = example_robot_data_dir() / EXAMPLE_ROBOT_DATA[name]
        if not urdf.is_file():
            raise ModelFileNotFoundError(
                f"example-robot-data has no {EXAMPLE_ROBOT_DATA[name]} ({urdf})"
            )
        return Robot.from_urdf(urdf, floating_base=True, validate=validate or "warn", name=name)
    raise RobotNotFoundError(name, available_robots())


def _load_file(path: Path, validate: str) -> Robot:
    """A URDF or an MJCF file, told apart by the root element."""
    if not path.is_file():
        raise ModelFileNotFoundError(f"{path}: no such robot description file")
    from ..robot.mjcf import is_mjcf  # the one rule, as `wholebody fit` tells them apart

    if is_mjcf(path):
        return Robot.from_mjcf(path, validate=validate)
    return Robot.from_urdf(path, floating_base=True, validate=validate)


def _shipped_folder(installed: str, repository: str, marker: str) -> Path:
    """A shipped folder: ``wholebody/<installed>`` in an installed wheel, ``<repository>/``
    at the root of a checkout; the one holding ``marker``."""
    here = Path(__file__).resolve()
    for candidate in (here.parent.parent / installed, here.parents[3] / repository):
        if (candidate / marker).is_file():
            return candidate
    raise FileNotFoundError(f"wholebody's {repository} folder is missing from this installation")


def models_dir() -> Path:
    """The folder holding the shipped URDF files."""
    return _shipped_folder("_models", "models", "humanoid.urdf")


def data_dir() -> Path:
    """The folder holding the shipped logs (``data/`` in the repository)."""
    return _shipped_folder("_data", "data", "humanoid_squat.npz")


def path(name: str) -> Path:
    """Path of a shipped URDF (a name of :data:`SHIPPED_NAMES`)."""
    if name not in SHIPPED_NAMES:
        raise KeyError(f"no shipped model {name!r}; shipped: {sorted(SHIPPED_NAMES)}")
    return models_dir() / f"{name}.urdf"
