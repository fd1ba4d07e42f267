// One sweep: progress and ETA, why queued runs wait, the variant table (and the statistical
// comparison when the coordinator has it), overlaid train and val loss per variant (mean line,
// min-max band across seeds, target line), and its runs. Everything updates live. A sweep of
// imported record logs (issue 39) says so and names each run's log; a sweep of this cluster's
// can put imported sweeps beside its own variants (?with=ID,ID): their rows in the comparison,
// their curves dashed on the charts.
import {getJson, getJsonOrNull, live, mergePoints, num, serverNow} from '../api.js';
import {aggregate, colorOf, drawChart, followWidth, grid, resample, xy} from '../chart.js';
import {badge, diffLines, fill, fmtDuration, fmtLoss, fmtMeanStd, fmtTime, h, meanStd,
  progressBar, stateName, table} from '../dom.js';
import {compareTable} from './compare.js';

const SERIES = 'train_loss,val_loss';
const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

// Chart settings and the imported sweeps shown beside this one, kept in the URL
// (?x=time&log=1&ema=0.6&seeds=each&with=3,7).
function readView() {
  const q = new URLSearchParams(location.search);
  const withIds = (q.get('with') ?? '').split(',').filter((x) => /^[1-9][0-9]{0,17}$/.test(x));
  return {x: q.get('x') === 'time' ? 'time' : 'step', log: q.get('log') === '1',
    ema: Math.min(0.99, Math.max(0, Number(q.get('ema') ?? 0) || 0)),
    seeds: q.get('seeds') === 'each' ? 'each' : 'mean', with: [...new Set(withIds)].slice(0, 8)};
}

function writeView(view) {
  const q = new URLSearchParams(location.search);
  q.set('x', view.x);
  q.set('log', view.log ? '1' : '0');
  q.set('ema', String(view.ema));
  q.set('seeds', view.seeds);
  if (view.with.length) q.set('with', view.with.join(','));
  else q.delete('with');
  history.replaceState(null, '', `${location.pathname}?${q}`);
}

function numIterations(variant) {
  try { return Number(JSON.parse(variant.config_json).num_iterations) || 0; } catch { return 0; }
}

// Fraction done (finished runs and running runs' steps), and an ETA from the time spent so far.
function progress(sweep, runs, variants) {
  const live = [...runs.values()].filter((r) => stateName(r.state) !== 'cancelled');
  if (!live.length) return {fraction: 0};
  let done = 0;
  let start = Infinity;
  for (const r of live) {
    const st = stateName(r.state);
    if (st === 'succeeded' || st === 'failed') done += 1;
    else if (st === 'running') {
      const total = numIterations(variants.get(r.variant_id) ?? {});
      done += total > 0 ? Math.min(1, num(r.summary?.steps) / total) : 0;
    }
    if (num(r.started_ms) > 0) start = Math.min(start, num(r.started_ms));
  }
  const fraction = done / live.length;
  const finishedSweep = FINISHED.has(stateName(sweep.state));
  if (finishedSweep || !(fraction > 0) || !Number.isFinite(start)) return {fraction};
  const elapsed = serverNow() - start;
  return {fraction, etaMs: (elapsed * (1 - fraction)) / fraction};
}

// What the baseline runs: its preset at its scale, or the script (path@hash, launch) of a script
// sweep, read from the baseline variant's config (else the first variant's).
function baselineText(sweep) {
  const vs = sweep.variants ?? [];
  const v = vs.find((x) => x.name === 'baseline') ?? vs[0];
  let script;
  try { script = v ? JSON.parse(v.config_json).script : undefined; } catch { script = undefined; }
  if (script) {
    return `script ${script.path}@${String(script.snapshot ?? '').slice(0, 12)} (${script.launch})`;
  }
  return `${sweep.baseline_preset || '(custom)'} @ ${sweep.scale}`;
}

