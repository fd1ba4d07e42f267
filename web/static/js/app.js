// The dashboard's entry point: picks the page for the path and renders it into <main>. Every
// page path is served index.html by the coordinator; links are ordinary page loads.
import {getJson} from './api.js';
import {h, fill} from './dom.js';

const ROUTES = [
  [/^\/(sweeps\/?)?$/, 'sweeps', () => import('./pages/sweeps.js')],
  [/^\/sweeps\/([^/]+)\/?$/, 'sweeps', () => import('./pages/sweep.js')],
  [/^\/runs\/([^/]+)\/?$/, 'sweeps', () => import('./pages/run.js')],
  [/^\/workers\/?$/, 'workers', () => import('./pages/workers.js')],
  [/^\/records\/?$/, 'records', () => import('./pages/records.js')],
  [/^\/login\/?$/, '', () => import('./pages/login.js')],
];

// Sends the browser to the login form, before any refused request, when the coordinator wants
// its client token and this browser has not given it.
async function authorized() {
  const auth = await getJson('/api/auth');
  if (!auth.required || auth.authorized) return true;
  location.replace(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  return false;
}

async function main() {
  const root = document.getElementById('app');
  const path = location.pathname;
  for (const [pattern, nav, load] of ROUTES) {
    const match = path.match(pattern);
    if (!match) continue;
    for (const a of document.querySelectorAll('[data-nav]')) {
      a.classList.toggle('current', a.dataset.nav === nav);
    }
    try {
      if (nav !== '' && !(await authorized())) return;
      const page = await load();
      await page.render(root, match[1]);
    } catch (e) {
      fill(root, h('p', {class: 'error'}, String(e.message ?? e)));
    }
    return;
  }
  fill(root, h('p', {class: 'error'}, `No page at ${path}.`), h('a', {href: '/sweeps'}, 'Sweeps'));
}

main();
