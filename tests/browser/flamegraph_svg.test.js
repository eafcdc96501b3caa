#!/usr/bin/env node
/* flamegraph_svg.test.js — sonde's SVG flame graph in a real browser.
 *
 * Drives Debian's headless Chromium (/usr/bin/chromium) with playwright-core
 * over one SVG written by `sonde attach/record -o x.svg`
 * (src/report/flamegraph.c); tests/e2e/test_attach_browser.py writes the
 * SVG and a case file and runs
 *
 *     node tests/browser/flamegraph_svg.test.js CASE.json
 *
 * CASE.json: {"svg": path, "screenshot": PNG to save, "frame": prefix of
 * the label of a frame to hover and zoom into, "search": a term to search
 * for}. The page is loaded offline (every request but the file itself is
 * aborted and counted); alert/confirm are recorded (a name that ran as
 * markup would call them); prompt answers the search term. Checks: the
 * script ran, hover shows a frame's samples and percentage, a click zooms
 * the frame to the full width and "Reset Zoom" undoes it, the search
 * highlights frames and reports the share matched, and nothing ran or
 * loaded that the file did not hold. Prints "PASS name" / "FAIL name:
 * detail"; exits 1 when a check failed, 3 when the browser could not start.
 */
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.SONDE_CHROMIUM || '/usr/bin/chromium';

let failures = 0;
function check(ok, name, detail) {
  if (ok) console.log('PASS ' + name);
  else {
    failures++;
    console.log('FAIL ' + name + ': ' + String(detail === undefined ? '' : detail).replace(/\n/g, ' | '));
  }
  return ok;
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  let chromium;
  try {
    chromium = require('playwright-core').chromium;
  } catch (e) {
    console.log('FAIL playwright-core: ' + e.message);
    process.exit(3);
  }
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sonde-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(userDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      viewport: { width: 1250, height: 900 },
      offline: true,
    });
  } catch (e) {
    console.log('FAIL browser: ' + e.message);
    process.exit(3);
  }
  const pageUrl = 'file://' + path.resolve(spec.svg);
  const requests = [];
  const errors = [];
  await context.route('**/*', function (route) {
    if (route.request().url() === pageUrl) return route.continue();
    requests.push(route.request().url());
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  await page.addInitScript(function (term) {
    window.__sondeDialogs = [];
    window.alert = function (m) { window.__sondeDialogs.push('alert:' + m); };
    window.confirm = function (m) { window.__sondeDialogs.push('confirm:' + m); return false; };
    window.prompt = function () { return term; };
  }, spec.search);
  page.on('pageerror', function (e) { errors.push(e.message); });
  page.on('console', function (m) { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(pageUrl);
  await page.waitForTimeout(300);

  const state = await page.evaluate(function () {
    return { ready: typeof fg === 'object' && Array.isArray(fg.frames), frames: fg ? fg.frames.length : 0 };
  });
  check(state.ready && state.frames > 1, 'script ran and found the frames', JSON.stringify(state));

  const target = page.locator('g.f[data-l^="' + spec.frame.replace(/"/g, '\\"') + '"]').first();
  check((await target.count()) === 1, 'frame "' + spec.frame + '" drawn');
  const before = Number(await target.locator('rect').getAttribute('width'));

  await target.hover();
  const details = await page.locator('#details').textContent();
  check(details.indexOf(spec.frame) === 0 && /\(\d+ samples?, [0-9.]+%\)$/.test(details),
        'hover shows samples and percent', details);

  await target.click();
  const zoomed = Number(await target.locator('rect').getAttribute('width'));
  check(zoomed > 1100, 'click zooms the frame to the full width', before + ' -> ' + zoomed);
  check((await page.locator('#unzoom').getAttribute('class')) !== 'hide', 'Reset Zoom shown');
  await page.locator('#unzoom').click();
  const restored = Number(await target.locator('rect').getAttribute('width'));
  check(Math.abs(restored - before) < 0.01, 'Reset Zoom restores the width', restored + ' vs ' + before);

  await page.locator('#search').click();
  const matched = await page.locator('#matched').textContent();
  check(/^Matched: [0-9.]+%$/.test(matched) && parseFloat(matched.slice(9)) > 0,
        'search reports the share matched', matched);
  const fills = await page.locator('g.f rect[fill="rgb(230,0,230)"]').count();
  check(fills > 0, 'search highlights frames', fills);

  if (spec.screenshot) await page.screenshot({ path: spec.screenshot });
  const dialogs = await page.evaluate(function () { return window.__sondeDialogs; });
  check(dialogs.length === 0, 'no name ran as markup (no alert or confirm)', dialogs.join('; '));
  check(requests.length === 0, 'no network request', requests.join(', '));
  check(errors.length === 0, 'no page error', errors.join('; '));
  await context.close();
  fs.rmSync(userDir, { recursive: true, force: true });
  process.exit(failures ? 1 : 0);
}

main().catch(function (e) {
  console.log('FAIL driver: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