function header(page) {
  const {sweep, runs, variants} = page;
  const c = sweep.counts ?? {};
  const done = (c.succeeded ?? 0) + (c.failed ?? 0) + (c.cancelled ?? 0);
  const p = progress(sweep, runs, variants);
  const reasons = (c.queued ?? 0) > 0 ? (sweep.waiting_reasons ?? []) : [];
  if (sweep.imported) return importedHeader(sweep);
  return [
    h('div', {class: 'page-head'},
      h('h1', {}, `Sweep ${sweep.id}: ${sweep.name}`), badge(sweep.state),
      (sweep.tags ?? []).map((t) => h('span', {class: 'tag'}, t))),
    h('p', {class: 'muted'},
      `baseline ${baselineText(sweep)} · dataset ${sweep.dataset || 'none'}` +
      ` · target ${sweep.target_val_loss} · ${sweep.seeds} seeds · ` +
      (sweep.gpus_per_run > 0 ? `${sweep.gpus_per_run} GPUs per run` : 'CPU runs') +
      ` · submitted ${fmtTime(num(sweep.created_ms))}`),
    h('div', {class: 'progress-row', id: 'sweep-progress'},
      progressBar(p.fraction * 100, 100, `${(100 * p.fraction).toFixed(0)}% of the training done`),
      h('span', {}, `${done}/${c.total ?? 0} runs finished · ${c.running ?? 0} running · ` +
        `${c.queued ?? 0} queued` + (c.failed ? ` · ${c.failed} failed` : '') +
        (p.etaMs !== undefined ? ` · ETA ${fmtDuration(p.etaMs)}` : ''))),
    reasons.length ? h('div', {class: 'notice', id: 'waiting-reasons'},
      h('strong', {}, 'Queued runs are waiting: '),
      h('ul', {}, reasons.map((r) => h('li',
        // "N queued runs: unschedulable: ..." (server/core/placement.h): no connected worker can
        // ever take them.
        r.includes(': unschedulable: ') ? {class: 'unschedulable'} : {}, r))))
      : null,
  ];
}

// An imported sweep: what it is and where its runs ran, instead of progress and run order.
function importedHeader(sweep) {
  const c = sweep.counts ?? {};
  return [
    h('div', {class: 'page-head'},
      h('h1', {}, `Sweep ${sweep.id}: ${sweep.name}`), badge(sweep.state),
      h('span', {class: 'tag imported'}, 'imported'),
      (sweep.tags ?? []).map((t) => h('span', {class: 'tag'}, t))),
    h('p', {class: 'notice', id: 'imported-note'},
      `Imported from ${c.total ?? 0} record logs: these runs ran elsewhere, on ` +
      `${sweep.imported_hardware ? `"${sweep.imported_hardware}" (as the importer said)`
        : 'hardware the importer did not name'}. ` +
      'Their times are compared with a sweep of this cluster only when that sweep ran on the ' +
      'same hardware; put them beside one from its page.'),
    h('p', {class: 'muted'}, `target ${sweep.target_val_loss} · ` +
      `${(sweep.variants ?? []).length} variants · imported ${fmtTime(num(sweep.created_ms))}`),
  ];
}

function variantRows(page) {
  return page.sweep.variants.map((v) => {
    const runs = [...page.runs.values()].filter((r) => r.variant_id === v.id);
    const count = (st) => runs.filter((r) => stateName(r.state) === st).length;
    const succeeded = runs.filter((r) => stateName(r.state) === 'succeeded');
    const loss = meanStd(succeeded.map((r) => r.summary?.final_val_loss).filter((x) => x !== undefined));
    const reached = succeeded.filter((r) => r.summary?.reached_target);
    const ttt = meanStd(reached.map((r) => r.summary?.time_to_target_ms));
    return {attrs: {'data-variant': v.name}, cells: [
      h('span', {}, h('span', {class: 'swatch', style: `background:${colorOf(v.index)}`}), v.name),
      h('span', {class: 'diff'}, diffLines(v.diff_json).map((d) => h('div', {}, d))),
      runs.length, count('succeeded') + count('failed') + count('cancelled'), count('running'),
      fmtMeanStd(loss),
      ttt.n ? `${fmtMeanStd(ttt, fmtDuration)} (${reached.length}/${succeeded.length} reached)`
        : (succeeded.length ? `not reached (0/${succeeded.length})` : '–')]};
  });
}

function runRows(page) {
  const names = new Map(page.sweep.variants.map((v) => [v.id, v.name]));
  return [...page.runs.values()].sort((a, b) => num(a.id) - num(b.id)).map((r) => [
    h('a', {href: `/runs/${r.id}`}, r.id), names.get(r.variant_id) ?? r.variant_name, r.seed,
    badge(r.state), num(r.summary?.steps), fmtLoss(r.summary?.final_val_loss),
    r.summary?.reached_target ? fmtDuration(r.summary?.time_to_target_ms) : '–',
    r.imported ? h('span', {class: 'imported-log', title: r.imported.log_sha256 ?? ''},
      `imported: ${r.imported.file_name}`) : (r.worker_id || '–'), r.error || '']);
}

