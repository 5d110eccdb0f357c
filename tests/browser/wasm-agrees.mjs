// Native == wasm: the page's own WebAssembly, in headless Chromium, runs seeds of the seed
// sweep and must print byte for byte the lines the native binary printed for them.
// Usage: node tests/browser/wasm-agrees.mjs <dist dir> <file of `kubeloop sweep --hashes` output> <duration ms>
// Prints how many seeds agreed and how long the page took; exits non-zero on any difference.
import { readFile } from 'node:fs/promises';
import { serveDist, launch } from './serve-dist.mjs';

const [dist, nativeFile, endArg] = process.argv.slice(2);
if (!dist || !nativeFile || !endArg) {
  console.error('usage: node tests/browser/wasm-agrees.mjs <dist dir> <native hashes file> <duration ms>');
  process.exit(2);
}
const end = Number(endArg);
const native = new Map();
for (const line of (await readFile(nativeFile, 'utf8')).split('\n')) {
  const m = /^(\d+) (?:[0-9a-f]{16}$|failed: )/.exec(line);
  if (m) native.set(Number(m[1]), line);
}
if (native.size === 0) {
  console.error(`${nativeFile}: no seed lines (expected the output of kubeloop sweep N --hashes)`);
  process.exit(2);
}
const seeds = [...native.keys()].sort((a, b) => a - b);
if (seeds[seeds.length - 1] - seeds[0] + 1 !== seeds.length) {
  console.error(`${nativeFile}: the seeds are not one consecutive range`);
  process.exit(2);
}

const { server, base } = await serveDist(dist);
const browser = await launch();
const page = await browser.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
await page.goto(base);
await page.waitForFunction(() => window.wasmBindings && window.wasmBindings.kubeloopSweep, null, { timeout: 60000 });

const batch = 10;
let agreed = 0;
const differ = [];
const started = Date.now();
for (let i = 0; i < seeds.length; i += batch) {
  const from = seeds[i];
  const count = Math.min(batch, seeds.length - i);
  const out = await page.evaluate(([f, c, e]) => window.wasmBindings.kubeloopSweep(f, c, e), [from, count, end]);
  const lines = out.split('\n').filter((l) => l);
  for (let k = 0; k < count; k++) {
    const want = native.get(from + k);
    const got = lines[k];
    if (got === want) agreed++;
    else differ.push(`seed ${from + k}:\n  native: ${want}\n  wasm:   ${got}`);
  }
}
const wall = (Date.now() - started) / 1000;
await browser.close();
server.close();
if (errors.length) {
  console.log(`page errors: ${errors.join('; ')}`);
  process.exit(1);
}
console.log(`native == wasm: ${agreed} of ${seeds.length} seeds (${seeds[0]}..${seeds[seeds.length - 1]}, ${end / 1000}s each) agree, in ${wall.toFixed(1)}s in headless Chromium`);
if (differ.length) {
  console.log(differ.slice(0, 20).join('\n'));
  process.exit(1);
}
