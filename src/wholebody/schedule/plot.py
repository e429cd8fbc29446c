"""The schedule figure: a Gantt-style timeline per contact beside the vertical force."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import OutputError, require
from .core import ContactSchedule

__all__ = ["plot_schedule"]


# --- figure -------------------------------------------------------------------------------


def plot_schedule(
    schedule: ContactSchedule, normal_forces: ArrayLike | None = None, path: str | None = None
) -> Any:
    """A Gantt-style timeline of the schedule beside the vertical force.

    Top panel: one row per contact, a bar where it is active (shaded by confidence),
    unexplained samples marked in red. Bottom panel: each contact's normal force [N]
    (``normal_forces`` (N, k), or the schedule's ``evidence["normal_force"]``) with the
    inactive spans shaded. Saved to ``path`` when given.

    Returns
    -------
    matplotlib.figure.Figure
    """
    require("matplotlib", "plot", "schedule figures")
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = schedule.time
    k = len(schedule.contact_names)
    forces = (
        np.asarray(normal_forces, dtype=float)
        if normal_forces is not None
        else schedule.evidence.get("normal_force")
    )
    rows = 2 if forces is not None else 1
    fig, axes = plt.subplots(
        rows,
        1,
        sharex=True,
        figsize=(10, 1.2 + 0.6 * k + 2.5 * (rows - 1)),
        squeeze=False,
        gridspec_kw={"height_ratios": [1] + [2] * (rows - 1)},
    )
    ax = axes[0, 0]
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    for j in range(k):
        col = schedule.active[:, j].astype(np.int8)
        edges = np.flatnonzero(np.diff(col)) + 1
        for s, e in zip(np.r_[0, edges].tolist(), np.r_[edges, len(col)].tolist(), strict=True):
            if col[s]:
                conf = float(np.mean(schedule.confidence[s:e, j]))
                ax.broken_barh(
                    [(t[s], t[e - 1] - t[s] + dt)],
                    (j - 0.4, 0.8),
                    facecolors=f"C{j}",
                    alpha=0.35 + 0.65 * conf,
                )
    assert schedule.unexplained is not None
    if schedule.unexplained.any():
        ax.plot(
            t[schedule.unexplained],
            np.full(int(schedule.unexplained.sum()), k - 0.5),
            "r|",
            markersize=12,
            label="no subset explains the motion",
        )
        ax.legend(loc="upper right", fontsize="small")
    ax.set_yticks(range(k), list(schedule.contact_names))
    ax.set_ylim(-0.6, k - 0.2)
    ax.set_title(f"contact schedule ({schedule.method})")
    if forces is not None:
        axf = axes[1, 0]
        for j, name in enumerate(schedule.contact_names):
            axf.plot(t, forces[:, j], color=f"C{j}", label=f"{name} normal force")
        axf.set_ylabel("force [N]")
        axf.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("time [s]")
    fig.tight_layout()
    if path is not None:
        try:
            fig.savefig(path)
        except OSError as exc:
            raise OutputError(f"cannot write the schedule figure {path!r}: {exc}") from exc
    return fig
