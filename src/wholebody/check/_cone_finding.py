"""A diagnosis line for friction-cone and CoP violations: which contact, which inequality,
how far (the CoP's distance beyond the sole's edge in millimetres, or the cone margin in
newtons), and when. A log whose balance is within tolerance but whose wrench leaves a cone
is inconsistent; the diagnosis says where and by how much."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..diagnosis.core import Finding

Array = NDArray[np.float64]


def _runs(mask: NDArray[np.bool_]) -> list[tuple[int, int]]:
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def cone_finding(report: object) -> Finding | None:
    """The ``cone_violation`` finding of a report with violated cones (None without).

    ``parameters["contacts"]``: per contact the samples violated, the most violated
    inequality, the largest CoP excursion beyond the sole [m] (NaN for point contacts or
    slips), the least cone margin [N or N m], and the windows (first, last time [s]).
    """
    viol: NDArray[np.bool_] = report.cone_violation  # type: ignore[attr-defined]
    if not viol.any():
        return None
    time: Array = report.time  # type: ignore[attr-defined]
    names: list[str] = report.contact_names  # type: ignore[attr-defined]
    halves: dict[str, tuple[float, float]] = report.sole_half_sizes  # type: ignore[attr-defined]
    centres = report.sole_centers  # type: ignore[attr-defined]
    cop: Array = report.cop  # type: ignore[attr-defined]
    margin: Array = report.cone_margin  # type: ignore[attr-defined]
    rows_named = report.violated_row  # type: ignore[attr-defined]
    out: dict[str, dict[str, object]] = {}
    parts = []
    for j, name in enumerate(names):
        v = viol[:, j]
        if not v.any():
            continue
        kinds = list(rows_named[v, j])
        common = max(set(kinds), key=kinds.count)
        beyond = float("nan")
        if name in halves and cop.ndim == 3:
            X, Y = halves[name]
            c = np.asarray(centres.get(name, (0.0, 0.0)), dtype=float)
            p = cop[v, j] - c
            with np.errstate(invalid="ignore"):
                excess = np.maximum(np.abs(p[:, 0]) - X, np.abs(p[:, 1]) - Y)
            if np.isfinite(excess).any() and np.nanmax(excess) > 0:
                beyond = float(np.nanmax(excess))
        windows = [(float(time[a]), float(time[b - 1])) for a, b in _runs(v)]
        out[name] = {
            "samples": int(v.sum()),
            "most_violated": common,
            "cop_beyond_sole": beyond,
            "min_margin": float(np.nanmin(margin[v, j])),
            "windows": windows,
        }
        when = ", ".join(f"{a:.3f} .. {b:.3f} s" for a, b in windows[:3])
        more = f" (+{len(windows) - 3} more)" if len(windows) > 3 else ""
        # The margin's unit follows the inequality: a moment row (the CoP) in N m, else N.
        of_kind = np.asarray(rows_named[:, j] == common) & v
        unit = "N m" if "CoP" in common else "N"
        far = (
            f"the CoP up to {1e3 * beyond:.3g} mm beyond the sole's edge"
            if np.isfinite(beyond)
            else f"up to {-float(np.nanmin(margin[of_kind, j])):.3g} {unit} outside the cone"
        )
        parts.append(f"{name!r}: {int(v.sum())} samples, {common}; {far}; at {when}{more}")
    return Finding(
        "cone_violation",
        0.0,
        "contact wrenches outside their cone: " + "; ".join(parts),
        {"contacts": out},
    )
