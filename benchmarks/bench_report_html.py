"""The HTML report in headless Chromium: page size, first paint, the plots drawn.

A 4,000-sample log (the shipped squat, four times over) with the right foot's wrench
sign-flipped, 40 samples unreadable (NaN) and the left foot unloaded for 0.2 s (tangential
noise only): its report page
is opened ``--loads`` times in Debian's Chromium (``/usr/bin/chromium``, through Playwright)
with a 1400 x 900 window, and once at 400 px wide. Printed, one row: the page's size, the
median first contentful paint (``performance.getEntriesByName('first-contentful-paint')``),
when the verdict banner was painted (Element Timing), when the last plot was drawn, and the
page's width at a 400 px viewport. ``--page PATH`` measures a page written elsewhere.

    python benchmarks/bench_report_html.py [--loads 5] [--page PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
from pathlib import Path

import numpy as np

from wholebody.check.analysis import check_trajectory
from wholebody.io.profile import load_profile
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]

# Resolves with the first contentful paint, the verdict's paint (Element Timing) and the
# moment the plots were drawn (the page sets data-drawn on <body>) [ms since navigation].
TIMES = """() => new Promise(resolve => {
  const fcp = () => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime;
  const seen = {};
  new PerformanceObserver(list => list.getEntries().forEach(e => {
    seen[e.identifier] = e.renderTime || e.loadTime; })).observe({type: 'element', buffered: true});
  const start = performance.now();
  const wait = () => document.body.dataset.drawn && fcp() !== undefined
      && (seen.verdict !== undefined || performance.now() - start > 3000)
    ? resolve({fcp: fcp(), verdict: seen.verdict, drawn: Number(document.body.dataset.drawn)})
    : setTimeout(wait, 20);
  wait();
})"""


def faulty_log(n_repeats: int = 4) -> Trajectory:
    """The shipped squat ``n_repeats`` times over, right foot sign-flipped, 40 NaN samples, the
    left foot without normal force for 100 samples."""
    traj = Trajectory.load(data_dir() / "humanoid_squat.npz")
    n = len(traj.time)
    dt = float(traj.time[1] - traj.time[0])

    def tile(x):
        return np.concatenate([x] * n_repeats)

    q, v, a, W = tile(traj.q), tile(traj.v), tile(traj.a), tile(traj.contact_wrenches)
    W[:, 1] *= -1.0
    W[1500:1600, 0] = 0.0  # tangential noise only: no normal force, utilisation not applicable
    W[1500:1600, 0, :2] = np.random.default_rng(0).normal(scale=0.5, size=(100, 2))
    q[700:740, 3:7] = np.nan
    return dataclasses.replace(
        traj,
        time=np.arange(n * n_repeats) * dt,
        q=q,
        v=v,
        a=a,
        tau=None if traj.tau is None else tile(traj.tau),
        contact_wrenches=W,
        contact_active=None,
        source="squat x4, right foot sign-flipped, NaN samples, left foot unloaded",
    )


def measure(page_path: Path, loads: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    profile_dir = tempfile.mkdtemp(prefix="bench-chromium-")
    runs = []
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile_dir,
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            for _ in range(loads):
                page = context.new_page()
                page.goto(page_path.as_uri())
                runs.append(page.evaluate(TIMES))
                page.close()
            page = context.new_page()
            page.set_viewport_size({"width": 400, "height": 800})
            page.goto(page_path.as_uri())
            page.evaluate(TIMES)
            width = page.evaluate("document.documentElement.scrollWidth")
        finally:
            context.close()
            shutil.rmtree(profile_dir, ignore_errors=True)

    def median(key):
        got = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(got) if got else float("nan")

    return {
        "size_MB": page_path.stat().st_size / 1e6,
        "fcp_s": median("fcp") / 1e3,
        "verdict_s": median("verdict") / 1e3,
        "drawn_s": median("drawn") / 1e3,
        "width_400": width,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--page", type=Path, help="measure this page instead")
    args = parser.parse_args()
    page = args.page
    if page is None:
        profile = load_profile(models_dir() / "humanoid.toml")
        report = check_trajectory(profile.robot, faulty_log(), profile.contacts)
        page = Path(tempfile.mkdtemp(prefix="bench-html-")) / "report.html"
        report.to_html(page)
    m = measure(page, args.loads)
    print("page [MB]  first paint [s]  verdict painted [s]  plots drawn [s]  width at 400 px")
    print(
        f"{m['size_MB']:9.2f}  {m['fcp_s']:15.3f}  {m['verdict_s']:19.3f}  {m['drawn_s']:15.3f}"
        f"  {m['width_400']:15d}"
    )


if __name__ == "__main__":
    main()
