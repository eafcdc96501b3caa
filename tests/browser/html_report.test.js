#!/usr/bin/env node
/* html_report.test.js — sonde's HTML report in a real browser.
 *
 * Drives Debian's headless Chromium (/usr/bin/chromium) with playwright-core
 * over one report; tests/e2e/test_html.py writes the report and a case file
 * and runs this script:
 *
 *     node tests/browser/html_report.test.js CASE.json
 *
 * CASE.json: {"case": "report" | "memory" | "flame" | "injection" | "processes" |
 * "parity", "html": page, "json": the profile it embeds, "screenshot":
 * where to save a PNG, "text" / "text_all": the terminal reports of the
 * same profile (parity), "expect": figures the case checks}.
 *
 * Every case loads the page offline (the context is set offline and every
 * request but the page itself is aborted and counted), fails on any page
 * error or Content-Security-Policy report, and saves a screenshot. Prints
 * "PASS name" / "FAIL name: detail" per check; exits 1 when a check
 * failed, 3 when the browser could not be started.
 */
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.SONDE_CHROMIUM || '/usr/bin/chromium';
const LAUNCH_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let failures = 0;
function check(ok, name, detail) {
  if (ok) console.log('PASS ' + name);
  else {
    failures++;
    console.log('FAIL ' + name + ': ' + String(detail === undefined ? '' : detail).replace(/\n/g, ' | '));
  }
  return ok;
}

/* ---- figures as the terminal report prints them (src/report/text.c) ----- */

function num(v) {
  return typeof v === 'number' && isFinite(v) ? v : 0;
}
function fmtPercent(v) {
  if (!(v > 0)) return '';
  if (v < 0.05) return '<0.1%';
  return v.toFixed(1) + '%';
}
/* A JSON figure (4 decimals) sitting exactly on a rounding boundary of the
 * one-decimal display: the terminal, which rounds the unrounded value, may
 * show either neighbour there. */
function onTie(v) {
  const tenths = v * 10;
  return Math.abs(tenths - Math.floor(tenths) - 0.5) < 1e-6 || Math.abs(v - 0.05) < 1e-9;
}
function sameFigure(shown, want, v) {
  if (shown === want) return true;
  if (!onTie(v)) return false;
  const a = parseFloat(shown.replace('<', '')), b = parseFloat(want.replace('<', ''));
  return isFinite(a) && isFinite(b) && Math.abs(a - b) <= 0.1 + 1e-9;
}
function total(l) {
  return num(l.n_cpu_percent_python) + num(l.n_cpu_percent_c) + num(l.n_sys_percent);
}

/* ---- the browser ------------------------------------------------------- */

async function openPage(chromium, htmlPath, opts) {
  opts = opts || {};
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sonde-chromium-'));
  const context = await chromium.launchPersistentContext(userDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: LAUNCH_ARGS,
    viewport: { width: opts.width || 1600, height: 1000 },
    offline: true,
  });
  const pageUrl = 'file://' + path.resolve(htmlPath);
  const requests = [];
  const errors = [];
  await context.setOffline(true);
  await context.route('**/*', function (route) {
    const url = route.request().url();
    if (url === pageUrl) return route.continue();
    if (!requests.includes(url)) requests.push(url);
    return route.abort();
  });
  context.on('request', function (req) {
    if (req.url() !== pageUrl && !requests.includes(req.url())) requests.push(req.url());
  });
  const page = context.pages()[0] || (await context.newPage());
  await page.addInitScript(function () {
    window.__sondeAlerts = [];
    const record = function (kind) {
      return function (msg) {
        window.__sondeAlerts.push(kind + ':' + String(msg));
      };
    };
    window.alert = record('alert');
    window.confirm = record('confirm');
    window.prompt = record('prompt');
  });
  page.on('pageerror', function (e) { errors.push('page error: ' + e.message); });
  page.on('console', function (m) {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) errors.push('console: ' + m.text());
  });
  await page.goto(pageUrl);
  await page.waitForSelector('html[data-sonde-ready]', { timeout: 10000 }).catch(function (e) {
    errors.push('viewer did not finish: ' + e.message);
  });
  return { context: context, page: page, requests: requests, errors: errors, userDir: userDir };
}

async function closePage(p, name, shot) {
  if (shot) {
    fs.mkdirSync(path.dirname(shot), { recursive: true });
    await p.page.screenshot({ path: shot, fullPage: true });
    check(fs.existsSync(shot) && fs.statSync(shot).size > 1000, name + ': screenshot saved', shot);
  }
  check(p.requests.length === 0, name + ': no network request', p.requests.join(', '));
  check(p.errors.length === 0, name + ': no page error or CSP report', p.errors.join('; '));
  await p.context.close();
  fs.rmSync(p.userDir, { recursive: true, force: true });
}

/* ---- reading the page ---------------------------------------------------- */

/* Rows of the line (or function) table of the file whose path is given. */
async function tableRows(page, filePath, which) {
  return page.evaluate(function (args) {
    const section = Array.from(document.querySelectorAll('section.file')).find(function (s) {
      return s.getAttribute('data-path') === args.filePath;
    });
    if (!section) return null;
    const table = section.querySelector('table.' + args.which);
    return Array.from(table.querySelectorAll('tbody tr')).map(function (tr) {
      const cells = {};
      for (const td of tr.querySelectorAll('td[data-col]')) cells[td.getAttribute('data-col')] = td.textContent;
      return { cls: tr.className, lineno: tr.getAttribute('data-lineno'), cells: cells, text: tr.textContent };
    });
  }, { filePath: filePath, which: which });
}

