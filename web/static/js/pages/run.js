// One run: summary, loss curves and step times (live), its config against the baseline,
// attempts, the trainer's stderr tail and the run's events; for an imported run, its record log.
import {getJson, live, mergePoints, num} from '../api.js';
import {drawChart, followWidth, xy} from '../chart.js';
import {badge, diffLines, fill, fmtDuration, fmtLoss, fmtTime, h, stateName, table} from '../dom.js';

function summary(run, sweep) {
  const s = run.summary ?? {};
  return h('div', {class: 'summary'},
    h('div', {class: 'page-head'}, h('h1', {}, `Run ${run.id}`), badge(run.state)),
    h('p', {}, 'sweep ', h('a', {href: `/sweeps/${run.sweep_id}`}, `${run.sweep_id} ${sweep?.name ?? ''}`),
      ` · variant ${run.variant_name} · seed ${run.seed} · ` +
      (run.imported ? 'imported from a record log (it ran elsewhere)'
        : `worker ${run.worker_id || '–'} · trainer failures ${run.attempts_used}`),
      run.imported ? h('span', {class: 'tag imported'}, 'imported') : null),
    h('dl', {class: 'facts'},
      h('dt', {}, 'final val loss'), h('dd', {}, fmtLoss(s.final_val_loss)),
      h('dt', {}, 'time to target'), h('dd', {},
        s.reached_target ? `${fmtDuration(s.time_to_target_ms)} (step ${s.target_step})` : 'not reached'),
      h('dt', {}, 'steps'), h('dd', {}, num(s.steps)),
      h('dt', {}, 'mean step'), h('dd', {}, fmtDuration(s.mean_step_ms)),
      h('dt', {}, 'training time'), h('dd', {}, fmtDuration(s.train_time_ms)),
      h('dt', {}, 'started'), h('dd', {}, fmtTime(num(run.started_ms))),
      h('dt', {}, 'finished'), h('dd', {}, fmtTime(num(run.finished_ms)))),
    run.error ? h('p', {class: 'error'}, run.error) : null);
}

// Knob-by-knob: every knob whose value differs from the baseline variant's config, then the
// whole config.
function configDiff(run, baseline) {
  let mine = {};
  let base = {};
  try { mine = JSON.parse(run.config_json || '{}'); } catch { /* shown raw below */ }
  try { base = JSON.parse(baseline?.config_json || '{}'); } catch { /* no baseline */ }
  const changed = Object.keys(mine).filter((k) => k !== 'seed' &&
    JSON.stringify(mine[k]) !== JSON.stringify(base[k]));
  const rows = changed.map((k) => ({attrs: {'data-knob': k},
    cells: [k, JSON.stringify(base[k]), JSON.stringify(mine[k])]}));
  return h('section', {id: 'config'}, h('h2', {}, 'Config'),
    baseline === undefined ? h('p', {class: 'muted'}, 'No baseline variant to compare with.')
      : changed.length === 0 ? h('p', {id: 'config-diff-empty'}, 'Same as the baseline (seed aside).')
        : table(['knob', 'baseline', 'this run'], rows, {class: 'list', id: 'config-diff'}),
    h('details', {}, h('summary', {}, 'full config'),
      h('pre', {class: 'config'}, JSON.stringify(mine, null, 2))));
}

// A script run (issue 14): the snapshot it ran, by hash, and its variant's changes against the
// baseline, with the unified diff of a changed script.
function scriptSection(run, sweep) {
  let config = {};
  try { config = JSON.parse(run.config_json || '{}'); } catch { return null; }
  const s = config.script;
  if (!s || typeof s !== 'object') return null;
  const variant = (sweep.variants ?? []).find((v) => String(v.id) === String(run.variant_id));
  let diff = {};
  try { diff = JSON.parse(variant?.diff_json || '{}'); } catch { /* shown as no diff */ }
  return h('section', {id: 'script'}, h('h2', {}, 'Script'),
    h('dl', {class: 'summary'},
      h('dt', {}, 'script'), h('dd', {}, s.path ?? ''),
      h('dt', {}, 'snapshot (sha256)'), h('dd', {id: 'script-hash'}, s.snapshot ?? ''),
      h('dt', {}, 'launch'), h('dd', {}, s.launch ?? ''),
      h('dt', {}, 'vs baseline'), h('dd', {id: 'script-changes'},
        diffLines(variant?.diff_json).join('; ') || 'same as the baseline')),
    diff.script?.diff ? h('pre', {class: 'log', id: 'script-diff'}, diff.script.diff) : null);
}

// A run of an imported sweep (issue 39): the record log it was read from, as the log says it.
function importedSection(run, sweep) {
  const im = run.imported;
  if (!im) return null;
  return h('section', {id: 'imported-log'}, h('h2', {}, 'Record log'),
    h('dl', {class: 'facts'},
      h('dt', {}, 'file'), h('dd', {id: 'imported-file'}, im.file_name ?? ''),
      h('dt', {}, 'sha256'), h('dd', {}, im.log_sha256 ?? ''),
      h('dt', {}, 'GPUs in its nvidia-smi table'), h('dd', {}, im.logged_hardware || 'none listed'),
      h('dt', {}, 'hardware the importer named'), h('dd', {}, sweep.imported_hardware || 'not said'),
      h('dt', {}, 'script (snapshot sha256)'), h('dd', {}, im.script_hash || 'the log has none'),
      h('dt', {}, 'steps'), h('dd', {}, num(im.total_steps)),
      h('dt', {}, 'clock from step'), h('dd', {}, num(im.timed_from_step))));
}

