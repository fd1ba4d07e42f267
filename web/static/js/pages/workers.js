// Workers: hardware, slots, datasets, a Slurm pilot's allocation (pool, job, time left), the runs
// each executes now and how long ago it was heard from (ages and time left tick every second;
// the list itself updates live).
import {getJson, live, num, serverNow} from '../api.js';
import {fill, fmtDuration, h} from '../dom.js';

function gpus(worker) {
  const list = worker.gpus ?? [];
  if (!list.length) return 'none';
  const models = new Map();
  for (const g of list) models.set(g.model, (models.get(g.model) ?? 0) + 1);
  return [...models].map(([model, n]) => `${n}× ${model}`).join(', ') +
    ` (${Math.round(num(list[0].memory_mb) / 1024)} GiB each)`;
}

// A Slurm pilot's allocation: pool, job id and time left (counted down between updates).
function allocation(w) {
  const job = num(w.slurm_job_id);
  if (!job) return h('td', {class: 'allocation'}, w.slurm_allocation ? `slurm ${w.slurm_allocation}` : '–');
  const left = num(w.slurm_time_left_s ?? -1);
  return h('td', {class: 'allocation'},
    w.slurm_pool ? `pool ${w.slurm_pool}, ` : '', `job ${job}`,
    left >= 0 ? h('span', {class: 'time-left', 'data-ends': Date.now() + left * 1000}) : '');
}

function row(w) {
  const runs = w.run_ids ?? [];
  return h('tr', {'data-worker': w.id},
    h('td', {}, w.id), h('td', {}, w.host),
    h('td', {}, h('span', {class: `badge ${w.connected ? 'state-running' : 'state-cancelled'}`},
      w.connected ? 'connected' : 'gone'), w.draining ? ' draining' : ''),
    allocation(w),
    h('td', {}, gpus(w)), h('td', {}, w.cpu_slots),
    h('td', {}, runs.length
      ? runs.map((id) => h('a', {href: `/runs/${id}`, class: 'run-link'}, `run ${id}`)) : 'idle'),
    h('td', {class: 'heartbeat', 'data-ms': num(w.last_heartbeat_ms)}),
    h('td', {}, (w.datasets ?? []).join(', ') || '–'), h('td', {class: 'small'}, w.trainer_version));
}

function tick(body) {
  for (const td of body.querySelectorAll('td.heartbeat')) {
    const at = Number(td.dataset.ms);
    td.textContent = at > 0 ? `${fmtDuration(Math.max(0, serverNow() - at))} ago` : 'never';
  }
  for (const span of body.querySelectorAll('span.time-left')) {
    span.textContent = `, ${fmtDuration(Math.max(0, Number(span.dataset.ends) - Date.now()))} left`;
  }
}

export async function render(root) {
  document.title = 'Workers · ablate';
  const body = h('tbody', {});
  const show = (workers) => {
    fill(body, workers.map(row));
    tick(body);
  };
  show((await getJson('/api/workers')).workers ?? []);
  fill(root, h('h1', {}, 'Workers'),
    h('table', {class: 'list', id: 'workers'},
      h('thead', {}, h('tr', {}, ['worker', 'host', 'state', 'allocation', 'GPUs', 'CPU slots', 'running now',
        'heartbeat', 'datasets', 'trainer'].map((x) => h('th', {}, x)))), body));
  setInterval(() => tick(body), 1000);
  live('/api/live/workers', {workers: (list) => show(list.workers ?? [])});
}
