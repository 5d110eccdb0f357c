// Which functions a first visit runs: opens the page built with an instrumented wasm
// (`kubeloop-split instrument`), lets the default example run, edits it as a newcomer
// would, and writes the instrumented module's profile memory (a byte per function, set
// once the function has run) to OUT. scripts/split-profile turns it into the list of
// functions the page's first download keeps (web/first-visit.txt).
// Usage: node tests/browser/split-profile.mjs <dist dir> <OUT>
import { writeFile } from 'node:fs/promises';
import { serveDist, launch } from './serve-dist.mjs';

const [dist, out] = process.argv.slice(2);
if (!dist || !out) {
  console.error('usage: node tests/browser/split-profile.mjs <dist dir> <OUT>');
  process.exit(2);
}
const { server, base } = await serveDist(dist);
const browser = await launch();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on('pageerror', (e) => console.error('page error:', e.message));
  await page.addInitScript(() => {
    addEventListener('TrunkApplicationStarted', (e) => { window.__exports = e.detail.wasm; });
  });
  await page.goto(base);
  const editor = page.locator('.code textarea');
  await editor.waitFor();
  await page.waitForFunction(() => !document.querySelector('.code textarea').disabled && document.querySelector('svg.diagram'));
  // The default example runs to Ready pods.
  await page.waitForTimeout(8000);
  // A newcomer's first edit: scale the Deployment, as typed.
  const text = await editor.inputValue();
  const at = text.indexOf('replicas:');
  if (at < 0) throw new Error('the default example has no replicas: line');
  await editor.focus();
  await editor.evaluate((el, at) => el.setSelectionRange(at + 'replicas: '.length, at + 'replicas: '.length + 1), at);
  await page.keyboard.type('5');
  await page.waitForTimeout(5000);
  const bytes = await page.evaluate(() => Array.from(new Uint8Array(window.__exports.__kubeloop_profile.buffer)));
  await writeFile(out, Buffer.from(bytes));
  console.log(`${bytes.filter((b) => b).length} functions ran`);
} finally {
  await browser.close();
  server.close();
}
