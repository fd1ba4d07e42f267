// Dashboard render time (issue 7): the real sweep page, served by the real coordinator from a
// store of 50 runs x 3000 steps (dashboard_fixture), opened in headless Debian chromium through
// playwright-core. The page marks `ablate:data-loaded` (the overlay's curves arrived) and
// `ablate:charts-drawn` (both loss charts drawn); the figure is the time from navigation start
// to charts-drawn, median of N fresh page loads. Baseline, measured in the same run: the same
// page for a sweep of one run (one series per chart). Prints a table and ratios; asserts nothing.
//
//   node bench/dashboard/render_bench.mjs BUILD_DIR [loads=7]
import fs from 'node:fs';
import path from 'node:path';
import {spawnSync} from 'node:child_process';
import {fileURLToPath} from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = path.resolve(process.argv[2] ?? path.join(root, 'build'));
const loads = Number(process.argv[3] ?? 7);
process.env.ABLATE_COORDINATOR_BIN ??= path.join(build, 'server/ablate-coordinator');
process.env.ABLATE_WEB_ROOT ??= path.join(root, 'web');
const {launchChromium, startCoordinator, tempDir, watchErrors} =
  await import('../../tests/web/harness.mjs');

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function measure(context, url, check) {
  const times = {loaded: [], drawn: [], series: 0};
  for (let i = 0; i < loads; i++) {
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForSelector('#app[data-ready="1"]', {timeout: 60000});
    const marks = await page.evaluate(() => ({
      loaded: performance.getEntriesByName('ablate:data-loaded')[0]?.startTime,
      drawn: performance.getEntriesByName('ablate:charts-drawn')[0]?.startTime,
      series: document.querySelector('#chart-train').uplot.series.length - 1,
    }));
    times.loaded.push(marks.loaded);
    times.drawn.push(marks.drawn);
    times.series = marks.series;
    await page.close();
  }
  if (check && times.series !== check) throw new Error(`${url}: ${times.series} series, want ${check}`);
  return {loaded: median(times.loaded), drawn: median(times.drawn), series: times.series};
}

const dir = tempDir('ablate-render-');
const fixture = spawnSync(path.join(build, 'bench/dashboard_fixture'), [dir, '50', '3000'], {encoding: 'utf8'});
if (fixture.status !== 0) throw new Error(`dashboard_fixture failed: ${fixture.stderr}`);
process.stdout.write(fixture.stdout);
const coord = await startCoordinator(dir);
const browser = await launchChromium();
try {
  const context = await browser.newContext({viewport: {width: 1400, height: 1000}});
  const watch = watchErrors(context);
  const rows = [
    ['baseline: 1 run, 1 series per chart', `${coord.url}/sweeps/2`, 1],
    ['50 runs, mean + band per variant (10 series)', `${coord.url}/sweeps/1`, 10],
    ['50 runs, each run (50 series)', `${coord.url}/sweeps/1?seeds=each`, 50],
  ];
  const results = [];
  for (const [name, url, series] of rows) results.push([name, await measure(context, url, series)]);
  if (watch.errors.length) throw new Error(`console errors:\n${watch.errors.join('\n')}`);
  const base = results[0][1].drawn;
  console.log(`median of ${loads} page loads, ms from navigation start (chromium ${browser.version()})`);
  console.log(`${'page'.padEnd(48)} ${'data'.padStart(8)} ${'drawn'.padStart(8)} ${'vs base'.padStart(8)}`);
  for (const [name, r] of results) {
    console.log(`${name.padEnd(48)} ${r.loaded.toFixed(0).padStart(8)} ${r.drawn.toFixed(0).padStart(8)} ` +
      `${(r.drawn / base).toFixed(2).padStart(7)}x`);
  }
  const worst = results[2][1].drawn;
  console.log(`target: a page with 50 series renders in under 1 s: ${worst < 1000 ? 'met' : 'MISSED'} (${worst.toFixed(0)} ms)`);
} finally {
  await browser.close();
  await coord.child.stop();
  fs.rmSync(dir, {recursive: true, force: true});
}
