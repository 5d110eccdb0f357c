// Soak of `kubeloop serve`: WATCHERS clients watch ConfigMaps while WRITERS clients create,
// update and delete them, for MINUTES of wall time; a third of the watchers drop their
// stream now and then and resume from the last resourceVersion they saw (relisting after
// 410 Gone), as client-go's reflector does. At the end every watcher must have seen every
// write made while it watched, once, in resourceVersion order. The server's resident memory
// is sampled every 30 s (every twelfth of a shorter run) and must stay flat: the last third
// of the samples may not peak more than 10 % above the middle third. The writes' latency is
// summarised per 5 minutes.
// Usage: node tests/soak/serve.mjs <kubeloop binary> [MINUTES] [WATCHERS] [WRITERS]
// Prints the figures as JSON; exits non-zero if anything was lost or the server failed.
import { spawn } from 'node:child_process';
import { readFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';

const [bin, minArg, watchArg, writeArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node tests/soak/serve.mjs <kubeloop binary> [MINUTES] [WATCHERS] [WRITERS]');
  process.exit(2);
}
const minutes = Number(minArg || 60);
const nWatchers = Number(watchArg || 200);
const nWriters = Number(writeArg || 20);
const work = mkdtempSync(join(tmpdir(), 'kubeloop-soak-'));
const kubeconfig = join(work, 'kubeconfig');
const server = spawn(bin, ['serve', 'web/checkout.yaml', '--addr', '127.0.0.1:0', '--speed', '10', '--kubeconfig', kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
let serverLog = '';
server.stdout.on('data', (d) => (serverLog += d));
server.stderr.on('data', (d) => (serverLog += d));
let serverExit = null;
server.on('exit', (code, sig) => (serverExit = `exited with ${code ?? sig}`));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let i = 0; i < 200 && !existsSync(kubeconfig); i++) await sleep(100);
await sleep(200);
const kc = readFileSync(kubeconfig, 'utf8');
const { hostname, port } = new URL(/server: (\S+)/.exec(kc)[1]);
const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(kc)[1], 'base64');
const token = /token: (\S+)/.exec(kc)[1];
const agent = new https.Agent({ keepAlive: true, maxSockets: 1000, ca });
const base = '/api/v1/namespaces/default/configmaps';

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      { hostname, port, path, method, agent, headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(data ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ code: res.statusCode, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.setTimeout(30000, () => req.destroy(new Error('timed out after 30 s')));
    if (data) req.write(data);
    req.end();
  });
}

// Every write that succeeded: [resourceVersion, type, name, wall time].
const writes = [];
const latencies = []; // [wall ms since start, latency ms]
const failures = {};
let stopping = false;
let writersStop = false;
const started = Date.now();
const note = (k) => (failures[k] = (failures[k] || 0) + 1);

async function writer(w) {
  let n = 0;
  const live = [];
  while (!writersStop) {
    const t0 = Date.now();
    let r;
    const op = live.length < 5 ? 'create' : n % 3 === 0 ? 'delete' : 'update';
    try {
      if (op === 'create') {
        const name = `soak-${w}-${n}`;
        r = await request('POST', base, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { soak: 'yes' } }, data: { n: String(n) } });
        if (r.code === 201) live.push(name);
      } else if (op === 'update') {
        const name = live[n % live.length];
        r = await request('PATCH', `${base}/${name}`, { data: { n: String(n) } });
      } else {
        const name = live.shift();
        r = await request('DELETE', `${base}/${name}`);
      }
    } catch (e) {
      note(`${op}: ${e.message}`);
      await sleep(200);
      continue;
    }
    latencies.push([t0 - started, Date.now() - t0]);
    if (r.code >= 200 && r.code < 300) {
      const meta = r.body?.metadata || r.body?.details || {};
      // A DELETE answers with the object as it was last stored before removal; its DELETED
      // event carries a newer resourceVersion, matched by name below.
      writes.push([op === 'delete' ? null : Number(r.body.metadata.resourceVersion), op, r.body?.metadata?.name || meta.name, Date.now()]);
    } else {
      note(`${op}: HTTP ${r.code} ${r.body?.reason || ''}`);
      if (r.code === 429) await sleep(Number(r.body?.details?.retryAfterSeconds || 1) * 1000);
    }
    n++;
    await sleep(50 + ((w * 7 + n * 13) % 100));
  }
}

