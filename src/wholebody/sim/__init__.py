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

Each engine is an optional extra, imported only with its module (nothing is imported here).
The recipes are in ``docs/simulators.md`` and ``docs/mujoco.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .mujoco import mujoco_spec_for_robot
    from .mujoco_recorder import MujocoRecorder

# name -> module of this package, imported on first access (PEP 562).
_LAZY = {"mujoco_spec_for_robot": "mujoco", "MujocoRecorder": "mujoco_recorder"}

__all__ = ["mujoco_spec_for_robot", "MujocoRecorder"]


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