// One chart's data: per variant (mean + band) or per run, on one x grid.
function chartSpec(page, metric, title) {
  const view = page.view;
  const xKey = view.x === 'time' ? 'train_time_ms' : 'step';
  const scale = view.x === 'time' ? 1 / 1000 : 1;
  const runs = [...page.runs.values()].filter((r) => page.curves.has(num(r.id)));
  const curves = runs.map((r) => {
    const c = xy(page.curves.get(num(r.id)), xKey, metric, view.ema);
    return {run: r, xs: c.xs.map((x) => x * scale), ys: c.ys};
  });
  // Imported sweeps' variants (dashed below) share the grid.
  const imported = importedCurves(page, xKey, metric, scale);
  const xs = grid([...curves, ...imported.flatMap((v) => v.curves)]);
  const columns = curves.map((c) => resample(c, xs));
  const series = [];
  const data = [xs];
  const bands = [];
  if (view.seeds === 'each') {
    curves.forEach((c, i) => {
      const v = page.variants.get(c.run.variant_id);
      series.push({label: `${v?.name ?? c.run.variant_name} s${c.run.seed}`, color: colorOf(v?.index ?? 0), width: 1});
      data.push(columns[i]);
    });
  } else {
    for (const v of page.sweep.variants) {
      const mine = columns.filter((_, i) => curves[i].run.variant_id === v.id);
      const agg = aggregate(mine, xs.length);
      series.push({label: v.name, color: colorOf(v.index)});
      data.push(agg.mean);
      if (mine.length > 1) bands.push({lo: agg.lo, hi: agg.hi, color: colorOf(v.index)});
    }
  }
  // Imported sweeps' variants, dashed: the mean of their logs' curves.
  imported.forEach((v, k) => {
    const agg = aggregate(v.curves.map((c) => resample(c, xs)), xs.length);
    const color = colorOf(page.sweep.variants.length + k);
    series.push({label: v.label, color, dash: [8, 5], width: 2});
    data.push(agg.mean);
  });
  return {title, xLabel: view.x === 'time' ? 'training time (s)' : 'step', yLabel: 'loss (nats)',
    logY: view.log, series, data, bands, target: Number(page.sweep.target_val_loss)};
}

// Per imported variant shown beside this sweep: its label and its runs' curves as (xs, ys).
function importedCurves(page, xKey, metric, scale) {
  const out = [];
  for (const im of page.imported) {
    for (const v of im.sweep.variants ?? []) {
      const curves = [...im.runs.values()].filter((r) => r.variant_id === v.id &&
        im.curves.has(num(r.id))).map((r) => {
        const c = xy(im.curves.get(num(r.id)), xKey, metric, page.view.ema);
        return {xs: c.xs.map((x) => x * scale), ys: c.ys};
      });
      if (curves.length) out.push({label: `${v.name}@imported-${im.sweep.id}`, curves});
    }
  }
  return out;
}

function controls(page, redraw) {
  const v = page.view;
  const change = (fn) => (e) => { fn(e.target); writeView(v); redraw(); };
  return h('div', {class: 'controls', id: 'chart-controls'},
    h('label', {}, 'x ', h('select', {id: 'x-axis', onchange: change((t) => { v.x = t.value; })},
      h('option', {value: 'step', selected: v.x === 'step'}, 'step'),
      h('option', {value: 'time', selected: v.x === 'time'}, 'training time'))),
    h('label', {}, h('input', {type: 'checkbox', id: 'log-y', checked: v.log,
      onchange: change((t) => { v.log = t.checked; })}), ' log y'),
    h('label', {}, 'smoothing ', h('input', {type: 'range', id: 'ema', min: 0, max: 0.99, step: 0.01,
      value: v.ema, oninput: change((t) => { v.ema = Number(t.value); })})),
    h('label', {}, 'seeds ', h('select', {id: 'seeds', onchange: change((t) => { v.seeds = t.value; })},
      h('option', {value: 'mean', selected: v.seeds === 'mean'}, 'mean and band'),
      h('option', {value: 'each', selected: v.seeds === 'each'}, 'each run'))));
}

