"""Figures of a :class:`~wholebody.check.Report` (the ``plot`` extra: matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, require

__all__ = ["plot_report", "optional_pyplot", "output_dir"]


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "plot", "plots")
    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps"):
        import os

        if not os.environ.get("DISPLAY"):
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def optional_pyplot() -> Any | None:
    """matplotlib's pyplot (Agg without a display), or None with a hint when not installed.

    For scripts whose figures are optional (the examples).
    """
    try:
        return _pyplot()
    except MissingDependencyError:
        print("no plot: pip install 'wholebody[plot]'")
        return None


def output_dir() -> Path:
    """Where scripts write their files: ``$WHOLEBODY_EXAMPLE_OUT`` or ``./out`` (created)."""
    import os

    out = Path(os.environ.get("WHOLEBODY_EXAMPLE_OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def plot_report(report: Any, path: str | Path | None = None) -> Any:
    """Residual over time, friction utilisation per contact, and CoP in each sole.

    Returns the matplotlib figure; saves it to ``path`` when given.
    """
    plt = _pyplot()
    k = len(report.contact_names)
    fig = plt.figure(figsize=(11, 7.5))
    grid = fig.add_gridspec(3, max(k, 1))
    t = report.time
    ax = fig.add_subplot(grid[0, :])
    floor = 1e-17  # exact zeros cannot be drawn on a log scale
    ax.semilogy(t, np.maximum(report.force_norm / report.weight, floor), label="|force| / m g")
    ax.semilogy(
        t, np.maximum(report.moment_norm / report.weight, floor), label="|moment| / m g [m]"
    )
    ax.axhline(report.force_tolerance, color="k", lw=0.8, ls="--", label="tolerance")
    over = report.over_tolerance
    if over.any():
        ax.plot(
            t[over],
            np.full(over.sum(), report.force_tolerance),
            "r|",
            ms=12,
            label="over tolerance",
        )
    for time, _, kind in report.events:
        ax.axvline(time, color="0.7", lw=0.6, ls=":" if kind == "break" else "-")
    ax.set_ylabel("Newton-Euler residual")
    title = f"{report.source}: " + ("consistent" if report.consistent else "INCONSISTENT")
    if report.diagnosis:
        title += f" - {report.diagnosis[0].cause.replace('_', ' ')}"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax2 = fig.add_subplot(grid[1, :], sharex=ax)
    top = 2.0  # utilisation above is drawn at the top, marked (inf: a pulling contact)
    for j, name in enumerate(report.contact_names):
        u = report.utilisation[:, j]
        (line,) = ax2.plot(t, np.minimum(u, top), label=name)
        with np.errstate(invalid="ignore"):
            above = u > top
        if above.any():
            ax2.plot(
                t[above],
                np.full(above.sum(), top),
                "^",
                color=line.get_color(),
                ms=3,
                label=f"{name} above {top:g} (inf: pulling)",
            )
    ax2.axhline(1.0, color="k", lw=0.8, ls="--")
    # The axis holds every value drawn: the clipped ones at the top and the line at 1.
    with np.errstate(invalid="ignore"):
        finite = report.utilisation[np.isfinite(report.utilisation)]
        drawn = top if (report.utilisation > top).any() else (finite.max() if finite.size else 1)
    ax2.set_ylim(0, 1.1 * max(1.0, float(drawn)))
    ax2.set_ylabel("friction utilisation |f_t| / (mu f_n)")
    ax2.set_xlabel("time [s]")
    ax2.legend(fontsize=8)
    for j, name in enumerate(report.contact_names):
        ax3 = fig.add_subplot(grid[2, j])
        cop = report.cop[:, j]
        ok = np.isfinite(cop).all(axis=1)
        if ok.any():
            ax3.plot(cop[ok, 0], cop[ok, 1], ".", ms=2)
        if name in report.sole_half_sizes:
            X, Y = report.sole_half_sizes[name]
            cx, cy = report.sole_centers.get(name, (0.0, 0.0))
            ax3.plot(
                [cx + X, cx - X, cx - X, cx + X, cx + X],
                [cy + Y, cy + Y, cy - Y, cy - Y, cy + Y],
                "k-",
                lw=0.8,
            )
        ax3.set_title(f"CoP in {name} [m]", fontsize=9)
        ax3.set_aspect("equal", adjustable="datalim")
        ax3.grid(True, lw=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
    return fig
