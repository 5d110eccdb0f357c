// Soak of the page: the default scenario plays at 100x (or SPEED: 1x, 10x, 100x, max) in
// headless Chromium for MINUTES of wall time; every 30 s (every twelfth of a shorter run)
// the simulated clock, the WebAssembly memory, the JavaScript heap and the DOM size are
// sampled, the JavaScript heap after a full collection (a sample between collections
// measures the garbage not yet collected, which swings by a megabyte in a heap of four).
// Memory must stay flat once the first minutes have passed: the last
// third of the run may not hold more than the middle third plus 10 % (a linear leak
// shows as steady growth across the thirds).
// Usage: node tests/soak/page.mjs <dist dir> [MINUTES] [SPEED]
import { serveDist, launch } from '../browser/serve-dist.mjs';

const [dist, minArg, speedArg] = process.argv.slice(2);
const speeds = ['1x', '10x', '100x', 'max'];
const speed = speeds.indexOf(speedArg || '100x');
if (!dist || speed < 0) {
  console.error('usage: node tests/soak/page.mjs <dist dir> [MINUTES] [1x|10x|100x|max]');
  process.exit(2);
}
const minutes = Number(minArg || 30);
const every = Math.min(30000, (minutes * 60000) / 12);
const { server, base } = await serveDist(dist);
const browser = await launch(['--enable-precise-memory-info', '--disable-background-timer-throttling', '--disable-renderer-backgrounding']);
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
// Keep the module's instance: its memory is the simulation's heap.
await page.addInitScript(() => addEventListener('TrunkApplicationStarted', (e) => (window.__wasm = e.detail.wasm)));
await page.goto(base);
await page.waitForSelector('header .clock');
await page.selectOption('header .controls select >> nth=0', String(speed));
if ((await page.getAttribute('header .controls button >> nth=0', 'aria-pressed')) !== 'true') await page.click('header .controls button >> nth=0');

const cdp = await page.context().newCDPSession(page);
const samples = [];
const started = Date.now();
const sample = async () => {
  await cdp.send('HeapProfiler.collectGarbage');
  const s = await page.evaluate(() => ({
    clock: document.querySelector('header .clock').textContent,
    wasmMb: window.__wasm ? window.__wasm.memory.buffer.byteLength / 1048576 : null,
    jsMb: performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null,
    nodes: document.getElementsByTagName('*').length,
  }));
  samples.push({ s: Math.round((Date.now() - started) / 1000), simS: Number(/[\d.]+/.exec(s.clock)[0]), wasmMb: s.wasmMb, jsMb: Math.round(s.jsMb * 10) / 10, domNodes: s.nodes });
};
await sample();
while (Date.now() - started < minutes * 60000) {
  await new Promise((r) => setTimeout(r, every));
  await sample();
}
await browser.close();
server.close();
const third = Math.floor(samples.length / 3);
const peak = (a, k) => Math.max(...a.map((x) => x[k]));
const middle = samples.slice(third, 2 * third);
const last = samples.slice(2 * third);
const flat = (k) => peak(last, k) <= peak(middle, k) * 1.1;
const report = {
  minutes,
  speed: speeds[speed],
  simulatedSeconds: samples[samples.length - 1].simS,
  wasmMb: { first: samples[0].wasmMb, middlePeak: peak(middle, 'wasmMb'), lastPeak: peak(last, 'wasmMb') },
  jsMb: { first: samples[0].jsMb, middlePeak: peak(middle, 'jsMb'), lastPeak: peak(last, 'jsMb') },
  domNodes: { middlePeak: peak(middle, 'domNodes'), lastPeak: peak(last, 'domNodes') },
  flat: { wasm: flat('wasmMb'), js: flat('jsMb'), dom: flat('domNodes') },
  samples,
  errors,
};
console.log(JSON.stringify(report));
const ok = errors.length === 0 && report.flat.wasm && report.flat.js && report.flat.dom && samples.length >= 6;
process.exit(ok ? 0 : 1);