async function headerTitles(page, filePath, which) {
  return page.evaluate(function (args) {
    const section = Array.from(document.querySelectorAll('section.file')).find(function (s) {
      return s.getAttribute('data-path') === args.filePath;
    });
    return Array.from(section.querySelectorAll('table.' + args.which + ' thead th')).map(function (th) {
      return th.getAttribute('data-col');
    });
  }, { filePath: filePath, which: which });
}

async function clickHeader(page, filePath, which, col) {
  await page.evaluate(function (args) {
    const section = Array.from(document.querySelectorAll('section.file')).find(function (s) {
      return s.getAttribute('data-path') === args.filePath;
    });
    section.querySelector('table.' + args.which + ' thead th[data-col="' + args.col + '"] button').click();
  }, { filePath: filePath, which: which, col: col });
}

async function setShowAll(page, on) {
  const box = page.locator('#show-all');
  if ((await box.isChecked()) !== on) await box.click();
}

/* The rows a table should show for a file, by the terminal's rule. */
function expectedLines(file, showAll) {
  const lines = (file.lines || []).slice().sort(function (a, b) { return a.lineno - b.lineno; });
  const nSource = Array.isArray(file.source) ? file.source.length : 0;
  const byNo = new Map(lines.map(function (l) { return [l.lineno, l]; }));
  const shown = new Set();
  if (showAll) {
    for (let i = 1; i <= nSource; i++) shown.add(i);
    for (const l of lines) shown.add(l.lineno);
  } else {
    lines.forEach(function (l, i) {
      if (total(l) < 1) return;
      if (l.lineno > 1 && (l.lineno - 1 <= nSource || (i > 0 && lines[i - 1].lineno === l.lineno - 1))) shown.add(l.lineno - 1);
      shown.add(l.lineno);
      if (l.lineno + 1 <= nSource || (i + 1 < lines.length && lines[i + 1].lineno === l.lineno + 1)) shown.add(l.lineno + 1);
    });
  }
  return Array.from(shown).sort(function (a, b) { return a - b; }).map(function (no) {
    const l = byNo.get(no);
    return { lineno: no, stats: l || null, figures: !!l && (showAll || total(l) >= 1), text: l ? l.line : nSource >= no ? file.source[no - 1] : '' };
  });
}

/* Checks a file's line and function tables against its JSON entry. */
async function checkFileTables(page, name, filePath, file, showAll) {
  const rows = (await tableRows(page, filePath, 'lines')) || [];
  const real = rows.filter(function (r) { return r.lineno !== null; });
  const want = expectedLines(file, showAll);
  check(real.length === want.length && real.every(function (r, i) { return Number(r.lineno) === want[i].lineno; }),
    name + ': the rows shown are the lines the terminal rule picks',
    'shown ' + real.map(function (r) { return r.lineno; }).join(',') + ' want ' + want.map(function (w) { return w.lineno; }).join(','));
  const bad = [];
  want.forEach(function (w, i) {
    const r = real[i];
    if (!r) return;
    if (r.cells.source.replace(/possible leak.*$/, '') !== w.text) bad.push(w.lineno + ': source ' + JSON.stringify(r.cells.source));
    if (w.figures !== /row-fig/.test(r.cls)) bad.push(w.lineno + ': figures shown ' + r.cls);
    const keys = [['python', 'n_cpu_percent_python'], ['native', 'n_cpu_percent_c'], ['system', 'n_sys_percent']];
    for (const [col, field] of keys) {
      const expected = w.figures ? fmtPercent(num(w.stats[field])) : '';
      if (r.cells[col] !== expected) bad.push(w.lineno + ' ' + col + ': ' + JSON.stringify(r.cells[col]) + ' want ' + JSON.stringify(expected));
    }
  });
  check(bad.length === 0, name + ': each row shows the JSON figures and source', bad.slice(0, 6).join('; '));

  const funcs = (await tableRows(page, filePath, 'funcs')) || [];
  const wantFuncs = (file.functions || []).filter(function (f) { return showAll || total(f) >= 1; })
    .sort(function (a, b) { return a.lineno - b.lineno || (a.line < b.line ? -1 : 1); });
  const shownFuncs = funcs.filter(function (r) { return r.lineno !== null; });
  const fbad = [];
  if (shownFuncs.length !== wantFuncs.length) fbad.push(shownFuncs.length + ' functions shown, want ' + wantFuncs.length);
  wantFuncs.forEach(function (f, i) {
    const r = shownFuncs[i];
    if (!r) return;
    if (r.cells.name !== f.line || Number(r.cells.lineno) !== f.lineno) fbad.push('row ' + i + ' is ' + r.cells.name + ':' + r.cells.lineno + ' want ' + f.line + ':' + f.lineno);
    if (r.cells.python !== fmtPercent(num(f.n_cpu_percent_python)) || r.cells.native !== fmtPercent(num(f.n_cpu_percent_c)) || r.cells.system !== fmtPercent(num(f.n_sys_percent)))
      fbad.push(f.line + ' figures ' + [r.cells.python, r.cells.native, r.cells.system].join('/'));
  });
  check(fbad.length === 0, name + ': the function table equals the JSON', fbad.slice(0, 6).join('; '));
}

