// Loss and step-time charts with uPlot (served from node_modules by the coordinator). Turns
// per-run curves into what a chart shows: optional EMA smoothing, curves of several seeds brought
// onto one x grid, and per variant the mean line with a min-max band across seeds.
import uPlot from '/vendor/uplot/uPlot.esm.js';

export const PALETTE = ['#222222', '#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd',
  '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f', '#393b79', '#637939', '#ad494a'];

export function colorOf(index) {
  return PALETTE[index % PALETTE.length];
}

// Debiased exponential moving average (as TensorBoard's smoothing); alpha 0 = none.
export function ema(values, alpha) {
  if (!(alpha > 0)) return values;
  const out = new Array(values.length);
  let avg = 0;
  let weight = 0;
  for (let i = 0; i < values.length; i++) {
    avg = alpha * avg + (1 - alpha) * values[i];
    weight = alpha * weight + (1 - alpha);
    out[i] = avg / weight;
  }
  return out;
}

// The (x, y) pairs of one run's curve where both are known, x ascending, y smoothed.
export function xy(curve, xKey, yKey, alpha) {
  const xs = [];
  const ys = [];
  const xcol = curve?.[xKey] ?? [];
  const ycol = curve?.[yKey] ?? [];
  for (let i = 0; i < xcol.length; i++) {
    const x = xcol[i];
    const y = ycol[i];
    if (x === null || y === null || y === undefined || !Number.isFinite(y)) continue;
    if (xs.length && x <= xs[xs.length - 1]) continue;
    xs.push(x);
    ys.push(y);
  }
  return {xs, ys: ema(ys, alpha)};
}

// Linear interpolation of (xs, ys) at x; null outside the curve's range.
function interpolate(xs, ys, x, hint) {
  if (!xs.length || x < xs[0] || x > xs[xs.length - 1]) return {y: null, hint};
  let i = hint;
  while (i + 1 < xs.length && xs[i + 1] < x) i++;
  if (xs[i] === x || i + 1 >= xs.length) return {y: ys[i], hint: i};
  const t = (x - xs[i]) / (xs[i + 1] - xs[i]);
  return {y: ys[i] + t * (ys[i + 1] - ys[i]), hint: i};
}

// One x grid for curves of different lengths and x values: every x when there are few, else
// `size` evenly spaced values over their range.
export function grid(curves, size = 1000) {
  const all = new Set();
  let lo = Infinity;
  let hi = -Infinity;
  for (const c of curves) {
    for (const x of c.xs) all.add(x);
    if (c.xs.length) {
      lo = Math.min(lo, c.xs[0]);
      hi = Math.max(hi, c.xs[c.xs.length - 1]);
    }
  }
  if (all.size <= 1.5 * size) return [...all].sort((a, b) => a - b);
  return Array.from({length: size}, (_, i) => lo + ((hi - lo) * i) / (size - 1));
}

export function resample(curve, xgrid) {
  const out = new Array(xgrid.length);
  let hint = 0;
  for (let i = 0; i < xgrid.length; i++) {
    const r = interpolate(curve.xs, curve.ys, xgrid[i], hint);
    out[i] = r.y;
    hint = r.hint;
  }
  return out;
}

// Mean, min and max across `columns` (arrays on one grid) at each x; null where none has a value.
export function aggregate(columns, length) {
  const mean = new Array(length).fill(null);
  const lo = new Array(length).fill(null);
  const hi = new Array(length).fill(null);
  for (let i = 0; i < length; i++) {
    let sum = 0;
    let n = 0;
    for (const col of columns) {
      const v = col[i];
      if (v === null) continue;
      sum += v;
      n++;
      lo[i] = lo[i] === null ? v : Math.min(lo[i], v);
      hi[i] = hi[i] === null ? v : Math.max(hi[i], v);
    }
    if (n) mean[i] = sum / n;
  }
  return {mean, lo, hi};
}

// Draws each band (lo/hi arrays on the x data) under the lines, translucent.
function bandsPlugin(getBands) {
  return {hooks: {drawClear: [(u) => {
    const ctx = u.ctx;
    const {left, top, width, height} = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const band of getBands()) {
      const xs = u.data[0];
      ctx.beginPath();
      let started = false;
      const back = [];
      for (let i = 0; i < xs.length; i++) {
        if (band.lo[i] === null || band.hi[i] === null) continue;
        const x = u.valToPos(xs[i], 'x', true);
        const y = u.valToPos(band.hi[i], 'y', true);
        if (!started) ctx.moveTo(x, y); else ctx.lineTo(x, y);
        started = true;
        back.push([x, u.valToPos(band.lo[i], 'y', true)]);
      }
      for (let i = back.length - 1; i >= 0; i--) ctx.lineTo(back[i][0], back[i][1]);
      ctx.closePath();
      ctx.globalAlpha = 0.15;
      ctx.fillStyle = band.color;
      if (started) ctx.fill();
    }
    ctx.restore();
  }]}};
}

// A dashed horizontal line at the target loss, labelled.
function targetPlugin(getTarget) {
  return {hooks: {draw: [(u) => {
    const target = getTarget();
    if (!(target > 0)) return;
    const [ymin, ymax] = [u.scales.y.min, u.scales.y.max];
    if (target < ymin || target > ymax) return;
    const y = u.valToPos(target, 'y', true);
    const {left, width} = u.bbox;
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = '#b00020';
    ctx.setLineDash([6, 4]);
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + width, y);
    ctx.stroke();
    ctx.fillStyle = '#b00020';
    ctx.font = `${11 * devicePixelRatio}px sans-serif`;
    ctx.fillText(`target ${target}`, left + 4 * devicePixelRatio, y - 4 * devicePixelRatio);
    ctx.restore();
  }]}};
}

// A uPlot chart in `el` (replacing what it had). spec: {title, xLabel, yLabel, logY, xTime
// (x in Unix seconds, shown as dates), series: [{label, color, width?, dash?, pointsOnly?}],
// data: [x, ...ys], bands: [{lo, hi, color}], target}.
export function drawChart(el, spec) {
  el.replaceChildren();
  const width = Math.max(320, el.clientWidth || 640);
  const opts = {
    title: spec.title,
    width,
    height: spec.height ?? 320,
    scales: {x: {time: !!spec.xTime}, y: {distr: spec.logY ? 3 : 1}},
    axes: [{label: spec.xLabel}, {label: spec.yLabel, size: 60}],
    series: [{label: spec.xLabel}, ...spec.series.map((s) => ({
      label: s.label, stroke: s.color, width: s.pointsOnly ? 0 : (s.width ?? 1.5),
      spanGaps: !s.pointsOnly, dash: s.dash,
      points: s.pointsOnly ? {show: true, size: 8, fill: s.color} : {show: false}}))],
    legend: {live: true},
    plugins: [bandsPlugin(() => spec.bands ?? []), targetPlugin(() => spec.target)],
  };
  const chart = new uPlot(opts, spec.data, el);
  el.uplot = chart;  // for tests and the page's resize handling
  el.dataset.series = String(spec.series.length);
  return chart;
}

// Resizes every chart under `root` to its container's width when the window changes.
export function followWidth(root) {
  let pending = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      for (const el of root.querySelectorAll('.chart')) {
        if (el.uplot) el.uplot.setSize({width: Math.max(320, el.clientWidth), height: el.uplot.height});
      }
    });
  });
}
