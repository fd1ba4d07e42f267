// Real processes for the browser tests and the render benchmark: ablate-coordinator (with its
// dashboard on 127.0.0.1:0), ablate-worker, the ablate CLI, and headless Debian Chromium driven
// by playwright-core from web/node_modules. Paths come from the environment (set by ctest):
// ABLATE_COORDINATOR_BIN, ABLATE_WORKER_BIN, ABLATE_TRAIN_BIN, ABLATE_DATA_BIN, ABLATE_CLI_BIN,
// ABLATE_SOURCE_DIR, ABLATE_WEB_ROOT.
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import {createRequire} from 'node:module';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run'];

export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run this through ctest, which sets it)`);
  return value;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// Polls `fn` until it returns a truthy value; throws `what` after `timeoutMs`.
export async function waitFor(what, fn, timeoutMs = 60000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

// A child process with its stderr and stdout in files under `dir`.
export class Child {
  // `extraEnv`: variables added to this process's environment for the child.
  constructor(name, argv, dir, extraEnv = {}) {
    this.name = name;
    this.log = path.join(dir, `${name}.log`);
    const fd = fs.openSync(this.log, 'a');
    this.proc = spawn(argv[0], argv.slice(1),
      {stdio: ['ignore', fd, fd], env: {...process.env, ...extraEnv}});
    fs.closeSync(fd);
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({code, signal})));
  }

  // SIGTERM, then SIGKILL after `graceMs`; resolves with the exit and how long it took.
  async stop(graceMs = 10000) {
    const t0 = Date.now();
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return {ms: 0};
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    const result = await this.exited;
    clearTimeout(timer);
    return {...result, ms: Date.now() - t0};
  }

  tail(chars = 3000) {
    try { return fs.readFileSync(this.log, 'utf8').slice(-chars); } catch { return ''; }
  }
}

async function readPort(file, child) {
  return Number(await waitFor(`${child.name} to write ${file}`, () => {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited: ${child.tail()}`);
    return fs.existsSync(file) && fs.readFileSync(file, 'utf8').trim();
  }, 30000, 50));
}

// Starts ablate-coordinator on loopback ports chosen by the OS; returns {child, grpc, url}.
export async function startCoordinator(dir, extra = []) {
  const child = new Child('coordinator', [env('ABLATE_COORDINATOR_BIN'), '--listen', '127.0.0.1:0',
    '--port-file', path.join(dir, 'port'), '--http', '127.0.0.1:0',
    '--http-port-file', path.join(dir, 'http-port'), '--web-root', env('ABLATE_WEB_ROOT'),
    '--data-dir', dir, '--heartbeat-ms', '200', '--lease-ms', '4000', ...extra], dir);
  const grpc = await readPort(path.join(dir, 'port'), child);
  const http = await readPort(path.join(dir, 'http-port'), child);
  return {child, grpc: `127.0.0.1:${grpc}`, url: `http://127.0.0.1:${http}`};
}

// The Debian-text dataset the real trainer trains on (tests/data/make_debian_text.sh).
export function makeDataset(dir) {
  const out = path.join(dir, 'datasets', 'debian-text');
  const r = spawnSync('bash', [path.join(env('ABLATE_SOURCE_DIR'), 'tests/data/make_debian_text.sh'), out],
    {env: {...process.env, ABLATE_DATA: env('ABLATE_DATA_BIN')}, encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`make_debian_text.sh failed: ${r.stderr}`);
  return path.join(dir, 'datasets');
}

export function startWorker(dir, grpc, datasets, slots) {
  return new Child('worker', [env('ABLATE_WORKER_BIN'), '--coordinator', grpc, '--work-dir',
    path.join(dir, 'work'), '--data-dir', datasets, '--cpu-slots', String(slots), '--gpus', 'none',
    '--name', 'local', '--trainer', env('ABLATE_TRAIN_BIN'), '--grace-ms', '2000'], dir);
}

// A worker as a Slurm pilot would start it (`ablate-worker --slurm --pool POOL`), with the
// variables Slurm sets for the task of step 0 of job `jobId` on cluster "lab"; no CPU slots and
// no GPUs, so that it takes no runs.
export function startSlurmWorker(dir, grpc, datasets, pool, jobId) {
  return new Child(`pilot-${jobId}`, [env('ABLATE_WORKER_BIN'), '--slurm', '--pool', pool,
    '--coordinator', grpc, '--work-dir', path.join(dir, 'pilots'), '--data-dir', datasets,
    '--cpu-slots', '0', '--trainer', env('ABLATE_TRAIN_BIN'), '--grace-ms', '2000'], dir,
  {SLURM_JOB_ID: String(jobId), SLURM_CLUSTER_NAME: 'lab', SLURM_NODEID: '0',
    SLURM_JOB_NUM_NODES: '1', SLURM_STEP_ID: '0', CUDA_VISIBLE_DEVICES: ''});
}

// `ablate --server grpc ...args` to completion; returns stdout, throws with stderr on failure.
export function cli(grpc, args) {
  const r = spawnSync(env('ABLATE_CLI_BIN'), ['--server', grpc, ...args], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`ablate ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

export function submit(grpc, dir, name, yaml) {
  const file = path.join(dir, `${name}.yaml`);
  fs.writeFileSync(file, yaml);
  return JSON.parse(cli(grpc, ['--json', 'submit', file]));
}

export async function getJson(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

// playwright-core as installed in web/node_modules by ./dev.sh deps (or `npm ci`).
export function playwright() {
  const require = createRequire(path.join(env('ABLATE_WEB_ROOT'), 'package.json'));
  try {
    return require('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is not installed in ${env('ABLATE_WEB_ROOT')}/node_modules: ` +
      `run ./dev.sh deps (or 'npm ci' there): ${e.message}`);
  }
}

export async function launchChromium() {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install chromium (./dev.sh deps does)`);
  }
  return playwright().chromium.launch({executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true});
}

// Collects console errors and page errors of every page of `context`.
export function watchErrors(context) {
  const errors = [];
  context.on('page', (page) => track(page, errors));
  return {errors, track: (page) => track(page, errors)};
}

function track(page, errors) {
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`${page.url()}: console: ${msg.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${page.url()}: page error: ${e.message}`));
}
