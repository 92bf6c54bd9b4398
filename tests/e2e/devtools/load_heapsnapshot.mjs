// load_heapsnapshot.mjs: loads a .heapsnapshot with the DevTools front end that
// Chromium bundles (headless, over the DevTools protocol), as the Memory tab's
// Load does: DevTools' own HeapSnapshotLoader parses it and builds the
// snapshot. Prints {"nodeCount", "totalSize", "types": {name: {count, self}}}
// and exits 0, or says why and exits 1.
//
//   node --experimental-websocket load_heapsnapshot.mjs FILE.heapsnapshot [CHROMIUM]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [file, browser = 'chromium'] = process.argv.slice(2);
const text = readFileSync(file, 'utf8');
const profile = mkdtempSync(join(tmpdir(), 'dnprof-devtools-'));
const port = 20000 + (process.pid % 20000);
const chrome = spawn(browser, ['--headless=new', '--no-sandbox', `--remote-debugging-port=${port}`,
  '--remote-allow-origins=*', `--user-data-dir=${profile}`, 'about:blank'], { stdio: 'ignore' });
const sleep = ms => new Promise(r => setTimeout(r, ms));
const done = (code, msg) => {
  (code ? console.error : console.log)(msg);
  chrome.kill('SIGKILL');
  try { rmSync(profile, { recursive: true, force: true }); } catch { }
  process.exit(code);
};
// A browser that cannot start is one line, not an unhandled 'error' and its stack.
chrome.on('error', e => done(1, `devtools: cannot run ${browser}: ${e.message} (tools/install-deps installs it)`));
setTimeout(() => done(1, 'devtools: no answer within 100 s'), 100000);
let ver;
for (let i = 0; i < 300 && !ver; i++) {
  try { ver = await (await fetch(`http://127.0.0.1:${port}/json/version`)).json(); } catch { await sleep(100); }
}
if (!ver) done(1, `devtools: ${browser} did not start`);
const ws = new WebSocket(ver.webSocketDebuggerUrl);
await new Promise(r => ws.onopen = r);
let id = 0;
const pending = new Map();
ws.onmessage = ev => {
  const m = JSON.parse(ev.data);
  if (m.id && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); }
};
const send = (method, params = {}, sessionId) => new Promise(r => {
  const i = ++id; pending.set(i, r); ws.send(JSON.stringify({ id: i, method, params, sessionId }));
});
const t = await send('Target.createTarget', { url: 'devtools://devtools/bundled/devtools_app.html' });
const a = await send('Target.attachToTarget', { targetId: t.result.targetId, flatten: true });
const sid = a.result.sessionId;
const expr = `(async () => {
  const m = await import('./entrypoints/heap_snapshot_worker/heap_snapshot_worker.js');
  const loader = new m.HeapSnapshotLoader.HeapSnapshotLoader({ sendEvent() {} });
  loader.write(${JSON.stringify(text)});
  loader.close();
  await loader.parsingComplete;
  const ch = new MessageChannel();
  new m.HeapSnapshot.SecondaryInitManager(ch.port1);
  const snap = await loader.buildSnapshot(ch.port2);
  let filter = {};
  try {
    const model = await import('./models/heap_snapshot_model/heap_snapshot_model.js');
    filter = new model.HeapSnapshotModel.NodeFilter();
  } catch { }
  const agg = snap.aggregatesWithFilter(filter);
  const types = {};
  for (const k of Object.keys(agg))
    types[agg[k].name] = { count: agg[k].count, self: agg[k].self };
  return JSON.stringify({ nodeCount: snap.nodeCount, totalSize: snap.totalSize, types });
})()`;
let r;
for (let tries = 0; tries < 50; tries++) { /* until the front end's modules are there */
  r = await send('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true }, sid);
  if (r.result?.result?.type === 'string') break;
  await sleep(200);
}
if (r.result?.result?.type !== 'string')
  done(1, 'devtools could not load the snapshot: ' +
          JSON.stringify(r.result?.exceptionDetails?.exception?.description ?? r).slice(0, 2000));
done(0, r.result.result.value);
