"""Log a MuJoCo MJX (JAX) or MuJoCo Warp simulation into a :class:`~wholebody.Trajectory`:
:class:`MjxRecorder` and :class:`MujocoWarpRecorder`, each a
:class:`~wholebody.sim.mujoco_recorder.MujocoRecorder` fed from the device. Each sample runs
the engine's own ``forward`` on the device (its precision, recorded in ``metadata["dtype"]``),
then is read on a host copy with MuJoCo's ``mj_contactForce``; ``docs/simulators.md`` (MJX,
MuJoCo Warp) says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..contacts import Contact
from ..errors import StateError, require
from ..robot import Robot
from ._common import precision_metadata
from .mujoco_recorder import MujocoRecorder

__all__ = ["MjxRecorder", "MujocoWarpRecorder", "import_mjx", "import_mujoco_warp"]


def import_mjx() -> Any:
    """Import :mod:`mujoco.mjx` or raise :class:`MissingDependencyError` with the install line."""
    return require("mujoco.mjx", "mjx", "MJX logs")


def import_mujoco_warp() -> Any:
    """Import :mod:`mujoco_warp` or raise :class:`MissingDependencyError` naming the extra."""
    return require("mujoco_warp", "mujoco-warp", "MuJoCo Warp logs")


def _check_contacts(mj_model: Any, d: Any, engine: str) -> None:
    """Contacts of a host copy: ``contact.geom`` checked, ``geom1``/``geom2`` set from it.

    ``mujoco_warp.get_data_into`` fills ``contact.geom`` but leaves the ``geom1``/``geom2``
    fields uninitialised (seen with mujoco-warp 4.0: values like 22043 for a 9-geom model).
    """
    n = int(d.ncon)
    if n == 0:
        return
    geoms = np.array(d.contact.geom[:n], dtype=int)
    if geoms.min() < 0 or geoms.max() >= mj_model.ngeom:
        raise StateError(
            f"{engine}: the host copy's contacts name geoms {sorted(set(geoms.ravel()))} that "
            f"the model (ngeom = {mj_model.ngeom}) does not have: the copy is not initialised"
        )
    d.contact.geom1[:n] = geoms[:, 0]
    d.contact.geom2[:n] = geoms[:, 1]


class _DeviceRecorder(MujocoRecorder):
    """A MujocoRecorder fed from a device: each sample's data copied into a host MjData (its
    contacts checked), then read as MuJoCo's; its :meth:`record` takes the device's model and
    data. ``metadata["dtype"]`` is the device's precision."""

    def __init__(self, robot: Robot, mj_model: Any, contacts: Sequence[Contact], **options: Any):
        # The options of MujocoRecorder but forward, which runs on the device.
        super().__init__(robot, mj_model, contacts, forward=False, **options)
        self._host = self._mujoco.MjData(mj_model)
        self.dtype: np.dtype[Any] | None = None

    def _read_host(self, dtype: Any) -> None:
        dt = np.dtype(dtype)
        if self.dtype is not None and dt != self.dtype:
            raise StateError(
                f"{self.engine}: the device data changed precision ({self.dtype} -> {dt})"
            )
        self.dtype = dt
        _check_contacts(self.model, self._host, self.engine)
        self._read(self._host)

    def _metadata(self) -> dict[str, Any]:
        return {
            **super()._metadata(),
            **precision_metadata(self.dtype if self.dtype is not None else np.float64),
        }


class MjxRecorder(_DeviceRecorder):
    """Records an MJX simulation (``mujoco.mjx``), then gives it as a Trajectory.

    Parameters
    ----------
    robot : Robot
    mj_model : mujoco.MjModel
        The host model that ``mjx.put_model`` was given (from
        :func:`~wholebody.sim.mujoco.mujoco_spec_for_robot`: use :meth:`from_build`).
    contacts, contact_sites, push_bodies, torques
        As for :class:`~wholebody.sim.mujoco_recorder.MujocoRecorder`.

    Examples
    --------
    >>> mx = mjx.put_model(model); dx = mjx.put_data(model, mujoco.MjData(model))  # doctest: +SKIP
    >>> rec = MjxRecorder.from_build(build, model)                                 # doctest: +SKIP
    >>> step = jax.jit(mjx.step)                                                   # doctest: +SKIP
    >>> for _ in range(1000):                                                      # doctest: +SKIP
    ...     dx = dx.replace(qfrc_applied=controller(dx))
    ...     rec.record(mx, dx)
    ...     dx = step(mx, dx)
    >>> traj = rec.trajectory()                                                    # doctest: +SKIP
    """

    engine = "MJX"

    def __init__(self, robot: Robot, mj_model: Any, contacts: Sequence[Contact], **options: Any):
        super().__init__(robot, mj_model, contacts, **options)
        self._mjx = import_mjx()
        import jax

        self._forward = jax.jit(self._mjx.forward)

    # The device's model and data, not an MjData: the one method not MujocoRecorder's.
    def record(self, mjx_model: Any, mjx_data: Any) -> None:  # type: ignore[override]
        """Log the current state of ``mjx_data``: ``mjx.forward`` on the device (the engine's
        precision), then ``mjx.get_data`` and MuJoCo's ``mj_contactForce`` on the host copy.

        Call it after setting this step's controls and before ``mjx.step``, or right after
        it: either way the sample is one consistent state.
        """
        dx = self._forward(mjx_model, mjx_data)
        self._mjx.get_data_into(self._host, self.model, dx)
        self._read_host(dx.qpos.dtype)

    def _metadata(self) -> dict[str, Any]:
        import jax

        return {**super()._metadata(), "simulator": f"MuJoCo MJX (jax {jax.__version__})"}


class MujocoWarpRecorder(_DeviceRecorder):
    """Records a MuJoCo Warp simulation (``mujoco_warp``), then gives it as a Trajectory.

    Parameters as for :class:`MjxRecorder`; :meth:`record` takes the Warp model and data
    (``mujoco_warp.put_model`` / ``put_data``).
    """

    engine = "MuJoCo Warp"

    def __init__(self, robot: Robot, mj_model: Any, contacts: Sequence[Contact], **options: Any):
        super().__init__(robot, mj_model, contacts, **options)
        self._mjw = import_mujoco_warp()

    # The device's model and data, not an MjData: the one method not MujocoRecorder's.
    def record(self, warp_model: Any, warp_data: Any) -> None:  # type: ignore[override]
        """Log the current state: ``mujoco_warp.forward`` on the device, then
        ``get_data_into`` a host copy, its contact geoms checked and completed, and read."""
        self._mjw.forward(warp_model, warp_data)
        self._mjw.get_data_into(self._host, self.model, warp_data)
        self._read_host(np.float32)

    def _metadata(self) -> dict[str, Any]:
        return {**super()._metadata(), "simulator": "MuJoCo Warp"}
