// Browser test of records as data in the dashboard (issue 39): record logs written in the
// records' format (examples/records/write_record_logs.py) are uploaded through the sweeps page's
// form to a real coordinator; the imported sweep is marked in the list, on its page and on its
// runs' pages; a sweep of this cluster's (a script sweep on a real worker, examples/decompose's
// stand-in record) puts it beside its own variants: a marked row in the comparison that agrees
// with `ablate compare --with`, times not compared (the hardware was not named), and the logs'
// curves dashed on the charts. A bad log is refused with its file and line, and nothing stored.
import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {Child, cli, env, getJson, launchChromium, startCoordinator, tempDir, waitFor,
  watchErrors} from './harness.mjs';

const s = {};

function writeLogs(dir, ...flags) {
  const r = spawnSync('python3', [path.join(env('ABLATE_SOURCE_DIR'), 'examples/records/write_record_logs.py'),
    dir, ...flags], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`write_record_logs.py failed: ${r.stderr}`);
  return r.stdout.trim().split('\n');
}

async function sweepCount() {
  return ((await getJson(`${s.coord.url}/api/sweeps?limit=1000`)).sweeps ?? []).length;
}

before(async () => {
  s.dir = tempDir('ablate-web-imported-');
  s.coord = await startCoordinator(s.dir);
  s.worker = new Child('worker', [env('ABLATE_WORKER_BIN'), '--coordinator', s.coord.grpc,
    '--work-dir', path.join(s.dir, 'work'), '--data-dir', path.join(s.dir, 'datasets'),
    '--cpu-slots', '2', '--gpus', 'none', '--name', 'local', '--trainer', '/bin/true',
    '--allow-scripts', '--python', '/usr/bin/python3'], s.dir);
  // This cluster's sweep: the stand-in record, 3 seeds, about 200 steps to 3.28 at ~100 ms/step.
  fs.copyFileSync(path.join(env('ABLATE_SOURCE_DIR'), 'examples/decompose/from.py'),
    path.join(s.dir, 'from.py'));
  fs.writeFileSync(path.join(s.dir, 'own.yaml'), 'name: web-own\nbaseline: {script: from.py}\n' +
    'target_val_loss: 3.28\nseeds: 3\ngpus_per_run: 0\n');
  s.own = JSON.parse(cli(s.coord.grpc, ['--json', 'submit', path.join(s.dir, 'own.yaml')])).sweep;
  s.logs = writeLogs(path.join(s.dir, 'logs'), '--runs', '3', '--steps', '200',
    '--ms-per-step', '100', '--final-loss', '3.2785', '--seed', '4');
  s.bad = writeLogs(path.join(s.dir, 'bad'), '--runs', '1', '--steps', '200', '--defect', 'nan-val');
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

test('a bad log uploaded is named by file and line, and nothing is stored', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/sweeps`);
  await page.waitForSelector('#import-form');
  const before = await sweepCount();
  await page.setInputFiles('#import-files', [...s.logs, ...s.bad]);
  await page.click('#import-submit');
  const error = await (await page.waitForSelector('#import-error')).textContent();
  assert.match(error, new RegExp(`${path.basename(s.bad[0]).replace('.', '\\.')}:[0-9]+: .*val_loss`));
  assert.match(error, /none was stored/);
  assert.equal(await sweepCount(), before);
  // The refusal is the page's only console message (the browser logs the 400 itself).
  assert.deepEqual(s.watch.errors.map((e) => /status of 400/.test(e)), [true]);
  s.watch.errors.length = 0;
});

test('uploaded logs become an imported sweep, marked in the list, on its page and its runs', async () => {
  const {page, coord} = s;
  await page.goto(`${coord.url}/sweeps`);
  await page.waitForSelector('#import-form');
  await page.fill('#import-variant', 'old-record');
  await page.fill('#import-name', 'record-logs');
  await page.setInputFiles('#import-files', s.logs);
  await page.click('#import-submit');
  const link = await page.waitForSelector('#import-sweep');
  const id = (await link.textContent()).replace('sweep ', '');
  s.importedId = id;
  // Stored as the CLI would have: 3 succeeded runs of variant old-record, each with its log.
  const runs = (await getJson(`${coord.url}/api/sweeps/${id}/runs`)).runs;
  assert.equal(runs.length, 3);
  assert.deepEqual(runs.map((r) => r.imported.file_name).sort(),
    s.logs.map((f) => path.basename(f)).sort());
  assert.ok(runs.every((r) => r.variant_name === 'old-record' && r.state === 'RUN_SUCCEEDED'));
  // The list marks it.
  await page.goto(`${coord.url}/sweeps`);
  const tag = await page.waitForSelector(`#sweeps tr[data-sweep="${id}"] .tag.imported`);
  assert.equal(await tag.textContent(), 'imported');
  assert.equal(await page.$(`#sweeps tr[data-sweep="${s.own.id}"] .tag.imported`), null);
  assert.match(await page.textContent(`#sweeps tr[data-sweep="${id}"]`), /record logs · hardware not said/);
  // Its page says where its runs ran and names each log instead of a worker.
  await page.goto(`${coord.url}/sweeps/${id}`);
  await page.waitForSelector('#imported-note');
  assert.match(await page.textContent('#imported-note'), /Imported from 3 record logs: these runs ran elsewhere/);
  const workers = await page.$$eval('#run-table tbody tr td:nth-child(8)', (tds) => tds.map((t) => t.textContent));
  assert.deepEqual(workers.sort(), s.logs.map((f) => `imported: ${path.basename(f)}`).sort());
  await page.waitForFunction(() => document.getElementById('app').dataset.ready === '1');
  // A run's page shows its log's facts and no attempts.
  await page.goto(`${coord.url}/runs/${runs[0].id}`);
  await page.waitForSelector('#imported-log');
  assert.equal(await page.textContent('#imported-file'), runs[0].imported.file_name);
  assert.match(await page.textContent('#imported-log'), /8x NVIDIA H100 80GB HBM3/);
  assert.equal(await page.$('#attempts'), null);
});

test("a sweep of this cluster's puts the imported logs beside its variants", async () => {
  const {page, coord} = s;
  assert.ok(s.importedId, 'the upload test ran first');
  await page.goto(`${coord.url}/sweeps/${s.own.id}`);
  await waitFor('the own sweep to finish on the page', async () =>
    (await page.textContent('#sweep-head .badge')) === 'succeeded', 240000, 250);
  await page.waitForSelector(`#compare-with input[data-with="${s.importedId}"]`);
  await page.waitForFunction(() => document.getElementById('app').dataset.ready === '1');
  const before = await page.$eval('#chart-val', (el) => Number(el.dataset.series));
  await page.check(`#compare-with input[data-with="${s.importedId}"]`);
  const name = `old-record@imported-${s.importedId}`;
  const row = await page.waitForSelector(`#compare-table tr[data-variant="${name}"]`);
  assert.equal(await row.getAttribute('class'), 'imported-row');
  const text = await row.textContent();
  assert.match(text, /imported.*hardware not said/);
  assert.match(text, /time not comparable/);
  // The row's loss difference is the one `ablate compare --with` prints.
  const cliCompare = JSON.parse(cli(coord.grpc, ['--json', 'compare', String(s.own.id), '--with', s.importedId]));
  const mine = cliCompare.variants.find((v) => v.name === name);
  assert.ok(mine.imported && !mine.imported.like_for_like);
  const loss = await page.textContent(`#compare-table tr[data-variant="${name}"] td:nth-child(4)`);
  const d = mine.loss_vs_baseline.difference;
  assert.ok(loss.startsWith(`${d > 0 ? '+' : ''}${d.toFixed(4)}`), `${loss} vs ${d}`);
  // The logs' mean curve is drawn dashed beside the own variants, and the choice is in the URL.
  await waitFor('the imported curve on the val chart', () => page.$eval('#chart-val',
    (el, before) => Number(el.dataset.series) === before + 1, before));
  const dashed = await page.$eval('#chart-val', (el) => el.uplot.series.slice(1)
    .filter((x) => Array.isArray(x.dash) && x.dash.length).map((x) => x.label));
  assert.deepEqual(dashed, [name]);
  assert.match(page.url(), new RegExp(`with=${s.importedId}`));
  const shot = env('ABLATE_SCREENSHOT_DIR');
  fs.mkdirSync(shot, {recursive: true});
  await page.screenshot({path: path.join(shot, 'imported-beside-own.png'), fullPage: true});
  // Reloaded from the URL, the page shows the same row.
  await page.reload();
  await page.waitForSelector(`#compare-table tr[data-variant="${name}"]`);
  assert.deepEqual(s.watch.errors, [], 'console or page errors');
});
