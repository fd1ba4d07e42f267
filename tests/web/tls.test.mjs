// The dashboard off loopback: refused without a client token unless --http-insecure; served over
// HTTPS with the gRPC certificate (self-signed here); Secure, HttpOnly, SameSite=Strict cookie;
// repeated wrong tokens from one address slowed down.
import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {Child, env, launchChromium, sleep, startCoordinator, tempDir, waitFor, watchErrors} from './harness.mjs';

const s = {};

before(async () => {
  s.dir = tempDir('ablate-web-tls-');
  s.cert = path.join(s.dir, 'cert.pem');
  s.key = path.join(s.dir, 'key.pem');
  const r = spawnSync('/usr/bin/openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes',
    '-keyout', s.key, '-out', s.cert, '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1'], {encoding: 'utf8'});
  assert.equal(r.status, 0, r.stderr);
  fs.writeFileSync(path.join(s.dir, 'client.token'), 'sesame-42\n');
  s.coord = await startCoordinator(s.dir, ['--client-token-file', path.join(s.dir, 'client.token'),
    '--tls-cert', s.cert, '--tls-key', s.key]);
  s.url = s.coord.url.replace('http://', 'https://');
  s.browser = await launchChromium();
  s.context = await s.browser.newContext({ignoreHTTPSErrors: true});
  s.watch = watchErrors(s.context);
  s.page = await s.context.newPage();
});

after(async () => {
  await s.browser?.close();
  await s.coord?.child.stop();
  if (process.exitCode) console.error(s.coord?.child.tail());
  else if (s.dir) fs.rmSync(s.dir, {recursive: true, force: true});
});

// Starts a coordinator with `--http <http>` and `extra`; resolves with its exit (or null while
// it is still serving after it wrote its dashboard port) and its log.
async function tryServe(name, http, extra) {
  const dir = tempDir(`ablate-web-${name}-`);
  const child = new Child('coordinator', [env('ABLATE_COORDINATOR_BIN'), '--listen', '127.0.0.1:0',
    '--data-dir', dir, '--http', http, '--http-port-file', path.join(dir, 'http-port'), ...extra], dir);
  const outcome = await waitFor(`${name} to exit or serve`, async () => {
    if (child.proc.exitCode !== null) return {exit: child.proc.exitCode};
    if (fs.existsSync(path.join(dir, 'http-port'))) return {exit: null};
    return null;
  }, 30000, 50);
  const log = child.tail();
  await child.stop();
  fs.rmSync(dir, {recursive: true, force: true});
  return {...outcome, log};
}

test('off loopback without a token the coordinator refuses to start', async () => {
  const refused = await tryServe('open', '0.0.0.0:0', []);
  assert.equal(refused.exit, 1, refused.log);
  assert.match(refused.log, /--http 0\.0\.0\.0:0 serves the dashboard beyond this machine without a client token/);
  assert.match(refused.log, /--http-insecure/);
  const insecure = await tryServe('insecure', '0.0.0.0:0', ['--http-insecure']);
  assert.equal(insecure.exit, null, insecure.log);
  const loopback = await tryServe('loopback', '127.0.0.1:0', []);
  assert.equal(loopback.exit, null, loopback.log);
});

test('HTTPS with the gRPC certificate; plain HTTP is not served', async () => {
  const res = await s.page.request.get(`${s.url}/api/auth`);
  assert.equal(res.status(), 200);
  assert.deepEqual(await res.json(), {required: true, authorized: false});
  assert.ok(res.headers()['content-type'].startsWith('application/json'));
  // The same port does not answer plain HTTP with the API.
  let plain;
  try {
    plain = await fetch(`${s.coord.url}/api/auth`);
  } catch (e) {
    plain = e;
  }
  assert.ok(plain instanceof Error || plain.status >= 400, `plain HTTP answered ${plain.status}`);
});

test('the right token logs in with a Secure, HttpOnly, SameSite=Strict cookie', async () => {
  const {page} = s;
  await page.goto(`${s.url}/sweeps`);
  await page.waitForURL('**/login?next=%2Fsweeps');
  await page.fill('#token', 'wrong');
  await page.click('#login-button');
  await page.waitForURL(/error=1/);
  await page.fill('#token', 'sesame-42');
  await page.click('#login-button');
  await page.waitForURL('**/sweeps');
  await page.waitForSelector('#sweeps');
  await page.waitForSelector('#live-status.on');
  const cookies = await s.context.cookies(s.url);
  const token = cookies.find((c) => c.name === 'ablate_token');
  assert.ok(token, JSON.stringify(cookies));
  assert.equal(token.httpOnly, true);
  assert.equal(token.secure, true);
  assert.equal(token.sameSite, 'Strict');
  assert.deepEqual(s.watch.errors, []);
});

// POSTs the login form without following the redirect; resolves with the Location.
async function login(request, token) {
  const res = await request.post(`${s.url}/api/login`, {form: {token, next: '/sweeps'}, maxRedirects: 0});
  assert.equal(res.status(), 303);
  return {location: res.headers()['location'], retryAfter: Number(res.headers()['retry-after'] || 0)};
}

test('repeated wrong tokens from one address are slowed down', async () => {
  const {request} = s.context;
  // Three free failures, then each failure doubles the wait (1 s, 2 s, ...); a try during the
  // wait is not looked at. Guess after each wait until the wait is long enough that nothing
  // below can outlast it, however slow this machine is.
  let wait = 0;
  let wrong = 0;
  for (let i = 0; i < 20 && wait < 8; ++i) {
    const r = await login(request, `wrong-${i}`);
    if (/error=slow/.test(r.location)) {
      wait = r.retryAfter;
      if (wait < 8) await sleep(wait * 1000 + 200);
    } else {
      assert.match(r.location, /error=1/);
      ++wrong;
    }
  }
  assert.ok(wait >= 8, `no wait of 8 s or more after ${wrong} wrong tokens (last ${wait})`);
  assert.ok(wrong >= 4, `${wrong} wrong tokens looked at: three free ones, then one per wait`);
  // During the wait even the right token is not looked at, and the API refuses Bearer guesses.
  const right = await login(request, 'sesame-42');
  assert.match(right.location, /^\/login\?error=slow&wait=\d+&next=%2Fsweeps$/);
  const api = await request.get(`${s.url}/api/sweeps`, {headers: {Authorization: 'Bearer sesame-42'}});
  assert.equal(api.status(), 429);
  assert.ok(Number(api.headers()['retry-after']) >= 1);
  // The login page says so (to a browser not logged in: a logged-in one goes on to `next`).
  const fresh = await s.browser.newContext({ignoreHTTPSErrors: true});
  const page = await fresh.newPage();
  await page.goto(`${s.url}${right.location}`);
  assert.match(await page.textContent('#login-error'),
    /Too many wrong tokens from this address: wait \d+ s, then try again/);
  await fresh.close();
});
