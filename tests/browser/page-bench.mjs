// The scale benchmark in the page's own WebAssembly, in headless Chromium: the run
// `kubeloop bench --nodes N --pods M` makes natively, through window.wasmBindings.kubeloopBench.
// Usage: node tests/browser/page-bench.mjs <dist dir> NODESxPODS...
// Prints one JSON line per size ({"error": ...} when the page could not run it, such as a
// WebAssembly memory past the tab's 4 GiB); exits non-zero only when the page fails to load.
import { serveDist, launch } from './serve-dist.mjs';

const [dist, ...sizes] = process.argv.slice(2);
if (!dist || sizes.length === 0 || !sizes.every((s) => /^\d+x\d+$/.test(s))) {
  console.error('usage: node tests/browser/page-bench.mjs <dist dir> NODESxPODS...');
  process.exit(2);
}
const { server, base } = await serveDist(dist);
const browser = await launch();
try {
  for (const size of sizes) {
    const [nodes, pods] = size.split('x').map(Number);
    // A fresh page per size: WebAssembly memory never shrinks.
    const page = await browser.newPage();
    await page.goto(base);
    await page.waitForFunction(() => window.wasmBindings && window.wasmBindings.kubeloopBench, null, { timeout: 60000 });
    let line;
    try {
      line = await page.evaluate(([n, p]) => window.wasmBindings.kubeloopBench(n, p), [nodes, pods]);
    } catch (e) {
      line = JSON.stringify({ nodes, pods, error: String(e.message || e).split('\n')[0] });
    }
    console.log(line);
    await page.close().catch(() => {});
  }
} finally {
  await browser.close();
  server.close();
}
