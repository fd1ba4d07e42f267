// The README's picture of the dashboard (docs/img/dashboard.png): opens a finished sweep's page in
// headless Chromium, waits until its comparison with the baseline and its loss curves (one series
// per variant) are drawn, and writes a PNG of both. scripts/dashboard_picture.sh trains the demo
// sweep, serves it and runs this; needs ABLATE_WEB_ROOT (web/, where playwright-core is).
//   node tests/web/picture.mjs SWEEP_PAGE_URL OUT.png [REPORT.json]
//   node tests/web/picture.mjs --check     (only starts and stops Chromium)
// REPORT.json gets what the page showed: {picture, series, compare, errors}. Exits 1, saying why,
// when the page does not draw or logs a console or page error; no picture is written then.
import fs from 'node:fs';
import path from 'node:path';

import {launchChromium, waitFor, watchErrors} from './harness.mjs';

// The page laid out 1600 CSS pixels wide, where the comparison and the charts fit in 1200, then
// drawn at 0.8 scale: a 1280x960 picture.
const VIEWPORT = {width: 1600, height: 1200};
const SCALE = 0.8;
const PICTURE = {width: VIEWPORT.width * SCALE, height: VIEWPORT.height * SCALE};

function say(message) {
  console.log(`picture: ${message}`);
}

// The labels of the chart's series once every one of them has points, else null.
function chartLabels(page, id) {
  return page.$eval(id, (el) => {
    const u = el.uplot;
    const drawn = u && u.data.length > 1 && u.data.slice(1).every((ys) => ys.some((y) => y !== null));
    return drawn ? u.series.slice(1).map((s) => s.label) : null;
  });
}

// Waits for both loss charts and a comparison row per variant; returns what they show.
async function waitDrawn(page) {
  await page.waitForSelector('#app[data-ready="1"]', {timeout: 30000});
  const series = {};
  for (const id of ['#chart-train', '#chart-val']) {
    series[id.slice(1)] = await waitFor(`${id} to draw its curves`, () => chartLabels(page, id), 30000, 250);
  }
  const variants = series['chart-train'];
  const compare = await waitFor(`a row per variant in #compare-table (${variants.length})`, async () => {
    const rows = await page.$$eval('#compare-table tbody tr', (trs) => trs.map((tr) => tr.dataset.variant));
    return rows.length === variants.length && rows;
  }, 30000, 250);
  return {series, compare};
}

function withErrors(message, errors) {
  return errors.length ? `${message}\nthe page logged:\n  ${errors.join('\n  ')}` : message;
}

async function picture(browser, url, out, report) {
  const context = await browser.newContext({viewport: VIEWPORT, deviceScaleFactor: SCALE});
  const watch = watchErrors(context);
  const page = await context.newPage();
  say(`opening ${url}`);
  await page.goto(url);
  const shown = await waitDrawn(page).catch((e) => { throw new Error(withErrors(e.message, watch.errors)); });
  say(`drawn: curves of ${shown.series['chart-train'].join(', ')}; a compare row for each`);
  // The head and the variant table would push the charts out of the picture: it starts at the
  // comparison.
  await page.$eval('#compare', (el) => window.scrollTo(0, el.getBoundingClientRect().top + scrollY - 12));
  if (report) {
    fs.writeFileSync(report, JSON.stringify({picture: PICTURE, ...shown, errors: watch.errors}, null, 2));
  }
  if (watch.errors.length) throw new Error(withErrors('the page is not fit for a picture', watch.errors));
  fs.mkdirSync(path.dirname(path.resolve(out)), {recursive: true});
  await page.screenshot({path: out, animations: 'disabled', caret: 'hide'});
  say(`wrote ${out}: ${PICTURE.width}x${PICTURE.height}, ${fs.statSync(out).size} bytes`);
}

async function main(args) {
  const check = args[0] === '--check';
  const [url, out, report] = args;
  if (!check && (!url || !out)) {
    console.error('usage: node tests/web/picture.mjs SWEEP_PAGE_URL OUT.png [REPORT.json] | --check');
    return 2;
  }
  const browser = await launchChromium();
  try {
    if (!check) await picture(browser, url, out, report);
  } finally {
    await browser.close();
  }
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  console.error(`picture: FAILED: ${e.message}`);
  process.exitCode = 1;
}
