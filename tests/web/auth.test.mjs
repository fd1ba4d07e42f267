// The dashboard behind a client token: the pages send a browser without the token to the login
// form, and the token typed there (kept as a cookie) opens the API and the live streams.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {launchChromium, startCoordinator, tempDir, watchErrors} from './harness.mjs';

const shots = process.env.ABLATE_SCREENSHOT_DIR || tempDir('ablate-shots-');
const s = {};

before(async () => {
  s.dir = tempDir('ablate-web-auth-');
  fs.writeFileSync(path.join(s.dir, 'client.token'), 'sesame-42\n');
  s.coord = await startCoordinator(s.dir, ['--client-token-file', path.join(s.dir, 'client.token')]);
  s.browser = await launchChromium();
  s.context = await s.browser.newContext();
  s.watch = watchErrors(s.context);
  s.page = await s.context.newPage();
});

after(async () => {
  await s.browser?.close();
  await s.coord?.child.stop();
  if (process.exitCode) console.error(s.coord?.child.tail());
  else if (s.dir) fs.rmSync(s.dir, {recursive: true, force: true});
});

test('without the token the API answers 401 and the page asks for it', async () => {
  const res = await fetch(`${s.coord.url}/api/sweeps`);
  assert.equal(res.status, 401);
  assert.equal((await res.json()).error.code, 'UNAUTHENTICATED');
  // The page asks /api/auth first and goes to the login form without a refused request.
  await s.page.goto(`${s.coord.url}/workers`);
  await s.page.waitForURL('**/login?next=%2Fworkers');
  await s.page.waitForSelector('#token');
  assert.deepEqual(s.watch.errors, []);
});

test('a wrong token is refused, the right one opens the dashboard', async () => {
  const {page} = s;
  await page.fill('#token', 'wrong');
  await page.click('#login-button');
  await page.waitForSelector('#login-error');
  await page.fill('#token', 'sesame-42');
  await page.click('#login-button');
  await page.waitForURL('**/workers');
  await page.waitForSelector('#workers');
  await page.goto(`${s.coord.url}/sweeps`);
  await page.waitForSelector('#sweeps');
  await page.waitForSelector('#live-status.on');
  await page.screenshot({path: path.join(shots, 'login.png')});
  assert.deepEqual(s.watch.errors, []);
});