// A watcher: list to get a resourceVersion, then watch from it; a dropper aborts its
// stream after 5 to 60 s and resumes from the last version it saw.
function watcher(i) {
  const dropper = i % 3 === 0;
  // What a watcher saw, kept small: the resourceVersions of its ADDED and MODIFIED events
  // (strictly increasing, so no version can repeat unnoticed) and a count of DELETED ones.
  const w = { i, dropper, seen: new Uint32Array(1 << 16), nSeen: 0, deleted: 0, startRv: 0, startWall: 0, resumes: 0, relists: 0, errors: 0, gap: false, order: true, lastRv: 0, done: null };
  const list = async () => {
    const r = await request('GET', `${base}?labelSelector=soak%3Dyes`);
    if (r.code !== 200) throw new Error(`list: HTTP ${r.code}`);
    return Number(r.body.metadata.resourceVersion);
  };
  const stream = (rv) =>
    new Promise((resolve) => {
      let buf = '';
      const req = https.request({ hostname, port, agent: false, ca, path: `${base}?labelSelector=soak%3Dyes&watch=1&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=600`, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } }, (res) => {
        if (res.statusCode !== 200) {
          w.errors++;
          res.resume();
          return resolve('error');
        }
        res.setEncoding('utf8');
        res.on('data', (d) => {
          buf += d;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (!line.trim()) continue;
            const ev = JSON.parse(line);
            if (ev.type === 'ERROR') {
              if (ev.object?.code === 410) {
                req.destroy();
                return resolve('gone');
              }
              w.errors++;
              continue;
            }
            const orv = Number(ev.object.metadata.resourceVersion);
            // Events come in increasing resourceVersion; a bookmark may repeat the last one.
            if (ev.type === 'BOOKMARK' ? orv < w.lastRv : orv <= w.lastRv) w.order = false;
            w.lastRv = orv;
            if (ev.type === 'DELETED') w.deleted++;
            else if (ev.type !== 'BOOKMARK') {
              if (w.nSeen === w.seen.length) {
                const bigger = new Uint32Array(w.seen.length * 2);
                bigger.set(w.seen);
                w.seen = bigger;
              }
              w.seen[w.nSeen++] = orv;
            }
          }
        });
        res.on('end', () => resolve('ended'));
        res.on('error', () => resolve('dropped'));
      });
      req.on('error', () => resolve('dropped'));
      if (dropper) setTimeout(() => req.destroy(), 5000 + ((i * 7919) % 55000));
      const stop = setInterval(() => {
        if (stopping) {
          clearInterval(stop);
          req.destroy();
          resolve('stopped');
        }
      }, 200);
      req.on('close', () => clearInterval(stop));
      req.end();
    });
  w.done = (async () => {
    await sleep(i * 20);
    w.startRv = await list();
    w.lastRv = w.startRv;
    w.startWall = Date.now();
    while (!stopping) {
      const how = await stream(w.lastRv);
      if (stopping) break;
      if (how === 'gone') {
        // Compacted past our version: relist, and what happened in between is not owed.
        w.relists++;
        w.gap = true;
        w.lastRv = await list();
      } else {
        w.resumes++;
      }
      if (how === 'error') await sleep(500);
    }
  })().catch((e) => {
    w.errors++;
    w.failure = e.message;
  });
  return w;
}

const watchers = [];
for (let i = 0; i < nWatchers; i++) watchers.push(watcher(i));
await sleep(nWatchers * 20 + 1000);
const writerDone = [];
for (let w = 0; w < nWriters; w++) writerDone.push(writer(w));

