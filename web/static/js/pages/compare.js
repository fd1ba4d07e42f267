// The statistical comparison of a sweep (CompareSweepResponse, DESIGN §7) as a table: per
// variant its means with 95% CIs, the difference to the baseline with the Holm-corrected p, time
// split into steps to target and ms/step, the record rule, and the verdict, coloured; above it
// the confound check (a warning when variants doing the same work differ in ms/step). Rows of
// imported record logs (compare?with=) are marked, with why their times are not compared.
import {fmtDuration, fmtLoss, h} from '../dom.js';
import {decompositionTable} from './decomposition.js';

function ci(summary, fmt) {
  if (!summary || summary.mean === undefined) return '–';
  const range = summary.ci_low !== undefined
    ? ` [${fmt(summary.ci_low)}, ${fmt(summary.ci_high)}]` : '';
  return `${fmt(summary.mean)}${range}`;
}

function pValue(p) {
  if (p === undefined || p === null) return '';
  return p < 0.001 ? 'p<0.001' : `p=${Number(p).toFixed(3)}`;
}

function delta(d, fmt) {
  if (!d || d.difference === undefined) return '–';
  const sign = d.difference > 0 ? '+' : '';
  const rel = d.relative !== undefined ? ` (${sign}${(100 * d.relative).toFixed(1)}%)` : '';
  return h('span', {class: d.underpowered ? 'muted' : ''},
    `${sign}${fmt(d.difference)}${rel} `, h('span', {class: 'small'}, pValue(d.p_holm ?? d.welch?.p_value)));
}

function verdictClass(verdict) {
  if (String(verdict).startsWith('confounded')) return 'verdict verdict-confounded';
  if (String(verdict).includes(",")) return "verdict verdict-mixed";
  return `verdict verdict-${String(verdict || 'none').replace(/[^a-z]+/gi, '-').toLowerCase()}`;
}

function recordRule(rule) {
  if (!rule || !rule.n) return '–';
  if (rule.underpowered) return h('span', {class: 'muted'}, `n=${rule.n}, underpowered`);
  return h('span', {class: rule.passes ? 'good' : 'bad'},
    `${rule.passes ? 'passes' : 'fails'} ${pValue(rule.test?.p_value)}`);
}

const signedMs = (ms) => (ms < 0 ? `−${fmtDuration(-ms)}` : fmtDuration(ms));

const fmtSteps = (x) => `${Math.round(x)}`;
const signedSteps = (x) => (x < 0 ? `−${Math.round(-x)}` : `${Math.round(x)}`);
const fmtMs = (x) => `${Number(x).toFixed(1)} ms`;
const signedMsStep = (x) => (x < 0 ? `−${fmtMs(-x)}` : fmtMs(x));

// Why time differs: steps to target and ms/step, each against the baseline, with its verdict.
function split(v) {
  if (!v.steps_vs_baseline && !v.step_ms_vs_baseline) return '–';
  return h('div', {},
    h('div', {}, 'steps: ', delta(v.steps_vs_baseline, signedSteps), ' ',
      h('span', {class: 'small'}, v.steps_vs_baseline?.verdict ?? '')),
    h('div', {}, 'ms/step: ', delta(v.step_ms_vs_baseline, signedMsStep), ' ',
      h('span', {class: 'small'}, v.step_ms_vs_baseline?.verdict ?? '')));
}

// The confound check in one line; a warning when it failed.
function confoundNote(c) {
  if (!c || !c.message) return null;
  return h('p', {class: c.confounded ? 'bad' : 'muted small', id: 'confound'},
    c.confounded ? `Confound check failed: ${c.message}.` : `Confound check: ${c.message}.`);
}

// An imported variant's row (compare?with=): where its logs come from, and why its times are
// not compared when they are not.
function importedNote(v) {
  const im = v.imported;
  if (!im) return null;
  return h('div', {class: 'small imported-note'},
    h('span', {class: 'tag imported'}, 'imported'),
    im.like_for_like ? `ran on ${im.hardware}` : (im.not_comparable || 'time not comparable'));
}

export function compareTable(compare) {
  const rows = (compare.variants ?? []).map((v) => h('tr',
    {'data-variant': v.name, class: v.imported ? 'imported-row' : null},
    h('td', {}, v.name, importedNote(v)),
    h('td', {}, `${v.n} (${v.n_reached} reached)`),
    h('td', {}, ci(v.final_val_loss, fmtLoss)),
    h('td', {}, delta(v.loss_vs_baseline, fmtLoss)),
    h('td', {}, ci(v.time_to_target_ms, fmtDuration)),
    h('td', {}, delta(v.time_vs_baseline, signedMs)),
    h('td', {}, ci(v.steps_to_target, fmtSteps)),
    h('td', {}, ci(v.mean_step_ms, fmtMs)),
    h('td', {class: 'split'}, split(v)),
    h('td', {}, recordRule(v.record_rule)),
    h('td', {}, h('span', {class: verdictClass(v.verdict)}, v.verdict || '–'))));
  return h('div', {},
    confoundNote(compare.confound),
    h('table', {class: 'list', id: 'compare-table'},
      h('thead', {}, h('tr', {}, ['variant', 'n', 'final val loss [95% CI]', 'Δ loss vs baseline',
        'time to target [95% CI]', 'Δ time vs baseline', 'steps to target [95% CI]',
        'ms/step [95% CI]', 'steps · speed vs baseline', 'record rule', 'verdict']
        .map((x) => h('th', {}, x)))),
      h('tbody', {}, rows)),
    compare.method ? h('p', {class: 'muted small'}, compare.method) : null,
    decompositionTable(compare.decomposition));
}
