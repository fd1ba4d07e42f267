// The coordinator's JSON API and live updates (server-sent events), as the pages use them.
// int64 fields arrive as strings (the proto3 JSON mapping); num() turns them into numbers.

let clockOffsetMs = 0;  // server clock - this browser's clock

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function num(x) {
  return x === undefined || x === null || x === '' ? 0 : Number(x);
}

// The coordinator's current time, as far as this page can tell (for heartbeat ages).
export function serverNow() {
  return Date.now() + clockOffsetMs;
}

function noteServerClock(res) {
  const now = Number(res.headers.get('X-Ablate-Now-Ms'));
  if (now > 0) clockOffsetMs = now - Date.now();
}

function toLogin() {
  const next = location.pathname + location.search;
  location.assign(`/login?next=${encodeURIComponent(next)}`);
}

// GET a JSON document; throws ApiError with the coordinator's message on failure, and sends the
// browser to the login form when the client token is required.
export async function getJson(path) {
  return reply(await fetch(path, {headers: {Accept: 'application/json'}}));
}

// A reply's JSON body; ApiError with the coordinator's message on failure, and the login form
// when the client token is required.
async function reply(res) {
  noteServerClock(res);
  if (res.status === 401) {
    toLogin();
    throw new ApiError(401, 'the client token is required');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, body?.error?.message ?? res.statusText);
  return body;
}

// POST a JSON body and read the JSON reply; errors as getJson's.
export async function postJson(path, body) {
  return reply(await fetch(path, {method: 'POST', body: JSON.stringify(body),
    headers: {Accept: 'application/json', 'Content-Type': 'application/json'}}));
}

// Like getJson, but null for a 404 (an endpoint this coordinator does not have, or an unknown id).
export async function getJsonOrNull(path) {
  try {
    return await getJson(path);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

// Opens a live stream and calls handlers[event](data) for each message. The browser reconnects
// by itself after errors; each (re)connection starts with a fresh snapshot and `ready`.
export function live(path, handlers) {
  const status = document.getElementById('live-status');
  const source = new EventSource(path);
  for (const [event, handler] of Object.entries(handlers)) {
    source.addEventListener(event, (e) => handler(JSON.parse(e.data)));
  }
  source.addEventListener('ready', (e) => {
    const now = Number(JSON.parse(e.data).now_ms);
    if (now > 0) clockOffsetMs = now - Date.now();
    if (status) status.className = 'live-status on';
  });
  source.addEventListener('error', () => {
    if (status) status.className = 'live-status off';
  });
  window.addEventListener('pagehide', () => source.close());
  return source;
}

// Curve columns (metrics_json.h) merged into a growing per-run store:
// curves.get(runId) = {attempt, step: [], train_time_ms: [], <series>: []}.
export function mergePoints(curves, runId, attemptId, columns, reset = false) {
  let c = curves.get(runId);
  if (!c || reset || c.attempt !== attemptId) {
    c = {attempt: attemptId, step: [], train_time_ms: [], tokens: []};
    curves.set(runId, c);
  }
  const steps = columns.step ?? [];
  const last = c.step.length ? c.step[c.step.length - 1] : -Infinity;
  for (const name of Object.keys(columns)) c[name] ??= new Array(c.step.length).fill(null);
  const keys = Object.keys(c).filter((k) => k !== 'attempt');
  for (let i = 0; i < steps.length; i++) {
    if (steps[i] <= last) continue;  // already had it (snapshot and stream overlap)
    for (const k of keys) c[k].push(columns[k] ? columns[k][i] : null);
  }
  return c;
}