function layout(root, page) {
  page.el = {
    head: h('section', {id: 'sweep-head'}),
    variants: h('section', {id: 'variants'}),
    picker: h('div', {class: 'controls', id: 'compare-with'}),
    compare: h('section', {id: 'compare'}),
    train: h('div', {class: 'chart', id: 'chart-train'}),
    val: h('div', {class: 'chart', id: 'chart-val'}),
    runs: h('section', {id: 'runs'}),
    events: h('ul', {class: 'events', id: 'events'}),
  };
  fill(root, page.el.head, page.el.variants, page.el.picker, page.el.compare,
    h('section', {}, h('h2', {}, 'Loss curves'), controls(page, () => drawCharts(page)),
      h('div', {class: 'charts'}, page.el.train, page.el.val)),
    page.el.runs, h('section', {}, h('h2', {}, 'Events'), page.el.events));
  followWidth(root);
}

function drawTables(page) {
  fill(page.el.head, header(page));
  fill(page.el.variants, h('h2', {}, 'Variants'), table(
    ['variant', 'diff vs baseline', 'runs', 'finished', 'running', 'final val loss', 'time to target'],
    variantRows(page), {class: 'list', id: 'variant-table'}));
  fill(page.el.runs, h('h2', {}, 'Runs'), table(
    ['run', 'variant', 'seed', 'state', 'steps', 'final val loss', 'time to target', 'worker', 'error'],
    runRows(page), {class: 'list', id: 'run-table'}));
}

function drawCharts(page) {
  for (const [el, metric, title] of [[page.el.train, 'train_loss', 'train loss'],
    [page.el.val, 'val_loss', 'val loss']]) {
    const spec = chartSpec(page, metric, title);
    if (spec.data[0].length) drawChart(el, spec);
    else fill(el, h('p', {class: 'muted'}, `${title}: no points yet`));
  }
  page.el.train.closest('section').dataset.points = String(
    [...page.curves.values()].reduce((n, c) => n + c.step.length, 0));
}

// Coalesces redraws: at most one per animation frame, and charts at most twice a second.
function scheduler(page) {
  let tables = false;
  let charts = false;
  let lastCharts = 0;
  const run = () => {
    if (tables) drawTables(page);
    tables = false;
    if (charts && performance.now() - lastCharts > 500) {
      drawCharts(page);
      charts = false;
      lastCharts = performance.now();
    }
    if (charts) setTimeout(() => requestAnimationFrame(run), 500);
  };
  return {
    tables() { if (!tables) requestAnimationFrame(run); tables = true; },
    charts() { if (!charts) requestAnimationFrame(run); charts = true; },
  };
}

async function refreshCompare(page) {
  const withIds = page.view.with.join(',');
  const query = withIds ? `?with=${withIds}` : '';
  try {
    const compare = await getJsonOrNull(`/api/sweeps/${page.sweep.id}/compare${query}`);
    if (compare) {
      fill(page.el.compare, h('h2', {}, 'Comparison with the baseline'), compareTable(compare));
    }
  } catch (e) {
    fill(page.el.compare, h('h2', {}, 'Comparison with the baseline'),
      h('p', {class: 'error', id: 'compare-error'}, String(e.message ?? e)));
  }
}

// The imported sweeps this sweep's page may put beside its own (same target), as checkboxes;
// a change reloads the comparison and the dashed curves, and is kept in the URL.
async function drawImportedPicker(page) {
  if (page.sweep.imported) return;
  const all = (await getJson('/api/sweeps?limit=1000')).sweeps ?? [];
  const target = Number(page.sweep.target_val_loss);
  const choices = all.filter((s) => s.imported && Math.abs(Number(s.target_val_loss) - target) < 1e-9);
  if (!choices.length) {
    fill(page.el.picker);
    return;
  }
  const boxes = choices.map((s) => h('label', {class: 'with-choice'},
    h('input', {type: 'checkbox', value: s.id, 'data-with': s.id,
      checked: page.view.with.includes(String(s.id)),
      onchange: async (e) => {
        const id = String(e.target.value);
        page.view.with = e.target.checked ? [...page.view.with.filter((x) => x !== id), id].slice(0, 8)
          : page.view.with.filter((x) => x !== id);
        writeView(page.view);
        await Promise.all([refreshCompare(page), loadImported(page)]);
        drawCharts(page);
      }}),
    ` ${s.id} ${s.name} (${s.imported_hardware || 'hardware not said'})`));
  fill(page.el.picker, h('span', {class: 'muted'}, 'Beside imported record logs: '), boxes);
}

