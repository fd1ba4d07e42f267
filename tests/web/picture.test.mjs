// The README's picture: scripts/dashboard_picture.sh trains the demo sweep, serves it and takes
// the picture, here into $ABLATE_SCREENSHOT_DIR (never over docs/img/dashboard.png). Fails unless
// the script succeeds, the file is a 1280x960 PNG, the page drew a curve per demo variant on both
// charts and a compare row each, and it logged no console or page error.
import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {test} from 'node:test';

import {env, tempDir} from './harness.mjs';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// The baseline, then the ablations of examples/demo-tiny.yaml in its order.
function demoVariants() {
  const yaml = fs.readFileSync(path.join(env('ABLATE_SOURCE_DIR'), 'examples/demo-tiny.yaml'), 'utf8');
  return ['baseline', ...[...yaml.matchAll(/^\s*- \{name: ([^,\s]+),/gm)].map((m) => m[1])];
}

// Width and height from the PNG's IHDR chunk; fails when `file` is not a PNG.
function pngSize(file) {
  const bytes = fs.readFileSync(file);
  assert.ok(bytes.subarray(0, 8).equals(PNG_SIGNATURE), `${file} is not a PNG`);
  assert.equal(bytes.toString('latin1', 12, 16), 'IHDR', `${file}: no IHDR chunk first`);
  return {width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20)};
}

test('dashboard_picture.sh takes the picture of the demo sweep', () => {
  const out = path.join(env('ABLATE_SCREENSHOT_DIR'), 'readme-dashboard.png');
  const dir = tempDir('ablate-picture-test-');
  const report = path.join(dir, 'report.json');
  fs.rmSync(out, {force: true});
  const r = spawnSync('bash', [path.join(env('ABLATE_SOURCE_DIR'), 'scripts/dashboard_picture.sh'),
    '--report', report, out], {encoding: 'utf8', timeout: 380000,
    env: {...process.env, ABLATE_BUILD_DIR: env('ABLATE_BUILD_DIR')}});
  console.log(r.stdout);
  const shown = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : null;
  fs.rmSync(dir, {recursive: true, force: true});
  if (shown) assert.deepEqual(shown.errors, [], 'console or page errors');
  assert.equal(r.status, 0, `dashboard_picture.sh failed (${r.status ?? r.signal}):\n${r.stderr}`);
  assert.deepEqual(pngSize(out), {width: 1280, height: 960});
  const variants = demoVariants();
  assert.equal(variants.length, 6, variants.join(', '));
  assert.deepEqual(shown.series, {'chart-train': variants, 'chart-val': variants});
  assert.deepEqual(shown.compare, variants);
});
