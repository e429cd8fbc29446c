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
:meth:`Recorder.trajectory`, written once for all engines.

Each engine is an optional extra, imported when a recorder or a model is made, never on
import. The recipes are in ``docs/simulators.md`` and ``docs/mujoco.md``.
"""

from ._common import Recorder
from .mujoco import mujoco_spec_for_robot, trajectory_from_mujoco
from .mujoco_recorder import MujocoRecorder

__all__ = ["mujoco_spec_for_robot", "MujocoRecorder", "trajectory_from_mujoco", "Recorder"]
