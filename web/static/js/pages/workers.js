// Workers: hardware, slots, datasets, a Slurm pilot's allocation (pool, job, time left), the runs
// each executes now and how long ago it was heard from (ages and time left tick every second;
// the list itself updates live). Below them the pools: each ssh pool's hosts with their state,
// worker and last error; each Slurm pool's pilot allocations (read every 5 s).
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
  if (w.ssh_pool) return h('td', {class: 'allocation'}, `ssh pool ${w.ssh_pool}`);
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

// One host of an ssh pool: its state (with the retry countdown), worker, last start, last error.
function hostRow(pool, host) {
  const inc = num(host.incarnation);
  const start = inc > 0
    ? `#${inc}` + (num(host.last_start_ms) > 0 ? ` in ${fmtDuration(num(host.last_start_ms))}` +
      (host.last_start_copied ? ' (bundle copied)' : '') : '') : '–';
  const ok = host.state === 'up' || host.state === 'down' || host.state === 'stopping';
  let state = host.state;
  if (host.state === 'up') state = !host.connected ? 'up, connecting' : host.runs ? `up, ${host.runs} run(s)` : 'up, idle';
  return h('tr', {'data-host': host.host},
    h('td', {}, host.host),
    h('td', {}, h('span', {class: `badge ${ok ? 'state-running' : 'state-failed'}`}, state)),
    h('td', {}, inc > 0 ? host.worker_id : '–'),
    h('td', host.started_as ? {title: `detached as ${host.started_as}`} : {}, start),
    h('td', {class: 'host-error'}, host.error || '–'));
}

function poolSection(pool) {
  if (pool.kind === 'ssh') {
    return h('section', {class: 'pool', 'data-pool': pool.name},
      h('h2', {}, `pool ${pool.name} (ssh)`),
      pool.error ? h('p', {class: 'error'}, pool.error) : '',
      h('table', {class: 'list pool-hosts'},
        h('thead', {}, h('tr', {}, ['host', 'state', 'worker', 'last start', 'last error']
          .map((x) => h('th', {}, x)))),
        h('tbody', {}, (pool.hosts ?? []).map((host) => hostRow(pool, host)))));
  }
  const allocations = pool.allocations ?? [];
  return h('section', {class: 'pool', 'data-pool': pool.name},
    h('h2', {}, `pool ${pool.name} (Slurm, partition ${pool.partition})`),
    pool.error ? h('p', {class: 'error'}, `Slurm error: ${pool.error}`) : '',
    allocations.length ? h('table', {class: 'list'},
      h('thead', {}, h('tr', {}, ['job', 'state', 'nodes', 'node list', 'runs']
        .map((x) => h('th', {}, x)))),
      h('tbody', {}, allocations.map((a) => h('tr', {},
        h('td', {}, num(a.job_id)), h('td', {}, a.state === 'PENDING' ? `pending (${a.reason})` : a.state),
        h('td', {}, a.nodes ?? 0), h('td', {}, a.node_list || '–'), h('td', {}, a.runs ?? 0)))))
      : h('p', {}, 'no allocations'));
}

export async function render(root) {
  document.title = 'Workers · ablate';
  const body = h('tbody', {});
  const show = (workers) => {
    fill(body, workers.map(row));
    tick(body);
  };
  show((await getJson('/api/workers')).workers ?? []);
  const pools = h('div', {id: 'pools'});
  const showPools = async () => {
    const list = (await getJson('/api/pools')).pools ?? [];
    fill(pools, list.length ? [h('h1', {}, 'Pools'), ...list.map(poolSection)] : []);
  };
  await showPools();
  setInterval(() => showPools().catch(() => {}), 5000);
  fill(root, h('h1', {}, 'Workers'),
    h('table', {class: 'list', id: 'workers'},
      h('thead', {}, h('tr', {}, ['worker', 'host', 'state', 'allocation', 'GPUs', 'CPU slots', 'running now',
        'heartbeat', 'datasets', 'trainer'].map((x) => h('th', {}, x)))), body), pools);
  setInterval(() => tick(body), 1000);
  live('/api/live/workers', {workers: (list) => show(list.workers ?? [])});
}