const rss = [];
const sampleRss = () => {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]);
    rss.push([Math.round((Date.now() - started) / 1000), Math.round(kb / 1024)]);
  } catch {
    /* the server is gone: reported below */
  }
};
sampleRss();
const sampler = setInterval(sampleRss, Math.min(30000, (minutes * 60000) / 12));
const endAt = started + minutes * 60000;
while (Date.now() < endAt && serverExit === null) await sleep(1000);
writersStop = true;
clearInterval(sampler);
sampleRss();
await Promise.all(writerDone);
// Let the last writes reach every stream before the watchers stop.
await sleep(3000);
stopping = true;
await Promise.all(watchers.map((w) => w.done));
server.kill('SIGTERM');

// Every create and update made while a watcher watched (without a relist gap) must be in
// its stream, once; as many deletions as were made while it watched must have reached it.
let lost = 0;
let duplicated = 0;
let outOfOrder = 0;
let checked = 0;
const writtenRvs = Uint32Array.from(writes.filter(([rv]) => rv !== null).map(([rv]) => rv)).sort();
for (const w of watchers) {
  if (!w.order) outOfOrder++;
  if (w.gap || w.failure) continue;
  const seen = w.seen.subarray(0, w.nSeen);
  for (let k = 1; k < seen.length; k++) if (seen[k] <= seen[k - 1]) duplicated++;
  let j = 0;
  for (const rv of writtenRvs) {
    if (rv <= w.startRv) continue;
    checked++;
    while (j < seen.length && seen[j] < rv) j++;
    if (j >= seen.length || seen[j] !== rv) lost++;
  }
  // Deletions are counted from a second after the watch began (a DELETE answered just
  // before may or may not fall inside it).
  const owed = writes.filter(([rv, op, , at]) => op === 'delete' && at > w.startWall + 1000).length;
  if (w.deleted < owed) lost += owed - w.deleted;
}
const windows = {};
for (const [t, ms] of latencies) (windows[Math.floor(t / 300000)] ||= []).push(ms);
const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((a.length * p) / 100))];
const latency = Object.entries(windows).map(([k, a]) => ({ minute: Number(k) * 5, requests: a.length, p50: pct(a, 50), p99: pct(a, 99), max: Math.max(...a) }));
const mb = rss.map(([, m]) => m);
const third = Math.floor(mb.length / 3);
const middlePeak = Math.max(...mb.slice(third, 2 * third));
const lastPeak = Math.max(...mb.slice(2 * third));
const flat = mb.length >= 6 && lastPeak <= middlePeak * 1.1;
const report = {
  minutes,
  watchers: nWatchers,
  droppers: watchers.filter((w) => w.dropper).length,
  writers: nWriters,
  writes: writes.length,
  resumes: watchers.reduce((s, w) => s + w.resumes, 0),
  relists: watchers.reduce((s, w) => s + w.relists, 0),
  watcherErrors: watchers.reduce((s, w) => s + w.errors, 0),
  watcherFailures: watchers.filter((w) => w.failure).map((w) => `${w.i}: ${w.failure}`).slice(0, 5),
  eventsChecked: checked,
  lost,
  duplicated,
  outOfOrder,
  requestFailures: failures,
  latencyMs: latency,
  rssMb: { first: mb[0], min: Math.min(...mb), max: Math.max(...mb), last: mb[mb.length - 1], middlePeak, lastPeak, flat, samples: rss },
  server: serverExit === null ? 'ran to the end' : serverExit,
};
console.log(JSON.stringify(report));
const bad = lost || duplicated || outOfOrder || !flat || serverExit !== null || report.watcherFailures.length || writes.length === 0;
if (bad) console.error(`soak failed; server log tail:\n${serverLog.slice(-2000)}`);
process.exit(bad ? 1 : 0);