/* ---- cases ------------------------------------------------------------------ */

async function caseReport(chromium, c, data) {
  const p = await openPage(chromium, c.html);
  const page = p.page;
  const paths = Object.keys(data.files);
  const sections = await page.$$eval('section.file', function (s) { return s.map(function (x) { return x.getAttribute('data-path'); }); });
  const order = paths.slice().sort(function (a, b) { return num(data.files[b].percent_cpu_time) - num(data.files[a].percent_cpu_time) || (a < b ? -1 : 1); });
  check(JSON.stringify(sections) === JSON.stringify(order), 'report: one section per file, hottest first', sections.join(', '));
  const summary = await page.textContent('.cpu-summary .split');
  const wantSummary = num(data.profiled_time_sec).toFixed(3) + ' s profiled: Python ' + num(data.cpu_percent_python).toFixed(1) + '%, native ' + num(data.cpu_percent_c).toFixed(1) + '%, system ' + num(data.sys_percent).toFixed(1) + '%';
  check(summary === wantSummary, 'report: summary split equals the JSON', summary + ' / ' + wantSummary);
  const program = await page.textContent('h1 .program');
  check(program === data.program, 'report: program shown', program);

  const main = order[0];
  const file = data.files[main];
  await checkFileTables(page, 'report default', main, file, false);

  /* Memory and GPU columns are hidden when the profile has none. */
  const titles = await headerTitles(page, main, 'lines');
  check(JSON.stringify(titles) === JSON.stringify(['lineno', 'time', 'python', 'native', 'system', 'source']),
    'report: CPU-only profile shows no memory, copy or GPU column', titles.join(','));
  check((await page.$$('.mem-summary, .gpu-summary')).length === 0, 'report: no memory or GPU summary', '');

  /* Sorting by Python time: descending, then ascending on a second click. */
  await clickHeader(page, main, 'lines', 'python');
  let rows = (await tableRows(page, main, 'lines')).filter(function (r) { return /row-fig/.test(r.cls); });
  const byNo = new Map(file.lines.map(function (l) { return [String(l.lineno), l]; }));
  const pyVals = rows.map(function (r) { return num(byNo.get(r.lineno).n_cpu_percent_python); });
  check(pyVals.length > 1 && pyVals.every(function (v, i) { return i === 0 || pyVals[i - 1] >= v; }), 'report: sort by Python, descending', pyVals.join(','));
  const allRows = await tableRows(page, main, 'lines');
  check(allRows.every(function (r) { return r.lineno !== null; }), 'report: a sorted table has no gap markers', allRows.length);
  await clickHeader(page, main, 'lines', 'python');
  rows = (await tableRows(page, main, 'lines')).filter(function (r) { return /row-fig/.test(r.cls); });
  const up = rows.map(function (r) { return num(byNo.get(r.lineno).n_cpu_percent_python); });
  check(up.every(function (v, i) { return i === 0 || up[i - 1] <= v; }), 'report: second click sorts ascending', up.join(','));
  await clickHeader(page, main, 'lines', 'source');
  rows = (await tableRows(page, main, 'lines'));
  const texts = rows.map(function (r) { return r.cells.source; });
  check(texts.every(function (t, i) { return i === 0 || texts[i - 1] <= t; }), 'report: sort by source text', '');
  await clickHeader(page, main, 'lines', 'lineno');
  await checkFileTables(page, 'report back in line order', main, file, false);
  await clickHeader(page, main, 'funcs', 'native');
  const frows = await tableRows(page, main, 'funcs');
  const fByName = new Map(file.functions.map(function (f) { return [f.line, f]; }));
  const nat = frows.map(function (r) { return num(fByName.get(r.cells.name).n_cpu_percent_c); });
  check(nat.every(function (v, i) { return i === 0 || nat[i - 1] >= v; }), 'report: function table sorts by native', nat.join(','));
  await clickHeader(page, main, 'funcs', 'lineno');

  /* Show all: every source line, every function; and back. */
  await setShowAll(page, true);
  await checkFileTables(page, 'report show-all', main, file, true);
  const nShown = (await tableRows(page, main, 'lines')).filter(function (r) { return r.lineno !== null; }).length;
  check(nShown === Math.max(file.source.length, file.lines[file.lines.length - 1].lineno), 'report: show all lists every source line', nShown);
  await setShowAll(page, false);
  await checkFileTables(page, 'report show-all off', main, file, false);

  /* Collapsing a file and expanding it again. */
  const head = page.locator('section.file').first().locator('.file-head');
  const body = page.locator('section.file').first().locator('.file-body');
  check(await body.isVisible(), 'report: the hottest file starts expanded', '');
  await head.click();
  check(!(await body.isVisible()) && (await head.getAttribute('aria-expanded')) === 'false', 'report: clicking the file header collapses it', '');
  await head.click();
  check(await body.isVisible(), 'report: clicking again expands it', '');
  await page.click('#collapse-all');
  check((await page.locator('.file-body:visible').count()) === 0, 'report: collapse all', '');
  await page.click('#expand-all');
  check((await page.locator('.file-body:visible').count()) === paths.length, 'report: expand all', '');

  /* Hovering a line's bar shows its exact figures. */
  const hot = file.lines.slice().sort(function (a, b) { return total(b) - total(a); })[0];
  await page.hover('section.file >> nth=0 >> tr[data-lineno="' + hot.lineno + '"] .cpu-bar');
  const tip = await page.textContent('#sonde-tip');
  check(await page.isVisible('#sonde-tip') && tip.indexOf('Python' + num(hot.n_cpu_percent_python).toFixed(1) + '%') >= 0 && tip.indexOf('samples' + hot.n_samples) >= 0,
    'report: hovering a bar shows its figures', tip);
  await page.mouse.move(1, 1);
  await closePage(p, 'report', c.screenshot);
}

