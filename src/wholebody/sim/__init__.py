"""Simulators: one module per engine, each giving logs in this library's conventions
(world-axes forces at contact points, Pinocchio's ``q``/``v`` layout).

- :mod:`wholebody.sim.mujoco`: MuJoCo's conventions, an editable ``MjSpec`` for any robot with
  its contacts, inertia repairs (``_mujoco_base``, ``_mujoco_inertia`` are its parts).
- :mod:`wholebody.sim.mujoco_recorder`: :class:`MujocoRecorder`, a recorder that logs a MuJoCo
  simulation correctly.
- :mod:`wholebody.sim.pybullet`: PyBullet (``pip install 'wholebody[pybullet]'``);
- :mod:`wholebody.sim.drake`: Drake's MultibodyPlant (``wholebody[drake]``);
- :mod:`wholebody.sim.mjx`: MuJoCo MJX (JAX, ``wholebody[mjx]``) and MuJoCo Warp
  (``wholebody[mujoco-warp]``);
- :mod:`wholebody.sim.newton`: Newton (``wholebody[newton]``), solvers that expose contact
  forces (``SolverMuJoCo``); others are refused by name;
- :mod:`wholebody.sim.genesis`: Genesis (``wholebody[genesis]``; pulls torch).

Every recorder is a :class:`Recorder`: ``record(...)`` after each step (its engine's own
arguments), ``len(recorder)``, :attr:`Recorder.undeclared_contact_force` and
:meth:`Recorder.trajectory`, written once for all engines. A log recorded with repaired
masses (``masses="repair"``) carries them; :func:`robot_for_log` gives the robot to check it
with (``wholebody check`` applies them).

:func:`contact_urdf` writes the URDF the URDF-loading engines simulate: collision spheres at
the declared contacts only (:mod:`wholebody.sim.urdf`).

Each engine is an optional extra, imported when a recorder or a model is made, never on
import. The recipes are in ``docs/simulators.md`` and ``docs/mujoco.md``.
"""

from ._common import ROBOT_INERTIAS, Recorder, robot_for_log
from .mujoco import mujoco_spec_for_robot, trajectory_from_mujoco
from .mujoco_recorder import MujocoRecorder
from .urdf import contact_urdf

__all__ = [
    "mujoco_spec_for_robot",
    "MujocoRecorder",
    "trajectory_from_mujoco",
    "Recorder",
    "robot_for_log",
    "ROBOT_INERTIAS",
    "contact_urdf",
]
