/* sonde.js — the viewer's entry point (inlined last by html.c).
 *
 * Owns: reading the profile from the page's <script type=
 * "application/json" id="sonde-profile"> element, the header and the
 * summary (program, elapsed time, the run's Python / native / system
 * split, peak memory and the footprint chart when memory was profiled, the
 * GPU when one was used, the table of processes when a merged profile
 * holds several), the switch between the line view and the flame
 * graph, and the page-wide "show all lines" and expand / collapse
 * controls. Everything from the profile is inserted as text (V.el /
 * V.svg); nothing here parses HTML or evaluates code.
 */
(function () {
  'use strict';
  const V = (window.SondeViewer = window.SondeViewer || {});

  function readProfile() {
    const holder = document.getElementById('sonde-profile');
    if (!holder) throw new Error('the page holds no profile');
    const data = JSON.parse(holder.textContent);
    if (!V.isObject(data) || !V.isObject(data.files)) throw new Error('the embedded document is not a profile (no "files" object)');
    return data;
  }

  function header(data) {
    const words = [V.str(data.program) || '(unknown program)'].concat(V.list(data.args).map(function (a) { return V.shellQuote(V.str(a)); }));
    const parts = [];
    if (data.python_version) parts.push('Python ' + V.str(data.python_version));
    let run = V.fmtSeconds(data.elapsed_time_sec) + ' elapsed, ' + V.fmtCount(data.n_samples) + ' samples';
    if (V.num(data.interval_sec) > 0) run += ' every ' + V.fmtG(V.num(data.interval_sec) * 1e3) + ' ms';
    run += data.virtual_time ? ' (CPU time only)' : ' (wall clock)';
    parts.push(run);
    const nproc = V.list(data.processes).length;
    if (nproc > 1) parts.push(V.fmtCount(nproc) + ' processes profiled');
    return V.el('header', { class: 'top' }, [
      V.el('h1', null, [V.el('span', { class: 'brand', text: 'sonde' + (data.sonde_version ? ' ' + V.str(data.sonde_version) : '') }), ' ', V.el('span', { class: 'program', text: words.join(' ') })]),
      V.el('p', { class: 'run-line', text: parts.join(', ') }),
    ]);
  }

  function legend(cls, text) {
    return V.el('span', { class: 'legend' }, [V.el('span', { class: 'swatch ' + cls }), text]);
  }

  // The JSON's "partial" object (docs/json-format.md) as one sentence, or
  // '' when the profile is complete.
  const PARTIAL_PARTS = [
    ['failed_reads', 'failed stack read', 'failed stack reads'],
    ['dropped_samples', 'dropped sample', 'dropped samples'],
    ['threads_left_out', 'thread sample left out', 'thread samples left out'],
    ['frames_left_out', 'frame left out', 'frames left out'],
    ['processes_lost', 'process lost', 'processes lost'],
  ];
  function partialNote(partial) {
    if (!partial || typeof partial !== 'object') return '';
    const parts = [];
    PARTIAL_PARTS.forEach(function (p) {
      const n = V.num(partial[p[0]]);
      if (n > 0) parts.push(V.fmtCount(n) + ' ' + (n === 1 ? p[1] : p[2]));
    });
    return parts.length ? 'partial profile: ' + parts.join(', ') : '';
  }

  function cpuSummary(data) {
    const fig = {
      python: V.num(data.cpu_percent_python),
      native: V.num(data.cpu_percent_c),
      system: V.num(data.sys_percent),
    };
    fig.total = fig.python + fig.native + fig.system;
    const bar = V.cpuBar(fig, function () { return [['profiled', V.fmtSeconds(data.profiled_time_sec)]]; });
    bar.classList.add('summary-bar');
    const box = V.el('div', { class: 'panel cpu-summary' }, [
      V.el('h2', { text: 'Time' }),
      V.el('p', { class: 'split' }, [
        V.el('span', { class: 'profiled', text: V.fmtSeconds(data.profiled_time_sec) + ' profiled:' }), ' ',
        legend('python', 'Python '), V.el('span', { class: 'total-python', text: V.fmtPercentAlways(fig.python) }), ', ',
        legend('native', 'native '), V.el('span', { class: 'total-native', text: V.fmtPercentAlways(fig.native) }), ', ',
        legend('system', 'system '), V.el('span', { class: 'total-system', text: V.fmtPercentAlways(fig.system) }),
      ]),
      bar,
    ]);
    if (V.num(data.unattributed_percent) > 0)
      box.appendChild(V.el('p', { class: 'note', text: V.num(data.unattributed_percent).toFixed(1) + '% of the sampled time was outside profiled files (not shown)' }));
    const partial = partialNote(data.partial);
    if (partial) box.appendChild(V.el('p', { class: 'note partial', text: partial }));
    return box;
  }

  // The "processes" list (docs/json-format.md) as a table, when a merged
  // profile holds more than one; shares elsewhere are of all their time.
  function processesPanel(data) {
    const list = V.list(data.processes).filter(V.isObject);
    const head = ['PID', 'PPID', 'CPU s', 'wall s', 'peak MB', 'command'];
    const rows = list.map(function (p) {
      return V.el('tr', null, [
        V.el('td', { class: 'num', text: String(V.num(p.pid)) }),
        V.el('td', { class: 'num', text: String(V.num(p.ppid)) }),
        V.el('td', { class: 'num', text: V.num(p.cpu_sec).toFixed(3) }),
        V.el('td', { class: 'num', text: V.num(p.wall_sec).toFixed(3) }),
        V.el('td', { class: 'num', text: V.num(p.peak_mb).toFixed(1) }),
        V.el('td', null, [V.el('code', { text: V.str(p.cmdline) }), p.complete === false ? ' (part of its run)' : '']),
      ]);
    });
    return V.el('div', { class: 'panel processes' }, [
      V.el('h2', { text: 'Processes' }),
      V.el('p', { class: 'note', text: V.fmtCount(list.length) + ' processes profiled; shares are of all their time together' }),
      V.el('table', { class: 'process-table' }, [
        V.el('thead', null, [V.el('tr', null, head.map(function (h, i) { return V.el('th', { class: i < 5 ? 'num' : null, text: h }); }))]),
        V.el('tbody', null, rows),
      ]),
    ]);
  }

  function memorySummary(data, model) {
    const peak = V.has(data, 'max_footprint_mb') ? V.num(data.max_footprint_mb) : model.maxPeakMB;
    const where = data.max_footprint_fname ? V.str(data.max_footprint_fname) + (data.max_footprint_lineno ? ':' + V.fmtCount(data.max_footprint_lineno) : '') : '';
    const timeline = V.list(data.samples);
    const box = V.el('div', { class: 'panel mem-summary' }, [
      V.el('h2', { text: 'Memory' }),
      V.el('p', { class: 'peak' }, [
        'Peak footprint ', V.el('span', { class: 'peak-mb', text: V.fmtMB(peak) || '0 MB' }),
        where ? ' at ' : '', where ? V.el('code', { class: 'peak-where', text: where }) : null,
      ]),
    ]);
    if (V.has(data, 'growth_rate'))
      box.appendChild(V.el('p', { class: 'growth', text: 'The footprint grew ' + V.num(data.growth_rate).toFixed(1) + '% over the run' }));
    if (timeline.length) box.appendChild(V.footprintChart(timeline, peak));
    box.appendChild(V.el('p', { class: 'legend-row' }, [legend('mem-python', 'Python objects'), ' ', legend('mem-native', 'native allocations'), ' ', legend('copy', 'copy volume')]));
    return box;
  }

  /* The run's GPU figures: the writer's own means (gpu_percent, ...) when
   * the profile has them, else the lines' utilisation weighted by samples. */
  function gpuSummary(data, model) {
    let util = V.num(data.gpu_percent), avg = V.num(data.gpu_avg_memory_mb), peak = V.num(data.gpu_peak_memory_mb);
    if (!V.has(data, 'gpu_percent')) {
      let weighted = 0, weight = 0;
      for (const f of model.files)
        for (const l of f.lines) {
          weighted += l.gpu * (l.samples || 1);
          weight += l.samples || 1;
          avg = Math.max(avg, l.gpuAvg);
          peak = Math.max(peak, l.gpuPeak);
        }
      util = weight > 0 ? weighted / weight : 0;
    }
    return V.el('div', { class: 'panel gpu-summary' }, [
      V.el('h2', { text: 'GPU' }),
      V.el('p', null, [
        data.gpu_device ? V.el('span', { class: 'gpu-device', text: V.str(data.gpu_device) }) : 'GPU',
        ': ', V.el('span', { class: 'gpu-util', text: util.toFixed(1) + '%' }), ' mean utilisation, memory ',
        V.el('span', { class: 'gpu-avg', text: V.fmtMB(avg) || '0 MB' }), ' mean, ',
        V.el('span', { class: 'gpu-peak', text: V.fmtMB(peak) || '0 MB' }), ' peak',
      ]),
      V.has(data, 'gpu_per_process') ? V.el('p', { class: 'note', text: data.gpu_per_process ? 'figures of this process tree' : 'figures of the whole device (other processes included)' }) : null,
    ]);
  }

  function linesView(data, model) {
    const view = { showAll: false };
    const sections = model.files.map(function (f) { return V.fileSection(f, model, view); });
    const showAll = V.el('input', { type: 'checkbox', id: 'show-all' });
    const expand = V.el('button', { type: 'button', id: 'expand-all', text: 'Expand all' });
    const collapse = V.el('button', { type: 'button', id: 'collapse-all', text: 'Collapse all' });
    showAll.addEventListener('change', function () {
      view.showAll = showAll.checked;
      for (const s of sections) s.refresh();
    });
    expand.addEventListener('click', function () { for (const s of sections) s.setCollapsed(false); });
    collapse.addEventListener('click', function () { for (const s of sections) s.setCollapsed(true); });
    const tools = V.el('div', { class: 'tools' }, [
      V.el('label', { class: 'show-all' }, [showAll, ' show all lines and functions (default: those with at least ' + model.threshold.toFixed(1) + '% of the time, with one line of context)']),
      expand,
      collapse,
    ]);
    const node = V.el('div', { class: 'lines-view' }, [tools].concat(sections.map(function (s) { return s.node; })));
    if (!model.files.length) node.appendChild(V.el('p', { class: 'note', text: 'No samples: the program ran for less than one sampling interval or outside profiled files.' }));
    return node;
  }

  function tabs(views) {
    const bar = V.el('nav', { class: 'tabs', role: 'tablist' });
    const panes = [];
    views.forEach(function (v, i) {
      const button = V.el('button', { type: 'button', role: 'tab', class: 'tab', id: 'tab-' + v.id, text: v.title, 'aria-selected': i === 0 ? 'true' : 'false' });
      const pane = V.el('div', { class: 'pane', id: 'pane-' + v.id, role: 'tabpanel' }, [v.node]);
      pane.hidden = i !== 0;
      button.addEventListener('click', function () {
        views.forEach(function (other, j) {
          panes[j].hidden = j !== i;
          bar.children[j].setAttribute('aria-selected', j === i ? 'true' : 'false');
        });
        if (v.show) v.show();
      });
      bar.appendChild(button);
      panes.push(pane);
    });
    return V.el('div', null, [views.length > 1 ? bar : null].concat(panes));
  }

  function render() {
    const app = document.getElementById('sonde-app');
    V.installTooltip();
    let data;
    try {
      data = readProfile();
    } catch (err) {
      app.appendChild(V.el('p', { class: 'error', text: 'sonde: cannot show this profile: ' + err.message }));
      return;
    }
    const model = V.prepare(data);
    document.title = 'sonde: ' + (V.str(data.program) || 'profile');
    app.appendChild(header(data));
    const summary = V.el('div', { class: 'summary' }, [cpuSummary(data)]);
    if (model.hasMemory) summary.appendChild(memorySummary(data, model));
    if (model.hasGpu) summary.appendChild(gpuSummary(data, model));
    if (V.list(data.processes).length > 1) summary.appendChild(processesPanel(data));
    app.appendChild(summary);
    const views = [{ id: 'lines', title: 'Lines', node: linesView(data, model) }];
    const stacks = data.call_stacks;
    if (V.isObject(stacks) && V.list(stacks.samples).length) {
      const flame = V.flameView(stacks);
      views.push({ id: 'flame', title: 'Flame graph', node: flame.node, show: flame.show });
    }
    app.appendChild(tabs(views));
    document.documentElement.setAttribute('data-sonde-ready', 'true');
  }

  render();
})();
