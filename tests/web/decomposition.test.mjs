// Browser test of the decomposition table (issue 29): a real coordinator and a worker that runs
// scripts; `ablate decompose` on examples/decompose/ (a stand-in record, made-up times printed at
// once); the sweep page shows each change's effects and the interactions, as `compare` has them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {Child, cli, env, launchChromium, startCoordinator, tempDir, waitFor,
  watchErrors} from './harness.mjs';

const s = {};

before(async () => {
  s.dir = tempDir('ablate-web-decompose-');
  s.coord = await startCoordinator(s.dir);
  s.worker = new Child('worker', [env('ABLATE_WORKER_BIN'), '--coordinator', s.coord.grpc,
    '--work-dir', path.join(s.dir, 'work'), '--data-dir', path.join(s.dir, 'datasets'),
    '--cpu-slots', '2', '--gpus', 'none', '--name', 'local', '--trainer', '/bin/true',
    '--allow-scripts', '--python', '/usr/bin/python3'], s.dir);
  const base = path.join(s.dir, 'base.yaml');
  fs.writeFileSync(base, 'name: web-decompose\ntarget_val_loss: 3.28\nseeds: 3\ngpus_per_run: 0\n');
  const examples = path.join(env('ABLATE_SOURCE_DIR'), 'examples', 'decompose');
  s.submitted = JSON.parse(cli(s.coord.grpc, ['--json', 'decompose', path.join(examples, 'from.py'),
    path.join(examples, 'to.py'), '--spec', base, '--group', 'warmup=49']));
  s.browser = await launchChromium();
  s.context = await s.browser.newContext({viewport: {width: 1400, height: 1000}});
  s.watch = watchErrors(s.context);
  s.page = await s.context.newPage();
});

after(async () => {
  await s.browser?.close();
  await s.worker?.stop();
  await s.coord?.child.stop();
  if (process.exitCode) {
    for (const c of [s.coord?.child, s.worker]) if (c) console.error(`---- ${c.name}\n${c.tail()}`);
  } else if (s.dir) {
    fs.rmSync(s.dir, {recursive: true, force: true});
  }
});

test('the sweep page shows the decomposition table of a decomposed record', async () => {
  const {page, coord} = s;
  const id = s.submitted.sweep.id;
  await page.goto(`${coord.url}/sweeps/${id}`);
  await waitFor('the sweep to finish on the page', async () =>
    (await page.textContent('#sweep-head .badge')) === 'succeeded', 240000, 250);
  await page.waitForSelector('#decomposition-table tbody tr');
  const changes = await page.$$eval('#decomposition-table tbody tr', (trs) => trs.map((tr) => tr.dataset.change));
  assert.deepEqual(changes, ['L13', 'fewer-steps', 'L31', 'warmup', 'L58']);
  const compare = JSON.parse(cli(coord.grpc, ['--json', 'compare', String(id)])).decomposition;
  const fewer = compare.changes.find((c) => c.name === 'fewer-steps').steps_to_target.add_one_in;
  const cell = await page.textContent('#decomposition-table tr[data-change="fewer-steps"] td:nth-child(4)');
  assert.ok(cell.startsWith(`−${Math.abs(fewer.difference).toFixed(1)}`), cell);
  const metrics = await page.$$eval('#decomposition-interaction tbody tr', (trs) => trs.map((tr) => tr.dataset.metric));
  assert.deepEqual(metrics, ['time to target', 'steps to target', 'ms/step']);
  const steps = await page.textContent('#decomposition-interaction tr[data-metric="steps to target"]');
  assert.match(steps, /± .*\(p[<=]/);
  assert.deepEqual(s.watch.errors, [], 'console or page errors');
});
