// Sweeps: every sweep, newest first, with state, progress, tags and baseline; live. Sweeps of
// imported record logs (issue 39) are marked "imported", and the form under the list uploads
// logs as one (POST /api/import, the code behind `ablate import`).
import {getJson, live, num, postJson} from '../api.js';
import {badge, fill, fmtTime, h, progressBar, stateName} from '../dom.js';

function finished(c) {
  return (c?.succeeded ?? 0) + (c?.failed ?? 0) + (c?.cancelled ?? 0);
}

function row(sweep) {
  const c = sweep.counts ?? {};
  const done = finished(c);
  return h('tr', {'data-sweep': sweep.id},
    h('td', {}, sweep.id),
    h('td', {}, h('a', {href: `/sweeps/${sweep.id}`}, sweep.name),
      sweep.imported ? h('span', {class: 'tag imported', title: 'record logs imported: ' +
        'these runs ran elsewhere'}, 'imported') : null),
    h('td', {}, badge(sweep.state)),
    h('td', {class: 'progress-cell'}, progressBar(done, c.total ?? 0),
      h('span', {class: 'muted small'},
        `${done}/${c.total ?? 0} done`, c.running ? `, ${c.running} running` : '',
        c.queued ? `, ${c.queued} queued` : '', c.failed ? `, ${c.failed} failed` : '')),
    h('td', {}, (sweep.tags ?? []).map((t) => h('span', {class: 'tag'}, t))),
    h('td', {}, sweep.imported
      ? `record logs · ${sweep.imported_hardware || 'hardware not said'}`
      : `${sweep.baseline_preset || '(custom)'} @ ${sweep.scale}`),
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
      body),
    importForm());
  live('/api/live/sweeps', {
    sweep: (s) => {
      byId.set(s.id, s);
      document.getElementById('no-sweeps')?.remove();
      upsert(s);
    },
  });
}

// The upload of record logs: each file a run of the one variant named, all stored or none
// unless "skip bad logs" (as `ablate import`); the coordinator parses them, strictly, and its
// errors name each bad file and line.
function importForm() {
  const files = h('input', {type: 'file', id: 'import-files', multiple: true, accept: '.txt,.log'});
  const variant = h('input', {type: 'text', id: 'import-variant', value: 'record', size: 16,
    pattern: '[A-Za-z0-9._\\-]{1,64}', title: '1 to 64 of A-Z a-z 0-9 . _ -'});
  const name = h('input', {type: 'text', id: 'import-name', placeholder: 'imported', size: 20});
  const hardware = h('input', {type: 'text', id: 'import-hardware', size: 24,
    placeholder: 'e.g. 8x NVIDIA H100 80GB HBM3'});
  const target = h('input', {type: 'number', id: 'import-target', value: '3.28', step: 'any',
    min: '0', size: 6});
  const skipBad = h('input', {type: 'checkbox', id: 'import-skip-bad'});
  const result = h('div', {id: 'import-result', 'aria-live': 'polite'});
  const button = h('button', {type: 'submit', id: 'import-submit'}, 'Import');
  const submit = async (e) => {
    e.preventDefault();
    if (!files.files.length) {
      fill(result, h('p', {class: 'error'}, 'Choose one or more record logs (.txt) first.'));
      return;
    }
    button.disabled = true;
    fill(result, h('p', {class: 'muted'}, `Reading ${files.files.length} logs…`));
    try {
      const body = {files: [], name: name.value, hardware: hardware.value,
        target_val_loss: Number(target.value) || 0, skip_bad: skipBad.checked};
      for (const f of files.files) {
        body.files.push({name: f.name, variant: variant.value, content: await f.text()});
      }
      const reply = await postJson('/api/import', body);
      const skipped = reply.skipped ?? [];
      fill(result,
        h('p', {}, `Imported ${(reply.runs ?? []).length} logs as `,
          h('a', {href: `/sweeps/${reply.sweep?.id}`, id: 'import-sweep'},
            `sweep ${reply.sweep?.id}`), '.'),
        skipped.length ? h('div', {class: 'notice', id: 'import-skipped'},
          h('strong', {}, 'Skipped: '), h('ul', {}, skipped.map((x) => h('li', {}, x)))) : null);
    } catch (err) {
      fill(result, h('pre', {class: 'error', id: 'import-error'}, String(err.message ?? err)));
    } finally {
      button.disabled = false;
    }
  };
  return h('section', {id: 'import'},
    h('h2', {}, 'Import record logs'),
    h('p', {class: 'muted small'}, 'Logs as modded-nanogpt\'s records/ folder holds them: the ' +
      'script, then step:K/N lines. They become runs of an imported sweep, marked as such ' +
      'everywhere; their times are compared with a sweep of yours only when the hardware named ' +
      'here is that sweep\'s.'),
    h('form', {id: 'import-form', onsubmit: submit},
      h('label', {}, 'logs ', files), ' ',
      h('label', {}, 'variant ', variant), ' ',
      h('label', {}, 'sweep name ', name), ' ',
      h('label', {}, 'hardware they ran on ', hardware), ' ',
      h('label', {}, 'target ', target), ' ',
      h('label', {}, skipBad, ' skip bad logs (default: store none if one is bad)'), ' ',
      button),
    result);
}