async function caseMemory(chromium, c, data) {
  const e = c.expect;
  const p = await openPage(chromium, c.html);
  const page = p.page;
  const file = e.file;
  const titles = await headerTitles(page, file, 'lines');
  check(JSON.stringify(titles) === JSON.stringify(['lineno', 'time', 'python', 'native', 'system', 'avg', 'peak', 'timeline', 'copy', 'gpu', 'gpumem', 'fig-n_gc_percent', 'source']),
    'memory: memory, copy, GPU and the figures list\'s GC columns shown', titles.join(','));
  const ftitles = await headerTitles(page, file, 'funcs');
  check(ftitles.indexOf('avg') >= 0 && ftitles.indexOf('gpu') >= 0 && ftitles.indexOf('fig-n_gc_percent') >= 0,
    'memory: function table has memory, GPU and GC columns', ftitles.join(','));
  const rows = await tableRows(page, file, 'lines');
  const byNo = new Map(rows.map(function (r) { return [r.lineno, r]; }));
  const bad = [];
  for (const [lineno, cells] of Object.entries(e.cells)) {
    const r = byNo.get(lineno);
    if (!r) { bad.push('line ' + lineno + ' not shown'); continue; }
    for (const [col, want] of Object.entries(cells)) if (r.cells[col] !== want) bad.push(lineno + ' ' + col + ': ' + JSON.stringify(r.cells[col]) + ' want ' + JSON.stringify(want));
  }
  check(bad.length === 0, 'memory: avg, peak, copy, GPU and GC cells equal the JSON', bad.join('; '));
  check(byNo.has(String(e.memory_only_line)), 'memory: a line hot by allocation alone is shown', e.memory_only_line);

  const points = await page.$eval('section.file tr[data-lineno="' + e.spark_line + '"] svg.spark polyline', function (pl) { return pl.getAttribute('points').trim().split(/\s+/).length; });
  check(points === e.spark_points, 'memory: the sparkline draws every memory sample', points);
  await page.hover('section.file tr[data-lineno="' + e.spark_line + '"] .spark-cell');
  let tip = await page.textContent('#sonde-tip');
  check(tip.indexOf('samples' + e.spark_points) >= 0 && tip.indexOf('highest' + e.spark_highest) >= 0, 'memory: hovering the sparkline shows its figures', tip);
  await page.hover('section.file tr[data-lineno="' + e.spark_line + '"] td[data-col="peak"] .mem-cell');
  tip = await page.textContent('#sonde-tip');
  check(tip.indexOf('Peak memory') >= 0 && tip.indexOf('total' + e.peak_text) >= 0 && tip.indexOf('Python share' + e.python_share) >= 0,
    'memory: hovering a memory bar shows the Python / native split', tip);
  const split = await page.$$eval('section.file tr[data-lineno="' + e.spark_line + '"] td[data-col="peak"] .seg', function (s) { return s.map(function (x) { return parseFloat(x.style.width); }); });
  check(split.length === 2 && Math.abs(split[0] / (split[0] + split[1]) - e.python_fraction) < 0.01, 'memory: the bar is split by Python fraction', split.join(','));

  const leak = await page.$eval('section.file tr[data-lineno="' + e.leak_line + '"]', function (tr) {
    return { cls: tr.className, badge: (tr.querySelector('.leak-badge') || {}).textContent };
  });
  check(/\bleak\b/.test(leak.cls) && leak.badge === e.leak_badge, 'memory: the leak is highlighted with likelihood and rate', JSON.stringify(leak));
  const leakCount = await page.textContent('section.file .leak-count');
  check(leakCount === '1 possible leak', 'memory: the file header counts leaks', leakCount);

  const peak = await page.textContent('.mem-summary p.peak');
  check(peak === e.peak_summary, 'memory: summary shows the peak footprint and where', peak);
  check((await page.$$('.mem-summary svg.footprint path.area')).length === 1, 'memory: footprint chart drawn', '');
  await page.hover('.mem-summary svg.footprint', { position: { x: 600, y: 60 } });
  tip = await page.textContent('#sonde-tip');
  check(tip.indexOf('Footprint') >= 0 && tip.indexOf('footprint' + e.last_footprint) >= 0, 'memory: hovering the footprint chart shows the nearest sample', tip);
  const gpu = await page.textContent('.gpu-summary p');
  const growth = await page.textContent('.mem-summary p.growth');
  check(growth === e.growth, 'memory: footprint growth shown', growth);
  check(gpu === e.gpu_summary, 'memory: GPU summary', gpu);
  await page.mouse.move(1, 1);
  await closePage(p, 'memory', c.screenshot);
}

async function frames(page) {
  return page.$$eval('.flame-svg g.frame', function (gs) {
    return gs.map(function (g) {
      const r = g.querySelector('rect');
      const t = g.querySelector('text');
      return { cls: g.getAttribute('class'), depth: Number(g.getAttribute('data-depth')), x: parseFloat(r.getAttribute('x')), w: parseFloat(r.getAttribute('width')), text: t ? t.textContent : '' };
    });
  });
}

