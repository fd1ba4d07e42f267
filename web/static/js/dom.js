// DOM building and formatting helpers shared by the pages. Text always goes in as text nodes,
// never as HTML, so names and logs from the coordinator cannot inject markup.

// h('a', {href: '/x', class: 'y'}, 'text', child, ...) -> element. Attributes starting with
// "on" are event listeners; null/undefined/false children are skipped.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces the element's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A table with a header row; `rows` are arrays of cells (strings or nodes), or {cells, attrs}.
export function table(headers, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows.map((r) => Array.isArray(r)
      ? h('tr', {}, r.map((c) => h('td', {}, c)))
      : h('tr', r.attrs ?? {}, r.cells.map((c) => h('td', {}, c))))));
}

// "RUN_SUCCEEDED" / "SWEEP_RUNNING" -> "succeeded" / "running".
export function stateName(state) {
  return String(state ?? '').replace(/^(RUN|SWEEP)_/, '').toLowerCase();
}

export function badge(state) {
  const name = stateName(state);
  return h('span', {class: `badge state-${name}`}, name);
}

export function fmtLoss(v) {
  return v === undefined || v === null || !Number.isFinite(Number(v)) ? '–' : Number(v).toFixed(4);
}

// Milliseconds as "850 ms", "42.1 s", "3 min 12 s", "2 h 05 min".
export function fmtDuration(ms) {
  if (ms === undefined || ms === null || !Number.isFinite(Number(ms))) return '–';
  ms = Number(ms);
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

// An epoch-ms timestamp as local date and time; "–" for 0.
export function fmtTime(ms) {
  const n = Number(ms);
  return n > 0 ? new Date(n).toLocaleString() : '–';
}

// Mean and sample standard deviation of the finite numbers in `values`.
export function meanStd(values) {
  const xs = values.map(Number).filter(Number.isFinite);
  if (xs.length === 0) return {n: 0};
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length < 2) return {n: 1, mean};
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1);
  return {n: xs.length, mean, std: Math.sqrt(variance)};
}

// "3.2841 ± 0.0123" (± only with two or more values).
export function fmtMeanStd(stats, fmt = fmtLoss) {
  if (!stats || stats.n === 0) return '–';
  return stats.std === undefined ? fmt(stats.mean) : `${fmt(stats.mean)} ± ${fmt(stats.std)}`;
}

// A Variant.diff_json ({"knob": {"from": a, "to": b}}) as "knob: a → b" lines.
export function diffLines(diffJson) {
  let diff = {};
  try { diff = JSON.parse(diffJson || '{}'); } catch { return [String(diffJson)]; }
  return Object.entries(diff).map(([knob, d]) =>
    d && typeof d === 'object' && 'from' in d
      ? `${knob}: ${JSON.stringify(d.from)} → ${JSON.stringify(d.to)}`
      : `${knob}: ${JSON.stringify(d)}`);
}

export function progressBar(done, total, title) {
  const pct = total > 0 ? (100 * done) / total : 0;
  return h('div', {class: 'progress', title: title ?? `${done} of ${total}`},
    h('div', {class: 'progress-fill', style: `width: ${pct.toFixed(1)}%`}));
}
