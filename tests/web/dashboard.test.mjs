// Browser tests of the dashboard (issue 7): a real coordinator and worker train two small sweeps
// with the real trainer; headless Debian Chromium, driven by playwright-core, opens the pages as a
// person would. Screenshots go to $ABLATE_SCREENSHOT_DIR. Any console error or page error on
// any page fails the run.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {cli, env, getJson, launchChromium, makeDataset, sleep, startCoordinator, startSlurmWorker,
  startWorker, submit, tempDir, waitFor, watchErrors} from './harness.mjs';

const shots = process.env.ABLATE_SCREENSHOT_DIR || tempDir('ablate-shots-');
fs.mkdirSync(shots, {recursive: true});

// Two variants x 2 seeds, a few seconds each; then one long run to watch live.
const QUICK = `name: web-quick
baseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 20, val_every: 5, val_tokens: 4096}}
seeds: 2
gpus_per_run: 0
dataset: debian-text
tags: [web, quick]
ablations:
  - {name: softcap-15, set: {logit_softcap: 15}}
`;
const LONG = `name: web-long
baseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 3000, val_every: 25, val_tokens: 4096}}
seeds: 1
gpus_per_run: 0
dataset: debian-text
`;

// Needs a dataset no worker has: its run stays queued, with the reason shown.
const STUCK = `name: web-stuck
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 1
gpus_per_run: 0
dataset: nowhere-data
`;

const s = {};

before(async () => {
  s.dir = tempDir('ablate-web-');
  const datasets = makeDataset(s.dir);
  s.coord = await startCoordinator(s.dir);
  s.worker = startWorker(s.dir, s.coord.grpc, datasets, 2);
  s.pilot = startSlurmWorker(s.dir, s.coord.grpc, datasets, 'h100', 4242);
  s.long = submit(s.coord.grpc, s.dir, 'long', LONG);
  s.quick = submit(s.coord.grpc, s.dir, 'quick', QUICK);
  s.stuck = submit(s.coord.grpc, s.dir, 'stuck', STUCK);
  s.browser = await launchChromium();
  s.context = await s.browser.newContext({viewport: {width: 1400, height: 1000}});
  s.watch = watchErrors(s.context);
  s.page = await s.context.newPage();
});

after(async () => {
  await s.browser?.close();
  await s.worker?.stop();
  await s.pilot?.stop();
  await s.coord?.child.stop();
  if (process.exitCode) {
    for (const c of [s.coord?.child, s.worker, s.pilot]) if (c) console.error(`---- ${c.name}\n${c.tail()}`);
  } else if (s.dir) {
    fs.rmSync(s.dir, {recursive: true, force: true});
  }
});

function shot(name) {
  return s.page.screenshot({path: path.join(shots, `${name}.png`), fullPage: true});
}

function noErrors() {
  assert.deepEqual(s.watch.errors, [], 'console or page errors');
}

test('the sweeps page lists the sweeps and links to them', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/`);
  await page.waitForSelector(`#sweeps tr[data-sweep="${s.quick.sweep.id}"]`);
  const names = await page.$$eval('#sweeps tbody tr td:nth-child(2)', (tds) => tds.map((t) => t.textContent));
  assert.deepEqual(names.sort(), ['web-long', 'web-quick', 'web-stuck']);
  const tags = await page.textContent(`#sweeps tr[data-sweep="${s.quick.sweep.id}"]`);
  assert.match(tags, /quick/);
  await shot('sweeps');
  noErrors();
});

test('the sweep page overlays one series per variant and finishes live', async () => {
  const {page} = s;
  await page.click(`#sweeps a[href="/sweeps/${s.quick.sweep.id}"]`);
  await page.waitForURL(`**/sweeps/${s.quick.sweep.id}`);
  await page.waitForSelector('#app[data-ready="1"]');
  // The page was not reloaded: the sweep finishes while we watch (server-sent events).
  await waitFor('the quick sweep to finish on the page', async () =>
    (await page.textContent('#sweep-head .badge')) === 'succeeded', 120000, 250);
  const variants = s.quick.sweep.variants.map((v) => v.name);
  for (const id of ['#chart-train', '#chart-val']) {
    const labels = await waitFor(`${id} to have curves`, () => page.$eval(id, (el) => {
      const u = el.uplot;
      const drawn = u && u.data.slice(1).every((ys) => ys.some((y) => y !== null));
      return drawn && u.series.slice(1).map((x) => x.label);
    }), 30000, 250);
    assert.deepEqual(labels, variants, `${id}: one series per variant`);
  }
  const rows = await page.$$eval('#variant-table tbody tr', (trs) => trs.map((tr) => tr.dataset.variant));
  assert.deepEqual(rows, variants);
  const diff = await page.textContent('#variant-table tr[data-variant="softcap-15"]');
  assert.match(diff, /logit_softcap: 30 → 15/);
  const verdicts = await page.$$eval('#compare-table tbody tr', (trs) =>
    trs.map((tr) => [tr.dataset.variant, tr.querySelector('.verdict').textContent]));
  assert.deepEqual(verdicts.map((v) => v[0]), variants);
  assert.equal(verdicts[0][1], 'baseline');
  // Time split into steps and speed, and the confound check above the table.
  const heads = await page.$$eval('#compare-table thead th', (ths) => ths.map((th) => th.textContent));
  assert.ok(heads.includes('steps to target [95% CI]') && heads.includes('ms/step [95% CI]'), heads.join('|'));
  const split = await page.textContent('#compare-table tr[data-variant="softcap-15"] td.split');
  assert.match(split, /steps: .*ms\/step: /);
  assert.match(await page.textContent('#confound'), /[Cc]onfound check/);
  await page.check('#log-y');
  await page.selectOption('#x-axis', 'time');
  await page.waitForFunction(() => document.querySelector('#chart-train').uplot.scales.y.distr === 3);
  await shot('sweep');
  noErrors();
});

