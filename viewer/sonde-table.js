/* sonde-table.js — the per-file view: line and function tables.
 *
 * Owns: turning the profile's "files" into figures (V.prepare), which rows
 * a table shows (V.pickLines: the terminal report's rule — lines with at
 * least 1 % of the time, plus one line of context either side — or every
 * line), sorting by any column, the collapsible file sections, and the
 * leak highlighting. Memory, copy and GPU columns appear only when the
 * profile has those figures, and a column for each other source's figure
 * its "figures" list names (garbage collection). Source text, paths and
 * function names are inserted as text nodes only. Called by sonde.js.
 */
(function () {
  'use strict';
  const V = (window.SondeViewer = window.SondeViewer || {});

  V.THRESHOLD = 1.0; /* percent, as the terminal report's default */

  /* ---- figures -------------------------------------------------------- */

  function figures(entry, leak) {
    const python = V.num(entry.n_cpu_percent_python);
    const native = V.num(entry.n_cpu_percent_c);
    const system = V.num(entry.n_sys_percent);
    return {
      lineno: Math.trunc(V.num(entry.lineno)),
      text: V.str(entry.line),
      python: python,
      native: native,
      system: system,
      total: python + native + system,
      samples: V.num(entry.n_samples),
      malloc: V.num(entry.n_malloc_mb),
      mallocs: V.num(entry.n_mallocs),
      avg: V.num(entry.n_avg_mb),
      peak: V.num(entry.n_peak_mb),
      live: V.num(entry.n_live_mb),
      liveAtPeak: V.num(entry.n_live_at_peak_mb),
      pyFrac: V.num(entry.n_python_fraction),
      usage: V.num(entry.n_usage_fraction),
      copy: V.num(entry.n_copy_mb_s),
      memSamples: V.list(entry.memory_samples),
      gpu: V.num(entry.n_gpu_percent),
      gpuAvg: V.num(entry.n_gpu_avg_memory_mb),
      gpuPeak: V.num(entry.n_gpu_peak_memory_mb),
      raw: entry, /* the sources' columns (model.figCols) read their fields here */
      leak: leak || null,
    };
  }

  function readLeaks(raw) {
    const leaks = new Map();
    if (!V.isObject(raw)) return leaks;
    for (const key of Object.keys(raw)) {
      const lineno = parseInt(key, 10);
      const v = raw[key];
      if (!isFinite(lineno)) continue;
      if (Array.isArray(v)) leaks.set(lineno, { likelihood: V.num(v[0]), velocity: V.num(v[1]) });
      else if (V.isObject(v)) leaks.set(lineno, { likelihood: V.num(v.likelihood), velocity: V.num(v.velocity_mb_s) });
    }
    return leaks;
  }

  function anyField(files, names, list) {
    for (const f of files)
      for (const l of f[list || 'rawLines']) for (const n of names) if (V.has(l, n)) return true;
    return false;
  }

  /* The profile's files with their figures, hottest first (as the terminal
   * report orders them), and what the profile holds. */
  V.prepare = function (data) {
    const files = [];
    const rawFiles = V.isObject(data.files) ? data.files : {};
    for (const path of Object.keys(rawFiles)) {
      const f = V.isObject(rawFiles[path]) ? rawFiles[path] : {};
      const leaks = readLeaks(f.leaks);
      const rawLines = V.list(f.lines).filter(V.isObject);
      const lines = rawLines.map(function (l) {
        return figures(l, leaks.get(Math.trunc(V.num(l.lineno))));
      });
      lines.sort(function (a, b) { return a.lineno - b.lineno; });
      const rawFuncs = V.list(f.functions).filter(V.isObject);
      const functions = rawFuncs.map(function (fn) {
        const fig = figures(fn, null);
        fig.name = fig.text;
        return fig;
      });
      const source = Array.isArray(f.source) ? f.source.map(V.str) : null;
      const byLineno = new Map();
      for (const l of lines) byLineno.set(l.lineno, l);
      for (const [lineno, leak] of leaks) {
        if (!byLineno.has(lineno)) { /* a leak on a line without CPU samples */
          const fig = figures({ lineno: lineno, line: source && source[lineno - 1] }, leak);
          lines.push(fig);
          byLineno.set(lineno, fig);
        }
      }
      lines.sort(function (a, b) { return a.lineno - b.lineno; });
      files.push({ path: path, percent: V.num(f.percent_cpu_time), lines: lines, rawLines: rawLines, rawFuncs: rawFuncs, byLineno: byLineno, functions: functions, source: source, leaks: leaks });
    }
    files.sort(function (a, b) {
      return b.percent - a.percent || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    });

    const model = { files: files, threshold: V.THRESHOLD, profiledSec: V.num(data.profiled_time_sec) };
    model.hasMemory = data.memory === true || (data.memory === undefined && (V.has(data, 'max_footprint_mb') || anyField(files, ['n_malloc_mb', 'n_avg_mb', 'n_peak_mb'])));
    model.hasGpu = data.gpu === true || (data.gpu === undefined && anyField(files, ['n_gpu_percent']));
    model.hasCopy = model.hasMemory || anyField(files, ['n_copy_mb_s']);
    /* Functions carry memory and GPU figures only where the writer gives
     * them (sonde: GPU yes, memory no); their table shows what they have. */
    model.funcMemory = model.hasMemory && anyField(files, ['n_malloc_mb', 'n_avg_mb', 'n_peak_mb'], 'rawFuncs');
    /* Live bytes (what the line made and has not freed, at the end) come
     * with sonde's byte-sampled heap; profiles without them keep the old
     * columns only. */
    model.hasLive = model.hasMemory && anyField(files, ['n_live_mb']);
    model.funcLive = model.funcMemory && anyField(files, ['n_live_mb'], 'rawFuncs');
    model.funcCopy = model.hasCopy && anyField(files, ['n_copy_mb_s'], 'rawFuncs');
    model.funcGpu = model.hasGpu && anyField(files, ['n_gpu_percent'], 'rawFuncs');
    let maxPeak = V.num(data.max_footprint_mb), totalMalloc = 0, maxCopy = 0, maxGpuMem = 0;
    for (const f of files) {
      for (const l of f.lines.concat(f.functions)) {
        maxPeak = Math.max(maxPeak, l.peak, l.avg);
        maxCopy = Math.max(maxCopy, l.copy);
        maxGpuMem = Math.max(maxGpuMem, l.gpuPeak, l.gpuAvg);
        for (const p of V.points(l.memSamples)) maxPeak = Math.max(maxPeak, p[1]);
      }
      for (const l of f.lines) totalMalloc += l.malloc;
    }
    model.maxPeakMB = maxPeak;
    model.totalMallocMB = totalMalloc;
    model.maxCopy = maxCopy;
    model.maxGpuMem = maxGpuMem;
    model.figCols = figureColumns(data, files);
    return model;
  };

  /* The columns of the sources the JSON's "figures" list names (sonde's
   * writer: src/report/json.c), but the GPU's, drawn above from Scalene's
   * fields: each with a title (the terminal's), for lines and, where they
   * have it, functions. */
  function figureColumns(data, files) {
    const cols = [];
    for (const f of V.list(data.figures)) {
      if (!V.isObject(f) || f.source === 'gpu' || typeof f.key !== 'string' || typeof f.title !== 'string') continue;
      if (['level_percent', 'mb', 'count'].indexOf(f.unit) < 0) continue;
      let max = 0;
      for (const file of files)
        for (const l of file.lines.concat(file.functions)) max = Math.max(max, V.num(l.raw[f.key]));
      cols.push({ key: f.key, title: f.title, source: V.str(f.source), unit: f.unit, max: f.unit === 'level_percent' ? 100 : max,
        funcs: anyField(files, [f.key], 'rawFuncs') });
    }
    return cols;
  }

  function figureText(col, v) {
    if (col.unit === 'level_percent') return V.fmtPercent(v);
    if (col.unit === 'mb') return V.fmtMB(v);
    return v > 0 ? V.fmtCount(v) : '';
  }

  /* Whether a line or function is significant, as the terminal report
   * decides: its share of the time, or (memory profiles) its share of all
   * allocation, or a likely leak. */
  V.isHot = function (fig, model) {
    const t = model.threshold;
    if (fig.total >= t) return true;
    if (!model.hasMemory) return false;
    if (fig.leak) return true;
    return model.totalMallocMB > 0 && (100 * fig.malloc) / model.totalMallocMB >= t;
  };

  /* The rows a file's line table shows, in line order: {lineno, stats
   * (figures or null), figuresShown}; the same choice as text.c. */
  V.pickLines = function (file, model, showAll) {
    const nSource = file.source ? file.source.length : 0;
    const lines = file.lines;
    const shown = new Set();
    if (showAll) {
      for (let l = 1; l <= nSource; l++) shown.add(l);
      for (const line of lines) shown.add(line.lineno);
    } else {
      for (let i = 0; i < lines.length; i++) {
        if (!V.isHot(lines[i], model)) continue;
        const l = lines[i].lineno;
        if (l > 1 && (l - 1 <= nSource || (i > 0 && lines[i - 1].lineno === l - 1))) shown.add(l - 1);
        shown.add(l);
        if (l + 1 <= nSource || (i + 1 < lines.length && lines[i + 1].lineno === l + 1)) shown.add(l + 1);
      }
    }
    return Array.from(shown)
      .sort(function (a, b) { return a - b; })
      .map(function (l) {
        const stats = file.byLineno.get(l) || null;
        return { lineno: l, stats: stats, figuresShown: !!stats && (showAll || V.isHot(stats, model)) };
      });
  };

  V.lastLine = function (file) {
    const nSource = file.source ? file.source.length : 0;
    const last = file.lines.length ? file.lines[file.lines.length - 1].lineno : 0;
    return Math.max(nSource, last);
  };

  function lineText(file, row) {
    if (row.stats && row.stats.text) return row.stats.text;
    if (file.source && row.lineno >= 1 && row.lineno <= file.source.length) return file.source[row.lineno - 1];
    return '';
  }

  /* ---- columns -------------------------------------------------------- */

  function percentCell(key) {
    return function (fig) { return V.el('span', { class: 'fig ' + key, text: V.fmtPercent(fig[key]) }); };
  }

  function memTipRows(fig) {
    const rows = [['allocated', V.fmtMB(fig.malloc) || '0 MB'], ['allocation samples', V.fmtCount(fig.mallocs)]];
    if (fig.live > 0 || fig.liveAtPeak > 0) {
      rows.push(['live at the end', V.fmtMB(fig.live) || '0 MB']);
      rows.push(['live at the heap peak', V.fmtMB(fig.liveAtPeak) || '0 MB']);
    }
    return rows;
  }

  /* The columns of a table; kind is 'line' or 'func'. Each: key, title,
   * value (for sorting), cell (a node for a row with figures), shown
   * (whether a row has a figure to draw; default: value > 0, so that zero
   * figures stay blank as in the terminal report). */
  function columns(model, kind) {
    const cols = [];
    if (kind === 'func') {
      cols.push({ key: 'name', title: 'Function', cls: 'name', text: true, value: function (f) { return f.name; } });
    }
    cols.push({ key: 'lineno', title: 'Line', cls: 'lineno', value: function (f) { return f.lineno; } });
    cols.push({ key: 'time', title: 'Time', cls: 'time', value: function (f) { return f.total; }, cell: function (f) { return V.cpuBar(f); } });
    cols.push({ key: 'python', title: 'Python', cls: 'pct', value: function (f) { return f.python; }, cell: percentCell('python') });
    cols.push({ key: 'native', title: 'native', cls: 'pct', value: function (f) { return f.native; }, cell: percentCell('native') });
    cols.push({ key: 'system', title: 'system', cls: 'pct', value: function (f) { return f.system; }, cell: percentCell('system') });
    const isLine = kind === 'line';
    if (isLine ? model.hasMemory : model.funcMemory) {
      cols.push({ key: 'avg', title: 'Mem avg', cls: 'mem', value: function (f) { return f.avg; }, cell: function (f) { return V.memBar('Average memory', f.avg, f.pyFrac, model.maxPeakMB, memTipRows(f)); } });
      cols.push({ key: 'peak', title: 'Mem peak', cls: 'mem', value: function (f) { return f.peak; }, cell: function (f) { return V.memBar('Peak memory', f.peak, f.pyFrac, model.maxPeakMB, memTipRows(f)); } });
      if (isLine ? model.hasLive : model.funcLive) {
        cols.push({ key: 'live', title: 'Live', cls: 'mem', value: function (f) { return f.live; }, cell: function (f) { return V.memBar('Live at the end', f.live, f.pyFrac, model.maxPeakMB, memTipRows(f)); } });
      }
      if (kind === 'line') {
        cols.push({ key: 'timeline', title: 'Timeline', cls: 'timeline', value: function (f) { return f.usage; }, shown: function (f) { return f.usage > 0 || V.points(f.memSamples).length > 0; }, cell: function (f) { return V.sparkline(f.memSamples, model.maxPeakMB, f.usage); } });
      }
    }
    if (isLine ? model.hasCopy : model.funcCopy) {
      cols.push({ key: 'copy', title: 'Copy', cls: 'copy', value: function (f) { return f.copy; }, cell: function (f) {
        const text = f.copy > 0 ? f.copy.toFixed(f.copy >= 10 ? 0 : 1) + ' MB/s' : '';
        return V.valueBar('copy', f.copy, model.maxCopy, text, ['Copy volume', ['rate', f.copy.toFixed(3) + ' MB/s']]);
      } });
    }
    if (isLine ? model.hasGpu : model.funcGpu) {
      cols.push({ key: 'gpu', title: 'GPU util', cls: 'gpu', value: function (f) { return f.gpu; }, cell: function (f) {
        return V.valueBar('gpu', f.gpu, 100, V.fmtPercent(f.gpu), ['GPU', ['utilisation', f.gpu.toFixed(1) + '%'], ['memory avg', V.fmtMB(f.gpuAvg) || '0 MB'], ['memory peak', V.fmtMB(f.gpuPeak) || '0 MB']]);
      } });
      cols.push({ key: 'gpumem', title: 'GPU mem', cls: 'gpu', value: function (f) { return f.gpuPeak; }, cell: function (f) {
        return V.valueBar('gpumem', f.gpuPeak, model.maxGpuMem, V.fmtMB(f.gpuPeak), ['GPU memory', ['average', V.fmtMB(f.gpuAvg) || '0 MB'], ['peak', V.fmtMB(f.gpuPeak) || '0 MB']]);
      } });
    }
    for (const fc of model.figCols) {
      if (!isLine && !fc.funcs) continue;
      cols.push({ key: 'fig-' + fc.key, title: fc.title, cls: 'figure', value: function (f) { return V.num(f.raw[fc.key]); }, cell: function (f) {
        const v = V.num(f.raw[fc.key]);
        return V.valueBar('figure', v, fc.max, figureText(fc, v), [fc.title, [fc.key, fc.unit === 'level_percent' ? v.toFixed(1) + '%' : figureText(fc, v) || '0']]);
      } });
    }
    if (kind === 'line') {
      cols.push({ key: 'source', title: 'Source', cls: 'source', text: true, value: function (f) { return f.text; } });
    }
    return cols;
  }

  /* ---- sorting -------------------------------------------------------- */

  function compareBy(col, dir) {
    return function (a, b) {
      const va = col.value(a.sortFig), vb = col.value(b.sortFig);
      let c = col.text ? (va < vb ? -1 : va > vb ? 1 : 0) : va - vb;
      if (c === 0) c = a.lineno - b.lineno;
      return dir === 'asc' ? c : -c;
    };
  }

  function sortHeader(table, cols, state, rerender) {
    const tr = V.el('tr');
    for (const col of cols) {
      const active = state.key === col.key;
      const button = V.el('button', { type: 'button', class: 'sort', text: col.title + (active ? (state.dir === 'asc' ? ' \u25b2' : ' \u25bc') : '') });
      button.addEventListener('click', function () {
        if (state.key === col.key) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
        else {
          state.key = col.key;
          state.dir = col.text || col.key === 'lineno' ? 'asc' : 'desc';
        }
        rerender();
      });
      const th = V.el('th', { class: col.cls, 'data-col': col.key, 'aria-sort': active ? (state.dir === 'asc' ? 'ascending' : 'descending') : 'none' }, [button]);
      tr.appendChild(th);
    }
    table.appendChild(V.el('thead', null, [tr]));
  }

  /* ---- line table ----------------------------------------------------- */

  function leakBadge(leak) {
    const badge = V.el('span', { class: 'leak-badge', text: 'possible leak: ' + (100 * leak.likelihood).toFixed(0) + '% likely, ' + leak.velocity.toFixed(3) + ' MB/s' });
    return V.tipFor(badge, function () {
      return ['Possible memory leak', ['likelihood', (100 * leak.likelihood).toFixed(1) + '%'], ['growth', leak.velocity.toFixed(3) + ' MB/s']];
    });
  }

  function lineRow(file, cols, row) {
    const fig = row.stats;
    const cls = row.figuresShown ? 'row-fig' : 'row-ctx';
    const tr = V.el('tr', { class: cls + (fig && fig.leak ? ' leak' : ''), 'data-lineno': row.lineno });
    for (const col of cols) {
      const td = V.el('td', { class: col.cls, 'data-col': col.key });
      if (col.key === 'lineno') {
        td.appendChild(document.createTextNode(String(row.lineno)));
      } else if (col.key === 'source') {
        td.appendChild(V.el('code', { text: lineText(file, row) }));
        if (fig && fig.leak) td.appendChild(leakBadge(fig.leak));
      } else if (row.figuresShown && (col.shown ? col.shown(fig) : col.value(fig) > 0)) {
        td.appendChild(col.cell(fig));
      }
      tr.appendChild(td);
    }
    return tr;
  }

  function markerRow(cols, cls, text) {
    return V.el('tr', { class: cls }, [V.el('td', { class: 'marker', colSpan: cols.length, text: text })]);
  }

  function renderLines(table, file, model, view, state) {
    V.clear(table);
    const cols = columns(model, 'line');
    sortHeader(table, cols, state, function () { renderLines(table, file, model, view, state); });
    const body = V.el('tbody');
    const rows = V.pickLines(file, model, view.showAll);
    const inLineOrder = state.key === 'lineno' && state.dir === 'asc';
    if (!rows.length) {
      body.appendChild(markerRow(cols, 'row-note', '(no line reaches ' + model.threshold.toFixed(1) + '% of the time)'));
    } else if (inLineOrder) {
      let prev = 0;
      for (const row of rows) {
        if (row.lineno >= 1 && row.lineno > prev + 1) body.appendChild(markerRow(cols, 'row-gap', '\u22ef'));
        body.appendChild(lineRow(file, cols, row));
        if (row.lineno > prev) prev = row.lineno;
      }
      if (prev < V.lastLine(file)) body.appendChild(markerRow(cols, 'row-gap', '\u22ef'));
    } else {
      const col = cols.find(function (c) { return c.key === state.key; }) || cols[0];
      const zero = { lineno: 0, text: '', python: 0, native: 0, system: 0, total: 0, avg: 0, peak: 0, usage: 0, copy: 0, gpu: 0, gpuPeak: 0, raw: {} };
      for (const row of rows) {
        row.sortFig = row.figuresShown ? row.stats : Object.assign({}, zero, { lineno: row.lineno, text: lineText(file, row) });
      }
      rows.sort(compareBy(col, state.dir));
      for (const row of rows) body.appendChild(lineRow(file, cols, row));
    }
    table.appendChild(body);
  }

  /* ---- function table ------------------------------------------------- */

  function renderFuncs(table, file, model, view, state) {
    V.clear(table);
    const cols = columns(model, 'func');
    sortHeader(table, cols, state, function () { renderFuncs(table, file, model, view, state); });
    const body = V.el('tbody');
    const funcs = file.functions
      .filter(function (f) { return view.showAll || V.isHot(f, model); })
      .map(function (f) { return { lineno: f.lineno, sortFig: f }; });
    const col = cols.find(function (c) { return c.key === state.key; }) || cols[1];
    funcs.sort(compareBy(col, state.dir));
    for (const item of funcs) {
      const f = item.sortFig;
      const tr = V.el('tr', { class: 'row-fig', 'data-lineno': f.lineno });
      for (const c of cols) {
        const td = V.el('td', { class: c.cls, 'data-col': c.key });
        if (c.key === 'name') td.appendChild(V.el('code', { text: f.name }));
        else if (c.key === 'lineno') td.appendChild(document.createTextNode(String(f.lineno)));
        else if (c.shown ? c.shown(f) : c.value(f) > 0) td.appendChild(c.cell(f));
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    if (!funcs.length) body.appendChild(markerRow(cols, 'row-note', '(no function reaches ' + model.threshold.toFixed(1) + '% of the time)'));
    table.appendChild(body);
  }

  /* ---- file sections ---------------------------------------------------- */

  function fileHeader(file, model) {
    const seconds = (file.percent * model.profiledSec) / 100;
    const parts = [
      V.el('span', { class: 'toggle', 'aria-hidden': 'true' }),
      V.el('span', { class: 'path', text: file.path }),
      V.el('span', { class: 'file-share', text: ': ' + file.percent.toFixed(1) + '% of time (' + seconds.toFixed(3) + ' s)' + (file.source ? '' : '; source not available') }),
    ];
    if (file.leaks.size) parts.push(V.el('span', { class: 'leak-count', text: file.leaks.size + (file.leaks.size === 1 ? ' possible leak' : ' possible leaks') }));
    return V.el('button', { type: 'button', class: 'file-head', 'aria-expanded': 'true' }, parts);
  }

  /* One section per file; returns {node, refresh()} so that the page's
   * "show all" toggle can redraw the tables. */
  V.fileSection = function (file, model, view) {
    const head = fileHeader(file, model);
    const linesTable = V.el('table', { class: 'lines' });
    const funcsTable = V.el('table', { class: 'funcs' });
    const body = V.el('div', { class: 'file-body' + (model.hasMemory || model.hasGpu ? ' wide' : '') }, [
      V.el('div', { class: 'lines-wrap' }, [linesTable]),
      V.el('div', { class: 'funcs-wrap' }, [V.el('h3', { text: 'Functions' }), funcsTable]),
    ]);
    const section = V.el('section', { class: 'file', 'data-path': file.path }, [V.el('h2', null, [head]), body]);
    const lineState = { key: 'lineno', dir: 'asc' };
    const funcState = { key: 'lineno', dir: 'asc' };
    function setCollapsed(collapsed) {
      section.classList.toggle('collapsed', collapsed);
      body.hidden = collapsed;
      head.setAttribute('aria-expanded', collapsed ? 'false' : 'true');
    }
    head.addEventListener('click', function () { setCollapsed(!body.hidden); });
    function refresh() {
      renderLines(linesTable, file, model, view, lineState);
      renderFuncs(funcsTable, file, model, view, funcState);
    }
    refresh();
    /* Files below the threshold start collapsed (the terminal leaves them out). */
    const significant = file.percent >= model.threshold || file.lines.some(function (l) { return V.isHot(l, model); });
    setCollapsed(!view.showAll && !significant);
    return { node: section, refresh: refresh, setCollapsed: setCollapsed };
  };
})();
