// Two builds of the page side by side in one headless Chromium at 1280×800: the measure
// test's keystroke (a digit typed over the default Deployment's replicas, then Ctrl+Enter),
// in blocks of ten, alternately in each page, so that the machine's changing speed weighs on
// both alike. Prints, for each build, the mean time of the keystroke's handlers and render
// (sync) and of the next frame (frame), and the page's work at p50 and p95.
// Usage: node tests/browser/keystroke-ab.mjs <dist A> <dist B> [KEYSTROKES] (default 300).
import { serveDist, launch } from './serve-dist.mjs';

const [distA, distB, countArg = '300'] = process.argv.slice(2);
if (!distA || !distB || !/^\d+$/.test(countArg)) {
  console.error('usage: node tests/browser/keystroke-ab.mjs <dist A> <dist B> [KEYSTROKES]');
  process.exit(2);
}
const block = 10;
const blocks = Math.max(1, Math.round(Number(countArg) / block));
const browser = await launch();
const servers = [];
const pages = {};
for (const [name, dist] of [['A', distA], ['B', distB]]) {
  const { server, base } = await serveDist(dist);
  servers.push(server);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(base);
  await page.locator('.chip.ok', { hasText: 'checkout-' }).nth(1).waitFor({ timeout: 30000 });
  pages[name] = page;
}
await new Promise((r) => setTimeout(r, 3000));
const times = { A: [], B: [] };
for (let b = 0; b < blocks; b++) {
  for (const name of b % 2 ? ['B', 'A'] : ['A', 'B']) {
    await pages[name].bringToFront();
    times[name].push(...(await pages[name].evaluate(async ({ block, first }) => {
      const ta = document.querySelector('.code textarea');
      const frame = () => new Promise((r) => requestAnimationFrame(() => { const at = performance.now(); setTimeout(() => r(at), 0); }));
      await frame();
      const out = [];
      for (let i = 0; i < block; i++) {
        const digits = /replicas: (\d+)/.exec(ta.value);
        ta.focus();
        ta.setSelectionRange(digits.index + 10, digits.index + 10 + digits[1].length);
        const t0 = performance.now();
        document.execCommand('insertText', false, String(2 + ((first + i) % 2)));
        ta.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', ctrlKey: true, bubbles: true }));
        await Promise.resolve();
        const t1 = performance.now();
        const inFrame = await frame();
        out.push([t1 - t0, performance.now() - inFrame]);
      }
      return out;
    }, { block, first: b * block })));
  }
}
for (const [name, dist] of [['A', distA], ['B', distB]]) {
  const xs = times[name];
  const work = xs.map(([s, f]) => s + f).sort((a, b) => a - b);
  const mean = (k) => (xs.reduce((sum, x) => sum + x[k], 0) / xs.length).toFixed(2);
  const pct = (p) => work[Math.floor(work.length * p)].toFixed(1);
  console.log(`${name} ${dist}: ${xs.length} keystrokes, sync ${mean(0)} ms, frame ${mean(1)} ms, work p50 ${pct(0.5)} ms, p95 ${pct(0.95)} ms`);
}
await browser.close();
for (const s of servers) s.close();
