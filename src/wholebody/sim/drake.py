"""Log a running Drake simulation (a ``MultibodyPlant``) into a :class:`~wholebody.Trajectory`.

What :class:`DrakeRecorder` does, and the Drake facts behind it:

* **when to read.** A discrete plant (``time_step > 0``, SAP or TAMSI) with sampled output
  ports (Drake's default) latches its contact results and generalized accelerations when it
  steps: after ``AdvanceTo`` they describe the step ``x_n -> x_{n+1}`` just taken. So the
  sample is the state *before* the step (kept from the previous call, or from attaching),
  the accelerations port ``(v_{n+1} - v_n) / dt`` and the contact results, read *after* the
  step. Read before the step, the forces lag the motion by one step (a residual of ~1e-2 N
  instead of ~1e-11 N on a standing humanoid). Each call checks that the accelerations port
  equals ``(v - v_prev) / dt``: a call without a step, or after several steps, is refused.
  A plant without sampled ports, or a continuous one, evaluates its ports at the current
  state: each call logs the current state with them.
* **contact forces.** ``PointPairContactInfo.contact_force()`` is the force on body B, world
  axes, at ``contact_point()`` (body A gets the opposite); a hydroelastic contact's
  ``F_Ac_W()`` is the spatial force on the body of geometry M at the surface's centroid.
  Contacts between two robot bodies are internal and skipped.
* **the free base.** Drake's floating-base velocities are ``[w_WB, v_WBo]``, both world axes:
  converted once to Pinocchio's base axes (linear first), the accelerations with the
  ``omega x v`` term removed.
* joints and bodies mapped by **name**; masses and inertias compared with the robot's at
  attach time (a link without ``<inertial>``, a different file) and refused with the links
  named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pinocchio as pin

from ..contacts import Contact
from ..errors import InvalidArgumentError, ModelError, StateError, require
from ..robot import Robot
from ._common import (
    Recorder,
    base_acceleration_to_pinocchio,
    base_to_pinocchio,
    precision_metadata,
)

__all__ = ["DrakeRecorder", "import_drake", "STEP_TOLERANCE"]

#: Relative agreement required between the accelerations port and ``(v - v_prev) / dt``.
STEP_TOLERANCE = 1e-8


def import_drake() -> Any:
    """Import :mod:`pydrake` or raise :class:`MissingDependencyError` with the install line."""
    return require("pydrake.multibody.plant", "drake", "Drake logs")


class DrakeRecorder(Recorder):
    """Records a Drake ``MultibodyPlant`` simulation of a robot, then gives a Trajectory.

    Parameters
    ----------
    robot : Robot
        The robot the log is for, loaded from the same file as the plant's model.
    plant : pydrake.multibody.plant.MultibodyPlant
        Finalized; the robot is one model instance with one floating base body.
    contacts : sequence of Contact
        Declared contacts: each body's contact forces go to the contact on the same robot
        body (see :class:`~wholebody.sim._common.ContactMap`).
    context : pydrake.systems.framework.Context
        The plant's context (``plant.GetMyContextFromRoot(root_context)``), in the state the
        simulation starts from.
    model_instance : ModelInstanceIndex, optional
        The robot's instance; by default the one instance with a floating base body.
    masses : {"raise", "ignore"}
        Refuse (default) or accept a plant whose masses or inertias differ from the robot's.

    Examples
    --------
    >>> rec = DrakeRecorder(robot, plant, contacts, plant_context)   # doctest: +SKIP
    >>> for n in range(1, 1001):                                     # doctest: +SKIP
    ...     simulator.AdvanceTo(n * dt)
    ...     rec.record(plant_context)                                # after the step
    >>> traj = rec.trajectory()                                      # doctest: +SKIP
    """

    engine = "Drake"
    parts = "bodies"

    def __init__(
        self,
        robot: Robot,
        plant: Any,
        contacts: Sequence[Contact],
        context: Any,
        *,
        model_instance: Any = None,
        masses: str = "raise",
    ):
        import_drake()
        if masses not in ("raise", "ignore"):
            raise InvalidArgumentError(f"masses must be 'raise' or 'ignore', got {masses!r}")
        if not robot.has_floating_base:
            raise ModelError("DrakeRecorder needs a floating-base robot")
        if not plant.is_finalized():
            raise ModelError("the Drake plant is not finalized: call plant.Finalize() first")
        self.robot, self.plant = robot, plant
        bases = [plant.get_body(i) for i in plant.GetFloatingBaseBodies()]
        if model_instance is not None:
            bases = [b for b in bases if b.model_instance() == model_instance]
        if len(bases) != 1:
            raise ModelError(
                f"the Drake plant has {len(bases)} floating base bodies "
                f"{[b.name() for b in bases]}; give the robot's model_instance"
            )
        self._base = bases[0]
        self.model_instance = self._base.model_instance()
        bodies = [plant.get_body(i) for i in plant.GetBodyIndices(self.model_instance)]
        self._link_of = {int(b.index()): k for k, b in enumerate(bodies)}
        model, base = robot.model, self._base.name()
        if not model.existFrame(base) or model.frames[model.getFrameId(base)].parentJoint != 1:
            raise ModelError(
                f"Drake's floating base body {base!r} is not the root link of robot "
                f"{robot.name!r}: load the robot and the plant from the same file"
            )
        self._check_context(context)
        # Joints by name, in the robot's order.
        q_idx, v_idx = [], []
        for j in robot.joint_names:
            if not plant.HasJointNamed(j, self.model_instance):
                raise ModelError(f"robot joint {j!r} is not a joint of the Drake model")
            joint = plant.GetJointByName(j, self.model_instance)
            if joint.num_positions() != 1 or joint.num_velocities() != 1:
                raise ModelError(f"Drake joint {j!r} has {joint.num_positions()} coordinates")
            q_idx.append(joint.position_start())
            v_idx.append(joint.velocity_start())
        self._q_idx, self._v_idx = np.array(q_idx, int), np.array(v_idx, int)
        self._vb = int(self._base.floating_velocities_start_in_v())
        self._map_contacts(robot, contacts, [b.name() for b in bodies])
        self._matched_masses(
            robot,
            [self._link_inertia(b, context) for b in bodies],
            masses,
            ": load the robot and the plant from the same file (masses='ignore' accepts it, but "
            "the log will not balance)",
        )
        self.timestep = float(plant.time_step())
        self.sampled = bool(
            self.timestep > 0 and getattr(plant, "has_sampled_output_ports", lambda: False)()
        )
        self._prev = self._state(context)

    def _check_context(self, context: Any) -> None:
        """Refuse what is not a context of :attr:`plant` (Drake raises TypeError or
        RuntimeError deep inside otherwise)."""
        from pydrake.systems.framework import Context

        if not isinstance(context, Context):
            raise InvalidArgumentError(
                "DrakeRecorder: context must be the plant's Context (plant."
                f"GetMyMutableContextFromRoot(simulator.get_mutable_context())), got "
                f"{type(context).__name__}"
            )
        try:
            self.plant.ValidateContext(context)
        except RuntimeError as exc:
            raise InvalidArgumentError(
                "DrakeRecorder: the context is not the plant's (the diagram's root context, or "
                "another system's): give plant.GetMyMutableContextFromRoot(root_context)"
            ) from exc

    @staticmethod
    def _link_inertia(body: Any, context: Any) -> pin.Inertia:
        M = body.CalcSpatialInertiaInBodyFrame(context)  # about the body origin, body axes
        m, c = float(M.get_mass()), np.asarray(M.get_com(), float)
        I_o = np.asarray(M.CalcRotationalInertia().CopyToFullMatrix3(), float)
        I_c = I_o - m * (c @ c * np.eye(3) - np.outer(c, c))
        return pin.Inertia(m, c, I_c)

    def _state(self, context: Any) -> dict[str, Any]:
        plant = self.plant
        X = plant.EvalBodyPoseInWorld(context, self._base)
        V = plant.EvalBodySpatialVelocityInWorld(context, self._base)
        q, v = plant.GetPositions(context), plant.GetVelocities(context)
        return {
            "t": float(context.get_time()),
            "p": np.asarray(X.translation(), float),
            "R": np.asarray(X.rotation().matrix(), float),
            "v": np.asarray(V.translational(), float),
            "w": np.asarray(V.rotational(), float),
            "qj": np.asarray(q, float)[self._q_idx],
            "vj": np.asarray(v, float)[self._v_idx],
            "v_all": np.array(v, float),
        }

    def record(self, context: Any) -> None:
        """Log one sample: call right after each step (``simulator.AdvanceTo``).

        With sampled ports (a discrete plant, Drake's default) the sample is the state
        before the step, the accelerations and the contact results of the step. Otherwise
        it is the current state with the ports evaluated there.

        Raises
        ------
        InvalidArgumentError
            ``context`` is not the plant's context.
        StateError
            The accelerations port is not ``(v - v_prev) / dt``: no step, or several, since
            the last call (the forces would not belong to the state logged).
        """
        self._check_context(context)
        plant = self.plant
        a_all = np.asarray(plant.get_generalized_acceleration_output_port().Eval(context), float)
        now = self._state(context)
        if self.sampled:
            s = self._prev
            dv = now["v_all"] - s["v_all"]
            err = np.abs(a_all * self.timestep - dv).max()
            if now["t"] == s["t"] or err > STEP_TOLERANCE * max(1.0, np.abs(now["v_all"]).max()):
                raise StateError(
                    "DrakeRecorder.record: the plant's accelerations port is not (v - v_prev)/dt "
                    f"(off by {err:.3g} m/s at t = {now['t']:.6g} s): call record() once after "
                    "each step of one time_step (the contact results describe the step just "
                    "taken; read before it, they lag by one step)"
                )
        else:
            s = now
        q_base, v_base = base_to_pinocchio(s["p"], s["R"], s["v"], s["w"])
        vb = self._vb
        a = np.r_[
            base_acceleration_to_pinocchio(
                s["R"], v_base, a_all[vb + 3 : vb + 6], a_all[vb : vb + 3]
            ),
            a_all[self._v_idx],
        ]
        sums = self._sums()
        results = plant.get_contact_results_output_port().Eval(context)
        for i in range(results.num_point_pair_contacts()):
            info = results.point_pair_contact_info(i)
            ka = self._link_of.get(int(info.bodyA_index()))
            kb = self._link_of.get(int(info.bodyB_index()))
            if (ka is None) == (kb is None):
                continue  # internal to the robot, or not touching it
            f = np.asarray(info.contact_force(), float)  # on body B, world axes
            if kb is not None:
                sums.add(kb, f, info.contact_point())
            elif ka is not None:
                sums.add(ka, -f, info.contact_point())
        if results.num_hydroelastic_contacts():
            inspector = plant.get_geometry_query_input_port().Eval(context).inspector()
            for i in range(results.num_hydroelastic_contacts()):
                info = results.hydroelastic_contact_info(i)
                surface = info.contact_surface()
                ba = plant.GetBodyFromFrameId(inspector.GetFrameId(surface.id_M()))
                bb = plant.GetBodyFromFrameId(inspector.GetFrameId(surface.id_N()))
                ka, kb = self._link_of.get(int(ba.index())), self._link_of.get(int(bb.index()))
                if (ka is None) == (kb is None):
                    continue
                F = info.F_Ac_W()  # on the body of geometry M, at the centroid
                f, tau = np.asarray(F.translational(), float), np.asarray(F.rotational(), float)
                if ka is not None:
                    sums.add(ka, f, surface.centroid(), tau)
                elif kb is not None:
                    sums.add(kb, -f, surface.centroid(), -tau)
        self._append(s["t"], np.r_[q_base, s["qj"]], np.r_[v_base, s["vj"]], a, sums)
        self._prev = now

    def _metadata(self) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            drake_version = version("drake")
        except PackageNotFoundError:  # built from source
            drake_version = "(version unknown)"
        plant = self.plant
        approx = ""
        if self.timestep > 0:
            approx = str(plant.get_discrete_contact_approximation()).split(".")[-1]
        return {
            "simulator": f"Drake {drake_version}",
            "timestep": self.timestep,
            "discrete_contact_approximation": approx,
            "contact_model": str(plant.get_contact_model()).split(".")[-1],
            "ports": "sampled (read after the step)" if self.sampled else "evaluated at the state",
            **precision_metadata(np.float64),
        }