async function caseFlame(chromium, c, data) {
  const e = c.expect;
  const p = await openPage(chromium, c.html);
  const page = p.page;
  check((await page.$$('#tab-flame')).length === 1, 'flame: the flame graph tab exists', '');
  await page.click('#tab-flame');
  check(await page.isVisible('.flame-svg'), 'flame: the flame graph is drawn', '');
  let fs0 = await frames(page);
  const root = fs0.find(function (f) { return f.depth === 0; });
  check(root && root.text === 'all (' + e.total_count + ' samples)', 'flame: the root counts every sample', root && root.text);
  const target = fs0.find(function (f) { return f.text === e.zoom_name; });
  check(target && Math.abs((target.w + 0.5) / (root.w + 0.5) - e.zoom_share) < 0.01, 'flame: a frame is as wide as its share of the time', target && target.w / root.w);

  /* Click to zoom: the frame fills the width, its siblings go, its callers
   * stay (dimmed). */
  await page.click('.flame-svg g.frame:has(text:text-is("' + e.zoom_name + '"))');
  fs0 = await frames(page);
  const zoomed = fs0.find(function (f) { return /zoomed/.test(f.cls); });
  check(zoomed && zoomed.text.indexOf(e.zoom_name) === 0 && Math.abs(zoomed.x) < 0.01 && zoomed.w > root.w - 2, 'flame: click zooms the frame to the full width', JSON.stringify(zoomed));
  if (e.sibling_name !== null) check(!fs0.some(function (f) { return f.text === e.sibling_name; }), 'flame: its siblings are not drawn', '');
  check(fs0.some(function (f) { return /ancestor/.test(f.cls) && f.depth === 0; }), 'flame: its callers stay, dimmed', '');
  check((await page.getAttribute('.flame-box', 'data-zoom')) === e.zoom_name, 'flame: zoom recorded', '');
  await page.hover('.flame-svg g.zoomed');
  let tip = await page.textContent('#sonde-tip');
  check(tip.indexOf('samples' + e.zoom_count) >= 0 && tip.indexOf('of all' + e.zoom_percent) >= 0, 'flame: hover shows counts and percent', tip);
  await page.click('.flame-reset');
  fs0 = await frames(page);
  check((await page.getAttribute('.flame-box', 'data-zoom')) === 'all' && (e.sibling_name === null || fs0.some(function (f) { return f.text === e.sibling_name; })), 'flame: reset zoom shows everything again', '');

  /* Search highlights the matching frames and sums their share. */
  await page.fill('.flame-search', e.search);
  fs0 = await frames(page);
  const matched = fs0.filter(function (f) { return /\bmatch\b/.test(f.cls); }).map(function (f) { return f.text; });
  check(JSON.stringify(matched.sort()) === JSON.stringify(e.search_matches.slice().sort()), 'flame: search highlights the matching frames', matched.join(','));
  const status = await page.textContent('.flame-status');
  if (e.search_status !== null) check(status === e.search_status, 'flame: search reports the matched share', status);
  await page.fill('.flame-search', '');

  /* One thread. */
  if (e.thread_count !== null) {
    await page.selectOption('.flame-thread', e.thread_value);
    fs0 = await frames(page);
    const root2 = fs0.find(function (f) { return f.depth === 0; });
    check(root2 && root2.text === 'all (' + e.thread_count + ' samples)', 'flame: choosing a thread shows its samples only', root2 && root2.text);
    await page.selectOption('.flame-thread', 'all');
  }
  await page.fill('.flame-search', e.search); /* for the screenshot */
  await page.mouse.move(1, 1);
  await closePage(p, 'flame', c.screenshot);
}

async function caseInjection(chromium, c, data) {
  const e = c.expect;
  for (const variant of ['as written', 'without its CSP']) {
    let html = c.html;
    if (variant !== 'as written') {
      /* The same page without the Content-Security-Policy: the viewer
       * itself must insert nothing as markup. */
      const text = fs.readFileSync(c.html, 'utf8');
      const stripped = text.replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, '');
      check(stripped !== text, 'injection: CSP removed for the second load', '');
      html = c.html.replace(/\.html$/, '') + '-nocsp.html';
      fs.writeFileSync(html, stripped);
    }
    const p = await openPage(chromium, html);
    const page = p.page;
    const name = 'injection (' + variant + ')';
    await setShowAll(page, true);
    if ((await page.$$('#tab-flame')).length) {
      await page.click('#tab-flame');
      await page.fill('.flame-search', '<');
    }
    if ((await page.$$('#tab-lines')).length) await page.click('#tab-lines');
    /* Hover every tooltip target once so tooltips render profile text too. */
    const targets = await page.$$('.cpu-bar, .leak-badge');
    for (const t of targets.slice(0, 10)) await t.hover().catch(function () {});
    const dom = await page.evaluate(function () {
      const onAttrs = [];
      for (const el of document.querySelectorAll('*'))
        for (const a of el.attributes) if (/^on/i.test(a.name)) onAttrs.push(el.tagName + '[' + a.name + ']');
      return {
        alerts: window.__sondeAlerts,
        pwned: window.__sondePwned === true,
        scripts: document.querySelectorAll('script').length,
        scriptTypes: Array.from(document.querySelectorAll('script')).map(function (s) { return s.type || 'js'; }),
        embedded: document.querySelectorAll('img, iframe, object, embed, frame, link, base, form, a[href]').length,
        onAttrs: onAttrs,
        text: document.body.innerText,
        title: document.title,
      };
    });
    check(dom.alerts.length === 0 && !dom.pwned, name + ': no script from the profile ran', JSON.stringify(dom.alerts));
    check(dom.scripts === e.scripts, name + ': no script element was added', dom.scriptTypes.join(','));
    check(dom.embedded === 0, name + ': no img/iframe/link element was created', dom.embedded);
    check(dom.onAttrs.length === 0, name + ': no event-handler attribute exists', dom.onAttrs.join(','));
    const missing = e.visible_text.filter(function (t) { return dom.text.indexOf(t) < 0; });
    check(missing.length === 0, name + ': the payloads are shown as text', missing.join(' | '));
    await closePage(p, name, variant === 'as written' ? c.screenshot : null);
  }
}

