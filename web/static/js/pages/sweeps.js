// Sweeps: every sweep, newest first, with state, progress, tags and baseline; live.
import {getJson, live, num} from '../api.js';
import {badge, fill, fmtTime, h, progressBar, stateName} from '../dom.js';

function finished(c) {
  return (c?.succeeded ?? 0) + (c?.failed ?? 0) + (c?.cancelled ?? 0);
}

function row(sweep) {
  const c = sweep.counts ?? {};
  const done = finished(c);
  return h('tr', {'data-sweep': sweep.id},
    h('td', {}, sweep.id),
    h('td', {}, h('a', {href: `/sweeps/${sweep.id}`}, sweep.name)),
    h('td', {}, badge(sweep.state)),
    h('td', {class: 'progress-cell'}, progressBar(done, c.total ?? 0),
      h('span', {class: 'muted small'},
        `${done}/${c.total ?? 0} done`, c.running ? `, ${c.running} running` : '',
        c.queued ? `, ${c.queued} queued` : '', c.failed ? `, ${c.failed} failed` : '')),
    h('td', {}, (sweep.tags ?? []).map((t) => h('span', {class: 'tag'}, t))),
    h('td', {}, `${sweep.baseline_preset || '(custom)'} @ ${sweep.scale}`),
    h('td', {}, fmtTime(num(sweep.created_ms))));
}

export async function render(root) {
  document.title = 'Sweeps · ablate';
  const body = h('tbody', {});
  const state = h('select', {'aria-label': 'state'},
    ['all', 'queued', 'running', 'succeeded', 'failed', 'cancelled'].map((s) => h('option', {}, s)));
  const rows = new Map();
  const sweeps = (await getJson('/api/sweeps?limit=1000')).sweeps ?? [];
  const upsert = (sweep) => {
    const tr = row(sweep);
    const old = rows.get(sweep.id);
    if (old) old.replaceWith(tr);
    else body.prepend(tr);
    rows.set(sweep.id, tr);
    tr.hidden = state.value !== 'all' && stateName(sweep.state) !== state.value;
  };
  for (const s of [...sweeps].reverse()) upsert(s);
  const byId = new Map(sweeps.map((s) => [s.id, s]));
  state.addEventListener('change', () => { for (const s of byId.values()) upsert(s); });
  fill(root,
    h('div', {class: 'page-head'}, h('h1', {}, 'Sweeps'), h('label', {}, 'state ', state)),
    sweeps.length === 0
      ? h('p', {class: 'muted', id: 'no-sweeps'}, 'No sweeps yet. Submit one with `ablate submit spec.yaml`.')
      : null,
    h('table', {class: 'list', id: 'sweeps'},
      h('thead', {}, h('tr', {}, ['id', 'name', 'state', 'progress', 'tags', 'baseline', 'created']
        .map((x) => h('th', {}, x)))),
      body));
  live('/api/live/sweeps', {
    sweep: (s) => {
      byId.set(s.id, s);
      document.getElementById('no-sweeps')?.remove();
      upsert(s);
    },
  });
}
