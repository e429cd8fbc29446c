"""The free base's acceleration over one engine step, in the integration coordinates of
MuJoCo's free joint (Genesis and Newton recorders use the same helper), against MuJoCo's own
``qacc`` of that step: an independent engine's answer."""

from __future__ import annotations

import numpy as np
import pytest

from wholebody.sim._common import base_acceleration_between_states, base_to_pinocchio

mujoco = pytest.importorskip("mujoco")

_BODY = """
<mujoco>
  <option timestep="0.002" integrator="Euler"/>
  <worldbody>
    <body name="box" pos="0.1 -0.2 1.0">
      <freejoint/>
      <geom type="box" size="0.3 0.1 0.05" mass="2.0"/>
      <geom type="sphere" pos="0.2 0.05 0" size="0.04" mass="0.7"/>
    </body>
  </worldbody>
</mujoco>
"""


def _world_state(d):
    """Base origin, rotation, world linear and world angular velocity (MuJoCo's free joint:
    qvel = world linear velocity of the origin, angular velocity in body axes)."""
    R = np.empty(9)
    mujoco.mju_quat2Mat(R, d.qpos[3:7])
    R = R.reshape(3, 3)
    return d.qpos[:3].copy(), R, d.qvel[:3].copy(), R @ d.qvel[3:6]


def test_base_acceleration_between_states_equals_mujocos_qacc():
    m = mujoco.MjModel.from_xml_string(_BODY)
    d = mujoco.MjData(m)
    d.qvel[:] = [0.4, -0.3, 0.2, 2.0, -1.5, 3.0]  # a tumbling, moving box under gravity
    d.xfrc_applied[1] = [3.0, -1.0, 5.0, 0.5, 0.2, -0.4]  # and a push with a torque
    for _ in range(5):
        mujoco.mj_step(m, d)
    p0, R0, v0, w0 = _world_state(d)
    mujoco.mj_step(m, d)
    qacc = d.qacc.copy()  # the acceleration of this step (Euler: qvel += dt * qacc)
    p1, R1, v1, w1 = _world_state(d)
    _, v_base = base_to_pinocchio(p0, R0, v0, w0)
    a = base_acceleration_between_states(R0, R1, (v0, v1), (w0, w1), v_base, m.opt.timestep)
    # Pinocchio's base acceleration from MuJoCo's: the derivative of the base-axes velocity
    # R^T v_W is R^T dv_W/dt - omega_b x v_b; the angular part is qacc's own (body axes).
    omega_b, v_b = v_base[3:], v_base[:3]
    reference = np.r_[R0.T @ qacc[:3] - np.cross(omega_b, v_b), qacc[3:6]]
    np.testing.assert_allclose(a, reference, rtol=0, atol=1e-9)
    # The state is one where the omega x v term counts (a formula without it fails here).
    assert np.max(np.abs(np.cross(omega_b, v_b))) > 0.5
