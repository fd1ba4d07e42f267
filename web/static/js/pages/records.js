// Records: the speedrun's published record times over their dates, with this cluster's own runs
// of the record presets overlaid (like-for-like runs only: a tiny CPU run is not a record time),
// and the table (ListRecordsResponse).
import {getJsonOrNull} from '../api.js';
import {drawChart, followWidth} from '../chart.js';
import {fill, fmtDuration, fmtLoss, h} from '../dom.js';

function chartOf(rows, el) {
  const dated = rows.filter((r) => r.record?.date).map((r) => ({
    at: Date.parse(r.record.date) / 1000, published: r.record.record_time_ms / 60000,
    own: (r.own_runs ?? [])
      .filter((o) => o.like_for_like && o.mean_time_to_target_ms !== undefined)
      .map((o) => o.mean_time_to_target_ms / 60000)}));
  dated.sort((a, b) => a.at - b.at);
  const x = dated.map((d) => d.at);
  const published = dated.map((d) => d.published);
  const own = dated.map((d) => (d.own.length ? Math.min(...d.own) : null));
  drawChart(el, {title: 'record time (published) and this cluster\'s runs of the presets',
    xLabel: 'date', yLabel: 'minutes', logY: true, xTime: true,
    series: [{label: 'published', color: '#1f77b4'},
      {label: 'own runs (best mean time to target)', color: '#d62728', pointsOnly: true}],
    data: [x, published, own]});
}

function ownText(o) {
  return `${o.scale} on ${o.hardware}: n=${o.n}, ${o.n_reached} reached` +
    (o.mean_time_to_target_ms !== undefined ? `, ${fmtDuration(o.mean_time_to_target_ms)}` : '') +
    (o.mean_final_val_loss !== undefined ? `, val ${fmtLoss(o.mean_final_val_loss)}` : '');
}

// Like-for-like runs (full scale, FineWeb, 3.28, 8 GPUs of one model) with the ratio to the
// published time; the others apart, with why they are not comparable and no ratio.
function likeCell(list) {
  const like = (list ?? []).filter((o) => o.like_for_like);
  if (!like.length) return '–';
  return like.map((o) => h('div', {class: 'own-like'}, ownText(o) +
    (o.ratio_to_published !== undefined ? ` (${o.ratio_to_published.toFixed(2)}× published)` : '')));
}

function otherCell(list) {
  const other = (list ?? []).filter((o) => !o.like_for_like);
  if (!other.length) return '–';
  return other.map((o) => h('div', {class: 'own-other'}, ownText(o),
    h('span', {class: 'muted small'}, ` — not like the record: ${o.not_comparable}`)));
}

export async function render(root) {
  document.title = 'Records · ablate';
  const records = await getJsonOrNull('/api/records');
  if (!records) {
    fill(root, h('h1', {}, 'Records'), h('p', {class: 'muted'}, 'This coordinator has no records table.'));
    return;
  }
  const rows = records.records ?? [];
  const chart = h('div', {class: 'chart', id: 'chart-records'});
  fill(root, h('h1', {}, 'Records'), chart,
    h('table', {class: 'list', id: 'records'},
      h('thead', {}, h('tr', {}, ['#', 'date', 'record time', 'steps', 'description', 'preset',
        'own runs, like for like', 'own runs, other scale or hardware (no ratio)']
        .map((x) => h('th', {}, x)))),
      h('tbody', {}, rows.map((r) => h('tr', {'data-record': r.record.id},
        h('td', {}, r.record.id), h('td', {}, r.record.date),
        h('td', {}, fmtDuration(r.record.record_time_ms)),
        h('td', {}, r.record.steps ?? '–'), h('td', {}, r.record.description),
        h('td', {}, r.record.preset || '–'), h('td', {}, likeCell(r.own_runs)),
        h('td', {}, otherCell(r.own_runs)))))));
  chartOf(rows, chart);
  followWidth(root);
}
