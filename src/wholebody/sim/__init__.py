"""Recorders for simulators other than MuJoCo: attach to a running simulation, read the
state and the contact forces each step the way that engine needs, and get a
:class:`~wholebody.Trajectory` in wholebody's conventions.

* :mod:`wholebody.sim.pybullet`: PyBullet (``pip install 'wholebody[pybullet]'``);
* :mod:`wholebody.sim.drake`: Drake's MultibodyPlant (``wholebody[drake]``);
* :mod:`wholebody.sim.mjx`: MuJoCo MJX (JAX, ``wholebody[mjx]``) and MuJoCo Warp
  (``wholebody[mujoco-warp]``);
* :mod:`wholebody.sim.newton`: Newton (``wholebody[newton]``), solvers that expose contact
  forces (``SolverMuJoCo``); others are refused by name.

Each engine is an optional extra, imported only when its recorder is made. The recipes are
in ``docs/simulators.md``; :mod:`wholebody.mujoco_recorder` is the MuJoCo one.
"""