/* Lines of a terminal report: per file, its line rows and function rows. */
function parseText(text) {
  const files = [];
  let file = null, table = null, cols = null;
  const lines = text.split('\n');
  const summary = { program: lines[0], run: lines[1], split: lines[2], unattributed: lines[3] && lines[3].indexOf('outside profiled files') >= 0 ? lines[3] : null };
  for (const line of lines) {
    const head = /^(.*): (\d+\.\d% of time \(\d+\.\d{3} s\)(; source not available)?)$/.exec(line);
    if (head) {
      file = { path: head[1], share: head[2], lines: [], funcs: [], gaps: 0 };
      files.push(file);
      continue;
    }
    if (!file) continue;
    if (/^\s*Line\s+Python\s+native\s+system/.test(line)) {
      table = /source\s*$/.test(line) ? file.lines : file.funcs;
      cols = {};
      for (const t of ['Python', 'native', 'system']) cols[t] = line.indexOf(t) + t.length;
      cols.text = line.search(/(source|function)\s*$/);
      continue;
    }
    if (!table || !line.trim() || / more files? below /.test(line)) continue;
    if (/^\s*\.\.\.$/.test(line)) { if (table === file.lines) file.gaps++; continue; }
    const m = /^\s*(-?\d+)/.exec(line);
    if (!m) continue;
    table.push({
      lineno: Number(m[1]),
      python: line.slice(cols.Python - 6, cols.Python).trim(),
      native: line.slice(cols.native - 6, cols.native).trim(),
      system: line.slice(cols.system - 6, cols.system).trim(),
      text: line.slice(cols.text),
    });
  }
  return { summary: summary, files: files, hidden: /(\d+) more files? below/.exec(text) };
}

async function compareWithText(page, name, data, text, showAll) {
  const report = parseText(text);
  const jsonPaths = Object.keys(data.files);
  let checked = 0;
  for (const tf of report.files) {
    const path_ = tf.path;
    const file = data.files[path_];
    if (!check(!!file, name + ': terminal file is in the JSON', path_)) continue;
    const share = await page.evaluate(function (p) {
      const s = Array.from(document.querySelectorAll('section.file')).find(function (x) { return x.getAttribute('data-path') === p; });
      return s.querySelector('.file-share').textContent;
    }, path_);
    const shareText = share.replace(/^: /, '');
    const sec = function (s) { return parseFloat(/\((\d+\.\d+) s\)/.exec(s)[1]); };
    check(shareText.split(' (')[0] === tf.share.split(' (')[0] && Math.abs(sec(shareText) - sec(tf.share)) <= 0.0015,
      name + ': file share equals the terminal\'s', shareText + ' / ' + tf.share);
    const rows = (await tableRows(page, path_, 'lines')).filter(function (r) { return r.lineno !== null; });
    const gaps = (await tableRows(page, path_, 'lines')).filter(function (r) { return /row-gap/.test(r.cls); }).length;
    check(rows.length === tf.lines.length && rows.every(function (r, i) { return Number(r.lineno) === tf.lines[i].lineno; }),
      name + ': same lines as the terminal', rows.map(function (r) { return r.lineno; }).join(',') + ' / ' + tf.lines.map(function (l) { return l.lineno; }).join(','));
    check(gaps === tf.gaps, name + ': same "..." markers as the terminal', gaps + ' / ' + tf.gaps);
    const byNo = new Map(file.lines.map(function (l) { return [l.lineno, l]; }));
    const bad = [];
    rows.forEach(function (r, i) {
      const t = tf.lines[i];
      if (!t) return;
      const j = byNo.get(t.lineno);
      for (const [col, field] of [['python', 'n_cpu_percent_python'], ['native', 'n_cpu_percent_c'], ['system', 'n_sys_percent']]) {
        if (!sameFigure(r.cells[col], t[col], j ? num(j[field]) : 0)) bad.push(t.lineno + ' ' + col + ': html ' + JSON.stringify(r.cells[col]) + ' terminal ' + JSON.stringify(t[col]));
        checked++;
      }
      if (r.cells.source.replace(/\t/g, ' ').trimEnd() !== t.text.trimEnd() && r.cells.source.indexOf('\t') < 0) bad.push(t.lineno + ' source differs');
    });
    check(bad.length === 0, name + ': line figures equal the terminal\'s', bad.slice(0, 6).join('; '));
    const funcs = (await tableRows(page, path_, 'funcs')).filter(function (r) { return r.lineno !== null; });
    const fbad = [];
    if (funcs.length !== tf.funcs.length) fbad.push(funcs.length + ' functions, terminal ' + tf.funcs.length);
    funcs.forEach(function (r, i) {
      const t = tf.funcs[i];
      if (!t) return;
      if (Number(r.lineno) !== t.lineno || r.cells.name !== t.text.trimEnd()) fbad.push('row ' + i + ': ' + r.cells.name + ' / ' + t.text);
      const f = file.functions.find(function (x) { return x.lineno === t.lineno; }) || {};
      for (const [col, field] of [['python', 'n_cpu_percent_python'], ['native', 'n_cpu_percent_c'], ['system', 'n_sys_percent']])
        if (!sameFigure(r.cells[col], t[col], num(f[field]))) fbad.push(t.text + ' ' + col + ': ' + r.cells[col] + ' / ' + t[col]);
    });
    check(fbad.length === 0, name + ': function figures equal the terminal\'s', fbad.slice(0, 6).join('; '));
  }
  return { report: report, checked: checked, jsonPaths: jsonPaths };
}