test('a running run\'s point count grows through server-sent events', async () => {
  const {page, coord} = s;
  const longRun = s.long.runs[0].id;
  await waitFor('the long run to be running', async () =>
    (await getJson(`${coord.url}/api/runs/${longRun}`)).state === 'RUN_RUNNING', 120000, 200);
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });
  await page.goto(`${coord.url}/runs/${longRun}`);
  await page.waitForSelector('#app[data-ready="1"]');
  navigations = 0;
  const count = async () => Number(await page.textContent('#point-count'));
  const first = await count();
  const grown = await waitFor('the point count to grow', async () => {
    const n = await count();
    return n > first + 5 && n;
  }, 60000, 200);
  assert.ok(grown > first);
  assert.equal(navigations, 0, 'the page did not reload');
  const series = await page.$eval('#chart-loss', (el) => el.uplot.data[1].filter((y) => y !== null).length);
  assert.ok(series >= grown - 5, `the chart shows the new points (${series} of ${grown})`);
  await shot('run-live');
  noErrors();
});

test('a run of an ablation shows its config diff against the baseline', async () => {
  const {page, coord} = s;
  const run = s.quick.runs.find((r) => r.variant_name === 'softcap-15');
  await page.goto(`${coord.url}/runs/${run.id}`);
  await page.waitForSelector('#app[data-ready="1"]');
  const row = await page.$$eval('#config-diff tr[data-knob="logit_softcap"] td', (tds) => tds.map((t) => t.textContent));
  assert.deepEqual(row, ['logit_softcap', '30', '15']);
  const knobs = await page.$$eval('#config-diff tbody tr', (trs) => trs.map((tr) => tr.dataset.knob));
  assert.deepEqual(knobs, ['logit_softcap'], 'only the ablated knob differs');
  assert.match(await page.textContent('#attempts'), /succeeded/);
  assert.ok((await page.textContent('#stderr-tail')).length > 0, 'stderr tail shown');
  await shot('run');
  noErrors();
});

test('a sweep with queued runs says why they wait', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/sweeps/${s.stuck.sweep.id}`);
  await page.waitForSelector('#app[data-ready="1"]');
  const reasons = await waitFor('waiting reasons', () => page.$('#waiting-reasons'), 15000, 200);
  assert.match(await reasons.textContent(), /nowhere-data/);
  await shot('sweep-waiting');
  noErrors();
});

test('the records page shows the published records and the table', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/records`);
  await page.waitForSelector('#records tbody tr');
  const rows = await page.$$eval('#records tbody tr', (trs) => trs.length);
  assert.ok(rows >= 5, `${rows} records`);
  const points = await page.$eval('#chart-records', (el) => el.uplot.data[1].filter((y) => y !== null).length);
  assert.equal(points, rows, 'one point per record');
  // Own runs at tiny scale on the CPU are not like the record: never a ratio to the published time.
  const table = await page.textContent('#records');
  assert.doesNotMatch(table, /× published/);
  await shot('records');
  noErrors();
});

test('the workers page shows the worker, its slots and what it runs', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/workers`);
  await page.waitForSelector('#workers tr[data-worker]');
  const text = await page.textContent('#workers tbody');
  assert.match(text, /connected/);
  assert.match(text, /ago/);
  await waitFor('the long run listed as running on the worker', () =>
    page.$(`#workers a[href="/runs/${s.long.runs[0].id}"]`), 10000, 200);
  // A Slurm pilot's row names its allocation; a worker outside Slurm has none.
  const pilot = await waitFor('the pilot listed', () =>
    page.$('#workers tr[data-worker="slurm/lab/4242.0/0"]'), 20000, 200);
  assert.match(await pilot.$eval('td.allocation', (td) => td.textContent), /^pool h100, job 4242/);
  assert.equal(await page.$eval('#workers tr[data-worker="local"] td.allocation',
    (td) => td.textContent), '–');
  await shot('workers');
  noErrors();
});

test('the coordinator stops promptly with live pages open', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/sweeps/${s.long.sweep.id}`);
  await page.waitForSelector('#app[data-ready="1"]');
  await s.worker.stop();
  await s.pilot.stop();
  // The page's EventSource stays open while the coordinator shuts down; its reconnect attempts
  // after that are expected, so the console is checked before.
  noErrors();
  await page.evaluate(() => window.stop());
  const stopped = await coord.child.stop(20000);
  assert.equal(stopped.signal ?? null, null, `coordinator exited by itself (${JSON.stringify(stopped)})`);
  assert.equal(stopped.code, 0);
  assert.ok(stopped.ms < 8000, `coordinator took ${stopped.ms} ms to stop`);
  await sleep(10);
});