function attempts(run) {
  const list = run.attempts ?? [];
  // resumed_from_step: the attempt went on from an earlier attempt's checkpoint (issue 17).
  const rows = list.map((a) => [a.number, a.worker_id, a.state,
    a.resumed_from_step != null ? `step ${a.resumed_from_step}` : '–', a.exit_code, a.error || '',
    fmtTime(num(a.started_ms)), fmtTime(num(a.finished_ms)),
    num(a.finished_ms) ? fmtDuration(num(a.finished_ms) - num(a.started_ms)) : '–']);
  const last = list[list.length - 1];
  return h('section', {id: 'attempts'}, h('h2', {}, 'Attempts'),
    list.length ? table(['#', 'worker', 'state', 'resumed', 'exit', 'error', 'started', 'finished',
      'took'], rows,
      {class: 'list'}) : h('p', {class: 'muted'}, 'Not started yet.'),
    h('h3', {}, 'stderr tail', last ? ` (attempt ${last.number})` : ''),
    last?.stderr_tail ? h('pre', {class: 'log', id: 'stderr-tail'}, last.stderr_tail)
      : h('p', {class: 'muted'}, 'The worker sends the tail when an attempt ends.'));
}

function drawCurves(page) {
  const c = page.curve;
  const train = xy(c, 'step', 'train_loss', 0);
  const val = xy(c, 'step', 'val_loss', 0);
  const steps = [...new Set([...train.xs, ...val.xs])].sort((a, b) => a - b);
  const at = (curve) => {
    const m = new Map(curve.xs.map((x, i) => [x, curve.ys[i]]));
    return steps.map((x) => m.get(x) ?? null);
  };
  drawChart(page.el.loss, {title: 'loss', xLabel: 'step', yLabel: 'loss (nats)', logY: false,
    series: [{label: 'train', color: '#1f77b4'}, {label: 'val', color: '#d62728', width: 2}],
    data: [steps, at(train), at(val)], target: page.target});
  const stepMs = xy(c, 'step', 'step_ms', 0);
  drawChart(page.el.steps, {title: 'step time', xLabel: 'step', yLabel: 'ms', height: 220,
    series: [{label: 'step ms', color: '#2ca02c', width: 1}], data: [stepMs.xs, stepMs.ys]});
  page.el.count.textContent = String(c?.step?.length ?? 0);
}

function addEvent(list, e) {
  list.prepend(h('li', {class: `event-${e.kind}`},
    h('span', {class: 'muted'}, `${fmtTime(num(e.time_ms))} `), e.message));
}

export async function render(root, id) {
  const run = await getJson(`/api/runs/${encodeURIComponent(id)}`);
  const sweep = await getJson(`/api/sweeps/${run.sweep_id}`);
  document.title = `Run ${run.id} · ablate`;
  const baseline = (sweep.variants ?? []).find((v) => v.index === 0);
  const page = {target: Number(sweep.target_val_loss), curve: undefined, loaded: false, pending: [],
    curves: new Map(), el: {head: h('section', {id: 'run-head'}), loss: h('div', {class: 'chart', id: 'chart-loss'}),
      steps: h('div', {class: 'chart', id: 'chart-steps'}), count: h('span', {id: 'point-count'}, '0'),
      attempts: h('div', {}), events: h('ul', {class: 'events', id: 'events'})}};
  fill(page.el.head, summary(run, sweep));
  fill(page.el.attempts, attempts(run));
  fill(root, page.el.head,
    h('section', {}, h('h2', {}, 'Curves ', h('span', {class: 'muted small'}, page.el.count, ' points')),
      h('div', {class: 'charts'}, page.el.loss, page.el.steps)),
    importedSection(run, sweep), configDiff(run, baseline),
    run.imported ? null : scriptSection(run, sweep),
    run.imported ? null : page.el.attempts, h('section', {}, h('h2', {}, 'Events'), page.el.events));
  followWidth(root);
  const key = num(run.id);
  const apply = (p) => {
    page.curve = mergePoints(page.curves, key, p.attempt_id, p.columns, p.reset);
  };
  live(`/api/live/runs/${run.id}`, {
    run: (r) => {
      if (run.imported && !r.imported) r.imported = run.imported;  // the stream's runs lack it
      fill(page.el.head, summary(r, sweep));
      fill(page.el.attempts, attempts(r));
      page.state = stateName(r.state);
    },
    points: (p) => {
      if (!page.loaded) { page.pending.push(p); return; }
      apply(p);
      drawCurves(page);
    },
    event: (e) => addEvent(page.el.events, e),
    ready: async () => {
      const c = await getJson(`/api/runs/${run.id}/metrics?max_points=2000`);
      apply({attempt_id: c.attempt_id, columns: c.columns});
      for (const p of page.pending.splice(0)) apply(p);
      page.loaded = true;
      drawCurves(page);
      document.getElementById('app').dataset.ready = '1';
    },
  });
}