async function caseParity(chromium, c, data) {
  const p = await openPage(chromium, c.html);
  const page = p.page;
  const text = fs.readFileSync(c.text, 'utf8');
  const res = await compareWithText(page, 'parity', data, text, false);
  const s = res.report.summary;
  const program = 'sonde ' + (await page.textContent('h1 .brand')).replace(/^sonde /, '') + ': ' + (await page.textContent('h1 .program'));
  check(program === s.program, 'parity: header equals the terminal\'s', program + ' / ' + s.program);
  check((await page.textContent('.run-line')) === s.run, 'parity: run line equals the terminal\'s', await page.textContent('.run-line'));
  check((await page.textContent('.cpu-summary .split')) === s.split, 'parity: time split equals the terminal\'s', await page.textContent('.cpu-summary .split'));
  if (s.unattributed) check((await page.textContent('.cpu-summary .note')) === s.unattributed, 'parity: unattributed note equals the terminal\'s', '');
  /* Files the terminal leaves out are there, collapsed. */
  const hiddenPaths = res.jsonPaths.filter(function (x) { return !res.report.files.some(function (f) { return f.path === x; }); });
  check(res.report.hidden && Number(res.report.hidden[1]) === hiddenPaths.length, 'parity: the terminal hides the small files', hiddenPaths.join(','));
  for (const hp of hiddenPaths) {
    const collapsed = await page.evaluate(function (x) {
      const s = Array.from(document.querySelectorAll('section.file')).find(function (y) { return y.getAttribute('data-path') === x; });
      return s && s.classList.contains('collapsed');
    }, hp);
    check(collapsed, 'parity: a file below the threshold starts collapsed', hp);
  }
  check(res.checked >= 12, 'parity: figures compared', res.checked);
  await setShowAll(page, true);
  await compareWithText(page, 'parity all-lines', data, fs.readFileSync(c.text_all, 'utf8'), true);
  await closePage(p, 'parity', c.screenshot);
}

async function caseLarge(chromium, c, data) {
  const e = c.expect;
  const started = Date.now();
  const p = await openPage(chromium, c.html);
  const page = p.page;
  const loadMs = Date.now() - started;
  const filePath = Object.keys(data.files)[0];
  const t0 = Date.now();
  await setShowAll(page, true);
  const rows = (await tableRows(page, filePath, 'lines')).filter(function (r) { return /row-fig/.test(r.cls); });
  const showMs = Date.now() - t0;
  check(rows.length === e.rows, 'large: show all lists every line', rows.length);
  check(loadMs < e.max_ms && showMs < e.max_ms, 'large: loads and shows all lines quickly', 'load ' + loadMs + ' ms, show all ' + showMs + ' ms');
  console.log('NOTE large: load ' + loadMs + ' ms, show all ' + showMs + ' ms');
  await clickHeader(page, filePath, 'lines', 'peak');
  check((await tableRows(page, filePath, 'lines')).length === e.rows, 'large: sorting all lines', '');
  const shot = c.screenshot;
  fs.mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot });
  await closePage(p, 'large', null);
}

function fmtMB(mb) {
  mb = num(mb);
  if (mb >= 1024) return (mb / 1024).toFixed(2) + ' GB';
  if (mb >= 100) return mb.toFixed(0) + ' MB';
  if (mb >= 1) return mb.toFixed(1) + ' MB';
  if (mb > 0) return mb.toFixed(3) + ' MB';
  return '';
}

/* A real memory profile (sonde run --memory): the memory columns show the
 * JSON's figures, the summary its peak, leaks are marked. */
