// Browser test of the workers page's pools (issue 38): a real coordinator with an ssh pool of two
// hosts that it cannot reach (loopback ports nothing listens on) and min_nodes 2, so that it tries
// them at once; the page lists each host with its state and the error that says what failed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {after, before, test} from 'node:test';

import {getJson, launchChromium, startCoordinator, tempDir, waitFor, watchErrors} from './harness.mjs';

const s = {};

// A loopback port nothing listens on (the OS's pick, closed again).
function closedPort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

before(async () => {
  s.dir = tempDir('ablate-web-pools-');
  s.ports = [await closedPort(), await closedPort()];
  // The bundle is never copied (no host answers), but the pools file must name a readable one.
  fs.writeFileSync(path.join(s.dir, 'bundle.tar.gz'), 'not copied: no host answers\n');
  fs.writeFileSync(path.join(s.dir, 'pools.yaml'), `pools:
  - name: rented
    kind: ssh
    hosts: [root@127.0.0.1:${s.ports[0]}, root@127.0.0.1:${s.ports[1]}]
    known_hosts: ${path.join(s.dir, 'known_hosts')}
    gpus_per_node: 0
    min_nodes: 2
    bundle: bundle.tar.gz
    worker: {bundle_dir: /opt/ablate, work_dir: /srv/ablate}
`);
  s.coord = await startCoordinator(s.dir, ['--pools', path.join(s.dir, 'pools.yaml')]);
  s.browser = await launchChromium();
  s.context = await s.browser.newContext({viewport: {width: 1400, height: 1000}});
  s.watch = watchErrors(s.context);
  s.page = await s.context.newPage();
});

after(async () => {
  await s.browser?.close();
  await s.coord?.child.stop();
  if (process.exitCode) {
    if (s.coord) console.error(`---- coordinator\n${s.coord.child.tail()}`);
  } else if (s.dir) {
    fs.rmSync(s.dir, {recursive: true, force: true});
  }
});

test('the workers page shows each ssh host, its state and its last error', async () => {
  const {page, coord} = s;
  await waitFor('both hosts tried', async () => {
    const pools = (await getJson(`${coord.url}/api/pools`)).pools ?? [];
    return (pools[0]?.hosts ?? []).filter((h) => h.state === 'unreachable').length === 2;
  }, 60000, 200);
  await page.goto(`${coord.url}/workers`);
  await page.waitForSelector('#pools section[data-pool="rented"] tr[data-host]');
  assert.match(await page.textContent('#pools h2'), /^pool rented \(ssh\)$/);
  for (const port of s.ports) {
    const row = await page.$(`#pools tr[data-host="root@127.0.0.1:${port}"]`);
    assert.ok(row, `a row for port ${port}`);
    const text = await row.textContent();
    assert.match(text, /unreachable/);
    assert.match(await row.$eval('td.host-error', (td) => td.textContent),
      new RegExp(`^host root@127\\.0\\.0\\.1:${port}: does not answer over SSH \\(.*Connection refused`));
  }
  assert.deepEqual(s.watch.errors, [], 'console or page errors');
});
