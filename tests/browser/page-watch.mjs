// The page while it simulates a large cluster, in headless Chromium at 1280×800.
// Usage: node tests/browser/page-watch.mjs <dist dir> [NODESxPODS] [SECONDS]
// (default 5000x30000 for 60 s). It measures:
// - boot: navigation → the editor typeable and the diagram drawn, on a first visit to the
//   default page (median of three fresh visits);
// - the page opened at ?bench=NODESxPODS playing as fast as possible: the main thread's
//   long tasks (over 50 ms) for SECONDS (and those after its first ten seconds), and the
//   cluster view's summary by then;
// - then the cluster view scrolled for two seconds, still simulating and then paused: frames
//   drawn per second and the longest gap between two frames.
// Prints one JSON line; exits non-zero only when the page cannot be driven.
import { serveDist, launch } from './serve-dist.mjs';

const [dist, size = '5000x30000', secondsArg = '60'] = process.argv.slice(2);
if (!dist || !/^\d+x\d+$/.test(size) || !/^\d+$/.test(secondsArg)) {
  console.error('usage: node tests/browser/page-watch.mjs <dist dir> [NODESxPODS] [SECONDS]');
  process.exit(2);
}
const [nodes, pods] = size.split('x').map(Number);
const seconds = Number(secondsArg);
const { server, base } = await serveDist(dist);
const browser = await launch();
const out = { nodes, pods };
try {
  // Boot, three first visits.
  const boots = [];
  for (let i = 0; i < 3; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(base);
    const t = await page.waitForFunction(() => {
      const ta = document.querySelector('.code textarea');
      return ta && !ta.disabled && document.querySelector('svg.diagram') ? performance.now() : null;
    }, null, { polling: 'raf', timeout: 60000 });
    boots.push(await t.jsonValue());
    await context.close();
  }
  boots.sort((a, b) => a - b);
  out.boot_ms_median = Math.round(boots[1]);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.addInitScript(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push([e.startTime, e.duration]); }).observe({ type: 'longtask', buffered: true });
  });
  await page.goto(`${base}?bench=${size}`);
  await page.locator('.node').first().waitFor({ timeout: 120000 });
  out.nodes_drawn_ms = Math.round(await page.evaluate(() => performance.now()));
  await page.locator('header select').first().selectOption({ label: 'as fast as possible' });
  const from = await page.evaluate(() => { window.__longTasks = []; return performance.now(); });
  await page.waitForTimeout(seconds * 1000);
  const tasks = await page.evaluate(() => window.__longTasks);
  out.watched_seconds = seconds;
  out.long_tasks = tasks.length;
  out.longest_task_ms = Math.round(Math.max(0, ...tasks.map(([, d]) => d)));
  // The loops' first look at a cluster this size comes in the first seconds.
  const later = tasks.filter(([t]) => t - from > 10000).map(([, d]) => d);
  out.long_tasks_after_10s = later.length;
  out.longest_task_ms_after_10s = Math.round(Math.max(0, ...later));
  out.cluster_summary = await page.locator('.cluster-summary').innerText();
  // Scroll through the cluster view for two seconds, a step per frame (the view's own box
  // when it draws only the rows in sight, else the page): while the run goes on as fast as
  // possible, then paused.
  await page.locator('.cluster-pane').scrollIntoViewIfNeeded();
  const scroll = () => page.evaluate(() => new Promise((resolve) => {
    const box = document.querySelector('.nodes-scroll');
    const gaps = [];
    const start = performance.now();
    let last = start;
    const step = (t) => {
      gaps.push(t - last);
      last = t;
      if (box) box.scrollTop += 40;
      else window.scrollBy(0, 40);
      if (t - start < 2000) requestAnimationFrame(step);
      else resolve({ fps: Math.round((gaps.length / (t - start)) * 1000), longest: Math.round(Math.max(...gaps)) });
    };
    requestAnimationFrame(step);
  }));
  const playing = await scroll();
  out.scroll_fps_simulating = playing.fps;
  out.scroll_longest_frame_ms_simulating = playing.longest;
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.waitForTimeout(300);
  const paused = await scroll();
  out.scroll_fps_paused = paused.fps;
  out.scroll_longest_frame_ms_paused = paused.longest;
} catch (e) {
  out.error = String(e.message || e).split('\n')[0];
}
console.log(JSON.stringify(out));
await browser.close();
server.close();
process.exit(out.error ? 1 : 0);