async function caseRealMemory(chromium, c, data) {
  const p = await openPage(chromium, c.html);
  const page = p.page;
  const bad = [];
  let compared = 0;
  for (const filePath of Object.keys(data.files)) {
    const file = data.files[filePath];
    const titles = await headerTitles(page, filePath, 'lines');
    if (titles.indexOf('avg') < 0 || titles.indexOf('peak') < 0 || titles.indexOf('timeline') < 0) bad.push(filePath + ': columns ' + titles.join(','));
    const hasLive = (file.lines || []).some(function (l) { return l.n_live_mb !== undefined; });
    if (hasLive !== (titles.indexOf('live') >= 0)) bad.push(filePath + ': live column ' + titles.join(',') + ' though the JSON ' + (hasLive ? 'has' : 'lacks') + ' n_live_mb');
    await setShowAll(page, true);
    const rows = await tableRows(page, filePath, 'lines');
    const byNo = new Map(rows.map(function (r) { return [r.lineno, r]; }));
    for (const l of file.lines || []) {
      const r = byNo.get(String(l.lineno));
      if (!r) { bad.push(l.lineno + ' not shown'); continue; }
      if (r.cells.avg !== fmtMB(l.n_avg_mb)) bad.push(l.lineno + ' avg ' + r.cells.avg + ' / ' + l.n_avg_mb);
      if (r.cells.peak !== fmtMB(l.n_peak_mb)) bad.push(l.lineno + ' peak ' + r.cells.peak + ' / ' + l.n_peak_mb);
      if (hasLive && r.cells.live !== fmtMB(l.n_live_mb)) bad.push(l.lineno + ' live ' + r.cells.live + ' / ' + l.n_live_mb);
      compared++;
    }
    for (const leakLine of Object.keys(file.leaks || {})) {
      const r = byNo.get(leakLine);
      if (!r || !/\bleak\b/.test(r.cls)) bad.push('leak on line ' + leakLine + ' not marked');
    }
  }
  check(bad.length === 0 && compared > 0, 'real memory: memory cells equal the JSON', bad.slice(0, 6).join('; ') || compared);
  const peak = await page.textContent('.mem-summary .peak-mb');
  check(peak === (fmtMB(data.max_footprint_mb) || '0 MB'), 'real memory: peak footprint shown', peak + ' / ' + data.max_footprint_mb);
  check((await page.$$('.mem-summary svg.footprint')).length === (Array.isArray(data.samples) && data.samples.length ? 1 : 0), 'real memory: footprint chart when the run has a timeline', '');
  await closePage(p, 'real memory', c.screenshot);
}

/* A merged profile (sonde merge): the header counts the processes and the
 * process table has one row per entry of "processes", pid and command
 * line as the JSON has them. */
async function caseProcesses(chromium, c, data) {
  const p = await openPage(chromium, c.html);
  const page = p.page;
  const runLine = await page.$eval('header .run-line', function (e) { return e.textContent; });
  check(runLine.indexOf(data.processes.length + ' processes profiled') >= 0, 'processes: the header counts them', runLine);
  const rows = await page.$$eval('.processes table tbody tr', function (trs) {
    return trs.map(function (tr) { return Array.from(tr.cells).map(function (td) { return td.textContent; }); });
  });
  check(rows.length === data.processes.length, 'processes: one row per process', rows.length + ' rows');
  data.processes.forEach(function (proc, i) {
    const row = rows[i] || [];
    check(row[0] === String(proc.pid) && row[1] === String(proc.ppid) && (row[5] || '').indexOf(proc.cmdline) === 0,
      'processes: row ' + i + ' shows pid, ppid and command line', JSON.stringify(row));
  });
  await closePage(p, 'processes', c.screenshot);
}

/* A profile with odd but valid JSON: the viewer renders what it can and
 * throws nothing. */
async function caseRobust(chromium, c, data) {
  const p = await openPage(chromium, c.html);
  const page = p.page;
  check((await page.$$('section.file')).length === c.expect.sections, 'robust: one section per file', (await page.$$('section.file')).length);
  await setShowAll(page, true);
  await page.click('#expand-all');
  for (const col of ['python', 'source', 'lineno']) await clickHeader(page, c.expect.file, 'lines', col);
  if ((await page.$$('#tab-flame')).length) {
    await page.click('#tab-flame');
    await page.fill('.flame-search', 'x');
    const g = await page.$('.flame-svg g.frame >> nth=1');
    if (g) await g.click();
  }
  await closePage(p, 'robust', c.screenshot);
}

async function main() {
  const casePath = process.argv[2];
  if (!casePath) {
    console.error('usage: node html_report.test.js CASE.json');
    process.exit(2);
  }
  const c = JSON.parse(fs.readFileSync(casePath, 'utf8'));
  const data = JSON.parse(fs.readFileSync(c.json, 'utf8'));
  let chromium;
  try {
    chromium = require('playwright-core').chromium;
  } catch (err) {
    console.log('BROWSER-UNAVAILABLE: playwright-core is not installed (npm ci --prefix tests/browser): ' + err.message);
    process.exit(3);
  }
  if (!fs.existsSync(CHROMIUM)) {
    console.log('BROWSER-UNAVAILABLE: ' + CHROMIUM + ' not found (apt-get install chromium)');
    process.exit(3);
  }
  const cases = { report: caseReport, memory: caseMemory, flame: caseFlame, injection: caseInjection, parity: caseParity, large: caseLarge, robust: caseRobust, realmemory: caseRealMemory, processes: caseProcesses };
  try {
    await cases[c.case](chromium, c, data);
  } catch (err) {
    if (/Failed to launch|executable doesn't exist|spawn/i.test(String(err && err.message))) {
      console.log('BROWSER-UNAVAILABLE: ' + err.message.split('\n')[0]);
      process.exit(3);
    }
    check(false, c.case + ': ran to the end', err && err.stack ? err.stack : err);
  }
  process.exit(failures ? 1 : 0);
}

main();
