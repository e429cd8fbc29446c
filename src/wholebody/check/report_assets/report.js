/* wholebody check report: the linked time plots, drawn with uPlot once the page has painted.
 *
 * Each <div class="plots" data-data="ID"> is one log's figure; its data is the JSON in
 * <script type="application/json" id="ID"> (wholebody/check/_report_figure.py says its shape).
 * The plots of a figure share their time axis: a drag zooms one and all follow, a double
 * click zooms back out, and the cursor moves on all of them. Shaded spans (flagged, over
 * tolerance, excused samples) say their reasons in a tip under the cursor. The uPlot objects
 * of a figure are kept on its <div> as `plots`; <body data-drawn> is set when all are drawn.
 */
(function () {
  "use strict";

  // Three significant digits, as Python's "{:.3g}" writes them; subnormal left-overs are 0.
  function fmt(v) {
    if (v == null || Number.isNaN(v)) return "–";
    if (!Number.isFinite(v)) return v > 0 ? "not applicable" : "–";
    const a = Math.abs(v);
    if (a < 2.3e-308) return "0";
    const e = Math.floor(Math.log10(a));
    if (e < -4 || e >= 3) {
      const [m, x] = v.toExponential(2).split("e");
      const mant = m.includes(".") ? m.replace(/0+$/, "").replace(/\.$/, "") : m;
      const exp = Number(x);
      return mant + "e" + (exp < 0 ? "-" : "+") + String(Math.abs(exp)).padStart(2, "0");
    }
    return String(Number(v.toPrecision(3)));
  }

  // Grid lines of a log axis: powers of ten, at most six.
  function decades(lo, hi) {
    const a = Math.ceil(Math.log10(lo) - 1e-9);
    const b = Math.floor(Math.log10(hi) + 1e-9);
    const step = Math.max(1, Math.ceil((b - a + 1) / 6));
    const out = [];
    for (let e = a; e <= b; e += step) out.push(Number("1e" + e));
    return out;
  }

  function shade(u, shades) {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const s of shades) {
      ctx.fillStyle = s.color;
      ctx.globalAlpha = s.alpha;
      for (const [x0, x1] of s.spans) {
        const a = u.valToPos(x0, "x", true);
        const b = u.valToPos(x1, "x", true);
        if (b >= left && a <= left + width) ctx.fillRect(a, top, Math.max(b - a, 1), height);
      }
    }
    ctx.restore();
  }

  function hlines(u, lines) {
    const ctx = u.ctx;
    const { left, width } = u.bbox;
    ctx.save();
    ctx.strokeStyle = "#c00";
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    ctx.setLineDash([6, 4]);
    for (const y of lines) {
      const p = Math.round(u.valToPos(y, "y", true)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(left, p);
      ctx.lineTo(left + width, p);
      ctx.stroke();
    }
    ctx.restore();
  }

  // The reasons of the shaded spans under the cursor, in a tip kept inside the plot.
  function tip(u, shades, box) {
    const left = u.cursor.left;
    const said = [];
    if (left != null && left >= 0 && box.matches(":hover")) {
      const x = u.posToVal(left, "x");
      for (const s of shades) {
        for (const [x0, x1, text] of s.spans) if (x >= x0 && x <= x1) said.push(text);
      }
    }
    const el = box.tipEl;
    el.textContent = said.join("\n");
    el.style.display = said.length ? "block" : "none";
    if (!said.length) return;
    const room = u.over.clientWidth;
    el.style.left = Math.max(0, Math.min(left + 12, room - el.offsetWidth)) + "px";
    el.style.top = Math.min(u.cursor.top + 12, Math.max(0, u.over.clientHeight - 20)) + "px";
  }

  function options(p, width, axisSize, sync, shades, box) {
    const series = [{ label: "time", value: (u, v) => (v == null ? "–" : v.toFixed(3) + " s") }];
    for (const s of p.series) {
      const y = s.y;
      const exact = s.exact;
      series.push({
        label: s.label,
        stroke: s.color,
        width: s.width || 1.5,
        paths: s.points ? () => null : undefined,
        points: s.points ? { show: true, size: 6, fill: s.color } : { show: false },
        value: (u, v, si, i) => {
          if (i == null) return "–";
          if (exact && y[i] != null && exact[i] == null) return "n/a";
          return fmt(exact ? exact[i] : v);
        },
      });
    }
    const lines = p.lines || [];
    const yScale = p.log
      ? {
          distr: 3,
          range: (u, lo, hi) =>
            uPlot.rangeLog(Math.min(lo ?? lines[0], ...lines), Math.max(hi ?? lines[0], ...lines), 10, true),
        }
      : p.range
        ? { range: () => p.range }
        : {
            range: (u, lo, hi) =>
              uPlot.rangeNum(Math.min(lo ?? 0, ...lines), Math.max(hi ?? 1, ...lines), 0.1, true),
          };
    const yAxis = { size: axisSize, values: (u, vals) => vals.map(fmt) };
    if (p.log) {
      yAxis.splits = (u, ai, lo, hi) => decades(lo, hi);
      yAxis.filter = (u, splits) => splits; // every power of ten labelled
    }
    if (p.ticks) {
      yAxis.splits = () => p.ticks.map((_, i) => i);
      yAxis.values = (u, vals) => vals.map((v) => p.ticks[v] ?? "");
    }
    return {
      width,
      height: p.height || 170,
      series,
      scales: { x: { time: false }, y: yScale },
      axes: [{ values: (u, vals) => vals.map(fmt) }, yAxis],
      cursor: { sync: { key: sync }, drag: { x: true, y: false } },
      legend: { live: true },
      hooks: {
        drawClear: [(u) => shade(u, shades)],
        draw: [(u) => hlines(u, lines)],
        setCursor: [(u) => tip(u, shades, box)],
      },
    };
  }

  function draw(root) {
    const d = JSON.parse(document.getElementById(root.dataset.data).textContent);
    const data = (p) => [d.t, ...p.series.map((s) => s.y)];
    const names = d.plots.flatMap((p) => p.ticks || []);
    const axisSize = Math.max(56, 14 + 7 * Math.max(0, ...names.map((n) => n.length)));
    const plots = [];
    let syncing = false;
    for (const p of d.plots) {
      const box = document.createElement("div");
      box.className = "plot";
      const title = document.createElement("h3");
      title.textContent = p.title;
      box.appendChild(title);
      root.appendChild(box);
      const opts = options(p, root.clientWidth, axisSize, root.id, d.shades, box);
      // Zoom one, all follow (a double click zooms out on all).
      opts.hooks.setScale = [
        (u, key) => {
          if (key !== "x" || syncing) return;
          syncing = true;
          for (const o of plots) if (o !== u) o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max });
          syncing = false;
        },
      ];
      const u = new uPlot(opts, data(p), box);
      box.tipEl = document.createElement("div");
      box.tipEl.className = "tip";
      u.over.appendChild(box.tipEl);
      plots.push(u);
    }
    root.plots = plots;
    return plots;
  }

  function drawAll() {
    const all = [];
    for (const root of document.querySelectorAll("div.plots[data-data]")) all.push(...draw(root));
    let pending = 0;
    addEventListener("resize", () => {
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(() => {
        for (const u of all) u.setSize({ width: u.root.parentNode.parentNode.clientWidth, height: u.height });
      });
    });
    document.body.dataset.drawn = String(performance.now());
  }

  // After the first paint: the verdict, the diagnosis and the evidence show first.
  requestAnimationFrame(() => setTimeout(drawAll, 0));
})();
