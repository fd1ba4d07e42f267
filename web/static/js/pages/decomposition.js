// A decomposed record's table (CompareSweepResponse.decomposition, issue 29): per change its
// add-one-in and leave-one-out effect on time to target, steps and ms/step with 95% CIs and
// Holm-corrected p, then per metric whether the parts add up (the interaction with its CI).
import {fmtDuration, h} from '../dom.js';

const signed = (x, digits) => `${x < 0 ? '−' : '+'}${Math.abs(x).toFixed(digits)}`;
const signedMs = (ms) => (ms < 0 ? `−${fmtDuration(-ms)}` : `+${fmtDuration(ms)}`);

function pText(p) {
  if (p === undefined || p === null) return '';
  return p < 0.001 ? 'p<0.001' : `p=${Number(p).toFixed(3)}`;
}

// "−4.0 s ± 0.5 s p<0.001" with the verdict as its class.
function effect(d, fmt, half) {
  if (!d || d.difference === undefined) return '–';
  const ci = d.ci_low !== undefined ? ` ± ${half((d.ci_high - d.ci_low) / 2)}` : '';
  return h('span', {class: d.underpowered ? 'muted' : '', title: d.verdict || ''},
    `${fmt(d.difference)}${ci} `, h('span', {class: 'small'}, pText(d.p_holm)));
}

const metrics = {
  time: [(x) => signedMs(x), (x) => fmtDuration(x)],
  steps: [(x) => signed(x, 1), (x) => Number(x).toFixed(1)],
  ms: [(x) => `${signed(x, 2)} ms`, (x) => `${Number(x).toFixed(2)} ms`],
};

function interaction(name, i, [fmt, half]) {
  if (!i) return null;
  const val = (x) => (x === undefined ? '–' : fmt(x));
  const ci = i.ci_low !== undefined ? ` ± ${half((i.ci_high - i.ci_low) / 2)}` : '';
  const test = i.test ? ` (${pText(i.test.p_value)})` : ' (no test)';
  return h('tr', {'data-metric': name},
    h('td', {}, name), h('td', {}, val(i.total)), h('td', {}, val(i.sum_of_singles)),
    h('td', {class: i.underpowered ? 'muted' : ''}, `${val(i.interaction)}${ci}${test}`));
}

export function decompositionTable(d) {
  if (!d || !d.changes) return null;
  const rows = d.changes.map((c) => h('tr', {'data-change': c.name},
    h('td', {}, c.name),
    h('td', {}, effect(c.time_to_target_ms?.add_one_in, ...metrics.time)),
    h('td', {}, effect(c.time_to_target_ms?.leave_one_out, ...metrics.time)),
    h('td', {}, effect(c.steps_to_target?.add_one_in, ...metrics.steps)),
    h('td', {}, effect(c.steps_to_target?.leave_one_out, ...metrics.steps)),
    h('td', {}, effect(c.mean_step_ms?.add_one_in, ...metrics.ms)),
    h('td', {}, effect(c.mean_step_ms?.leave_one_out, ...metrics.ms)),
    h('td', {}, c.time_to_target_ms?.add_one_in?.verdict ?? '–')));
  return h('div', {id: 'decomposition'},
    h('h3', {}, `Decomposition: FROM (baseline) → TO (${d.to_variant})`),
    h('table', {class: 'list', id: 'decomposition-table'},
      h('thead', {}, h('tr', {}, ['change', 'time alone', 'time left out', 'steps alone',
        'steps left out', 'ms/step alone', 'ms/step left out', 'verdict alone']
        .map((x) => h('th', {}, x)))),
      h('tbody', {}, rows)),
    h('table', {class: 'list', id: 'decomposition-interaction'},
      h('thead', {}, h('tr', {}, ['metric', 'TO − FROM', 'sum of changes alone',
        'interaction [95% CI]'].map((x) => h('th', {}, x)))),
      h('tbody', {},
        interaction('time to target', d.time_to_target_ms, metrics.time),
        interaction('steps to target', d.steps_to_target, metrics.steps),
        interaction('ms/step', d.mean_step_ms, metrics.ms))),
    d.method ? h('p', {class: 'muted small'}, d.method) : null);
}
