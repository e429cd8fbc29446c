"""MJX recorder: a standing humanoid's log balances to MJX's floor in float32 and float64,
its forces equal MJX's own constraint forces on the free joint, and the dtype is in the
log (runs when mujoco-mjx and jax are installed; compiling takes minutes on a CPU)."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory

from ._engine_robots import feet_contacts, sphere_feet_urdf

jax = pytest.importorskip("jax")
mjx = pytest.importorskip("mujoco.mjx")
import mujoco  # noqa: E402

from wholebody.sim.mjx import MjxRecorder  # noqa: E402
from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot  # noqa: E402

#: Median Newton-Euler residual [N] at each precision's floor: float32 resolves a ~650 N
#: weight to ~4e-5 N (measured 6e-5 N median); float64 to round-off with a 1e-12 solver
#: tolerance.
FLOOR = {"float32": 5e-4, "float64": 1e-9}
STEPS = 100


def _x64(jax):
    """jax's float64 context (``jax.enable_x64(True)``; older jax: jax.experimental)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64

    return enable_x64()


@pytest.fixture(scope="module", params=["float32", "float64"])
def standing(request, tmp_path_factory):
    x64 = request.param == "float64"
    path = sphere_feet_urdf(
        tmp_path_factory.mktemp("mjx"), inertial_everywhere=True, base_com_offset=True
    )
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    build = mujoco_spec_for_robot(
        robot,
        contacts,
        contact_geoms=False,
        timestep=1e-3,
        solver_tolerance=1e-12 if x64 else 1e-6,
        solver_iterations=100,
    )
    m = build.compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    smap.qpos(q0, out=d.qpos)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    ctx = _x64(jax) if x64 else contextlib.nullcontext()
    with ctx:
        import jax.numpy as jnp

        mx, dx = mjx.put_model(m), mjx.put_data(m, d)
        rec = MjxRecorder.from_build(build, m)
        step = jax.jit(mjx.step)
        constraint = []
        for _ in range(STEPS):
            f = jnp.zeros(m.nv).at[jv].set(-300 * dx.qpos[jq] - 3 * dx.qvel[jv])
            dx = dx.replace(qfrc_applied=f)
            rec.record(mx, dx)
            constraint.append(np.array(rec._host.qfrc_constraint[:3]))  # MJX's own, world
            dx = step(mx, dx)
    return request.param, build.robot, contacts, rec.trajectory(), np.array(constraint)


def test_dtype_is_in_the_log(standing):
    dtype, _, _, traj, _ = standing
    assert traj.metadata["dtype"] == dtype
    assert traj.metadata["float_epsilon"] == float(np.finfo(dtype).eps)


def test_forces_equal_mjx_constraint_force_on_the_free_joint(standing):
    # The free joint's translational rows of J^T f are the total contact force, world axes.
    dtype, _, _, traj, constraint = standing
    total = traj.contact_wrenches[:, :, :3].sum(axis=1)
    scale = np.abs(constraint).max()
    assert np.abs(total - constraint).max() < 100 * np.finfo(dtype).eps * scale


def test_log_balances_to_mjx_floor(standing):
    dtype, robot, contacts, traj, _ = standing
    report = check_trajectory(robot, traj, contacts)
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < FLOOR[dtype]


def test_force_on_the_other_body_is_caught(standing):
    _, robot, contacts, traj, _ = standing
    flipped = replace(traj, contact_wrenches=-traj.contact_wrenches)
    assert check_trajectory(robot, flipped, contacts).verdict == "inconsistent"