// Loads the curves of the imported sweeps in view.with (each once).
async function loadImported(page) {
  const wanted = page.view.with;
  const have = new Map(page.imported.map((im) => [String(im.sweep.id), im]));
  const next = [];
  for (const id of wanted) {
    if (have.has(id)) { next.push(have.get(id)); continue; }
    const sweep = await getJsonOrNull(`/api/sweeps/${id}`);
    if (!sweep || !sweep.imported) continue;  // the comparison names what is wrong with it
    const runs = (await getJson(`/api/sweeps/${id}/runs`)).runs ?? [];
    const snapshot = await getJson(`/api/sweeps/${id}/metrics?series=${SERIES}&max_points=1000`);
    const curves = new Map();
    for (const c of snapshot.runs) mergePoints(curves, c.run_id, c.attempt_id, c.columns);
    next.push({sweep, runs: new Map(runs.map((r) => [num(r.id), r])), curves});
  }
  page.imported = next;
}

function addEvent(page, e) {
  const run = num(e.run_id) ? ` run ${e.run_id}` : '';
  page.el.events.prepend(h('li', {class: `event-${e.kind}`},
    h('span', {class: 'muted'}, `${fmtTime(num(e.time_ms))}${run} `), e.message));
  while (page.el.events.children.length > 100) page.el.events.lastChild.remove();
}

async function loadCurves(page) {
  const snapshot = await getJson(`/api/sweeps/${page.sweep.id}/metrics?series=${SERIES}&max_points=1000`);
  performance.mark('ablate:data-loaded');
  for (const c of snapshot.runs) mergePoints(page.curves, c.run_id, c.attempt_id, c.columns);
  for (const p of page.pending.splice(0)) mergePoints(page.curves, p.run_id, p.attempt_id, p.columns, p.reset);
  page.loaded = true;
  drawCharts(page);
  performance.mark('ablate:charts-drawn');
  document.getElementById('app').dataset.ready = '1';
}

export async function render(root, id) {
  const sweep = await getJson(`/api/sweeps/${encodeURIComponent(id)}`);
  document.title = `${sweep.name} · ablate`;
  const runs = (await getJson(`/api/sweeps/${sweep.id}/runs`)).runs ?? [];
  const page = {sweep, view: readView(), runs: new Map(runs.map((r) => [num(r.id), r])),
    variants: new Map(sweep.variants.map((v) => [v.id, v])), curves: new Map(), pending: [],
    loaded: false, imported: []};
  layout(root, page);
  drawTables(page);
  const redraw = scheduler(page);
  refreshCompare(page);
  drawImportedPicker(page).catch((e) => {
    fill(page.el.picker, h('p', {class: 'error'}, `imported sweeps: ${e.message ?? e}`));
  });
  const importedLoaded = loadImported(page).catch((e) => {
    fill(page.el.picker, h('p', {class: 'error'}, `imported curves: ${e.message ?? e}`));
  });
  let compareTimer = 0;
  live(`/api/live/sweeps/${sweep.id}?series=${SERIES}`, {
    sweep: (s) => { page.sweep = {...s, variants: page.sweep.variants}; redraw.tables(); },
    run: (r) => {
      const before = page.runs.get(num(r.id));
      // The live stream's runs do not carry the imported log's facts; the listing's do.
      if (before?.imported && !r.imported) r.imported = before.imported;
      page.runs.set(num(r.id), r);
      redraw.tables();
      if (before && before.state !== r.state) {
        clearTimeout(compareTimer);
        compareTimer = setTimeout(() => refreshCompare(page), 1000);
      }
    },
    points: (p) => {
      if (!page.loaded) page.pending.push(p);
      else { mergePoints(page.curves, p.run_id, p.attempt_id, p.columns, p.reset); redraw.charts(); }
    },
    event: (e) => addEvent(page, e),
    ready: () => importedLoaded.then(() => loadCurves(page)),
  });
}
