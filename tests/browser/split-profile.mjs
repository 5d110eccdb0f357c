// Which functions a first visit runs: opens the page built with an instrumented wasm
// (`kubeloop-split instrument`), lets the default example run, edits it as a newcomer
// would (three times over), and writes the instrumented module's profile memory (a byte per function, set
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
// Three visits, their marks together: what runs can depend on timing (a hash table's probe,
// a frame that falls between two steps, which component a render drops).
const marks = [];
async function visit(edits, wait) {
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
  await page.waitForTimeout(wait);
  // A newcomer's first edits: scale the Deployment, as typed.
  for (const replicas of edits) {
    const at = (await editor.inputValue()).indexOf('replicas: ') + 'replicas: '.length;
    if (at < 'replicas: '.length) throw new Error('the default example has no replicas: line');
    await editor.focus();
    await editor.evaluate((el, at) => el.setSelectionRange(at, at + 1), at);
    await page.keyboard.type(replicas);
    await page.waitForTimeout(6000);
  }
  const bytes = await page.evaluate(() => Array.from(new Uint8Array(window.__exports.__kubeloop_profile.buffer)));
  bytes.forEach((b, i) => { marks[i] |= b; });
  await page.context().close();
}
try {
  // Up then down once the pods have long been Ready, twice; and up as soon as they are
  // Ready, as the page's test "a first visit runs without the rest of the code" does.
  await visit(['5', '1'], 8000);
  await visit(['5', '1'], 8000);
  await visit(['3'], 3000);
  await writeFile(out, Buffer.from(marks));
  console.log(`${marks.filter((b) => b).length} functions ran`);
} finally {
  await browser.close();
  server.close();
}
