/* sonde-charts.js — the small charts of the viewer.
 *
 * Owns: the horizontal stacked CPU bar (Python / native / system), the
 * memory bars (average, peak; Python / native split), the per-line memory
 * sparkline, the copy and GPU bars, and the program's footprint-over-time
 * chart. Every chart carries a tooltip with its exact figures. Called by
 * sonde-table.js and sonde.js; text from the profile reaches these charts
 * only through V.el / V.svg (text nodes).
 */
(function () {
  'use strict';
  const V = (window.SondeViewer = window.SondeViewer || {});

  function pct(part, whole) {
    return whole > 0 ? Math.max(0, Math.min(100, (100 * part) / whole)) : 0;
  }

  function segment(cls, widthPercent) {
    const s = V.el('span', { class: 'seg ' + cls });
    s.style.width = widthPercent + '%';
    return s;
  }

  /* CPU bar: the row's share of the run; a full bar is 100 % of the time. */
  V.cpuBar = function (fig, extraTip) {
    const bar = V.el('span', { class: 'bar cpu-bar' }, [
      segment('python', pct(fig.python, 100)),
      segment('native', pct(fig.native, 100)),
      segment('system', pct(fig.system, 100)),
    ]);
    return V.tipFor(bar, function () {
      const rows = [
        'CPU time',
        ['Python', V.fmtPercentAlways(fig.python)],
        ['native', V.fmtPercentAlways(fig.native)],
        ['system', V.fmtPercentAlways(fig.system)],
        ['total', V.fmtPercentAlways(fig.total)],
      ];
      if (fig.samples !== undefined) rows.push(['samples', V.fmtCount(fig.samples)]);
      return extraTip ? rows.concat(extraTip()) : rows;
    });
  };

  /* A memory bar: mb of maxMB, split into Python and native by fraction. */
  V.memBar = function (what, mb, pythonFraction, maxMB, extraRows) {
    const whole = pct(mb, maxMB);
    const py = Math.max(0, Math.min(1, pythonFraction));
    const bar = V.el('span', { class: 'bar mem-bar' }, [
      segment('mem-python', whole * py),
      segment('mem-native', whole * (1 - py)),
    ]);
    const cell = V.el('span', { class: 'mem-cell' }, [bar, V.el('span', { class: 'fig', text: V.fmtMB(mb) })]);
    return V.tipFor(cell, function () {
      return [
        what,
        ['total', V.fmtMB(mb) || '0 MB'],
        ['Python', V.fmtMB(mb * py) || '0 MB'],
        ['native', V.fmtMB(mb * (1 - py)) || '0 MB'],
        ['Python share', (100 * py).toFixed(1) + '%'],
      ].concat(extraRows || []);
    });
  };

  /* A plain bar of value out of max, with its text. */
  V.valueBar = function (cls, value, max, text, tipRows) {
    const bar = V.el('span', { class: 'bar ' + cls + '-bar' }, [segment(cls, pct(value, max))]);
    const cell = V.el('span', { class: cls + '-cell' }, [bar, V.el('span', { class: 'fig', text: text })]);
    return V.tipFor(cell, function () {
      return tipRows;
    });
  };

  /* Points [[t, mb], ...] cleaned of anything that is not two numbers. */
  V.points = function (samples) {
    const out = [];
    for (const p of V.list(samples)) {
      if (Array.isArray(p) && p.length >= 2 && typeof p[0] === 'number' && typeof p[1] === 'number' && isFinite(p[0]) && isFinite(p[1]))
        out.push([p[0], p[1]]);
    }
    return out;
  };

  function extent(points) {
    let t0 = Infinity, t1 = -Infinity, lo = Infinity, hi = -Infinity;
    for (const p of points) {
      t0 = Math.min(t0, p[0]);
      t1 = Math.max(t1, p[0]);
      lo = Math.min(lo, p[1]);
      hi = Math.max(hi, p[1]);
    }
    return { t0: t0, t1: t1, lo: lo, hi: hi };
  }

  function polyPoints(points, w, h, ext, yMax) {
    const span = ext.t1 - ext.t0 || 1;
    const top = yMax > 0 ? yMax : 1;
    return points
      .map(function (p) {
        const x = points.length === 1 ? w / 2 : ((p[0] - ext.t0) / span) * w;
        const y = h - (Math.max(0, p[1]) / top) * (h - 2) - 1;
        return x.toFixed(1) + ',' + y.toFixed(1);
      })
      .join(' ');
  }

  /* A line's memory over time, on the scale of the run's peak (yMax). */
  V.sparkline = function (samples, yMax, usageFraction) {
    const points = V.points(samples);
    const w = 80, h = 18;
    const svgNode = V.svg('svg', { class: 'spark', width: w, height: h, viewBox: '0 0 ' + w + ' ' + h });
    if (points.length) {
      const ext = extent(points);
      svgNode.appendChild(V.svg('polyline', { points: polyPoints(points, w, h, ext, yMax || ext.hi) }));
    }
    const cell = V.el('span', { class: 'spark-cell' }, [
      svgNode,
      usageFraction > 0 ? V.el('span', { class: 'fig', text: (100 * usageFraction).toFixed(0) + '%' }) : null,
    ]);
    return V.tipFor(cell, function () {
      if (!points.length) return ['Memory over time', ['samples', '0']];
      const ext = extent(points);
      return [
        'Memory over time',
        ['samples', String(points.length)],
        ['from', ext.t0.toFixed(3) + ' s'],
        ['to', ext.t1.toFixed(3) + ' s'],
        ['lowest', V.fmtMB(ext.lo) || '0 MB'],
        ['highest', V.fmtMB(ext.hi) || '0 MB'],
        ['last', V.fmtMB(points[points.length - 1][1]) || '0 MB'],
        ['share of allocation', (100 * V.num(usageFraction)).toFixed(1) + '%'],
      ];
    });
  };

  /* The program's footprint over time: an area chart with axes; hovering
   * shows the nearest sample. */
  V.footprintChart = function (samples, peakMB) {
    const points = V.points(samples);
    const w = 640, h = 140, left = 48, bottom = 20, top = 8;
    const pw = w - left - 8, ph = h - bottom - top;
    const svgNode = V.svg('svg', { class: 'footprint', viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'aria-label': 'memory footprint over time' });
    if (!points.length) return svgNode;
    const ext = extent(points);
    const yMax = Math.max(ext.hi, V.num(peakMB)) || 1;
    const span = ext.t1 - ext.t0 || 1;
    const xOf = function (t) { return left + ((t - ext.t0) / span) * pw; };
    const yOf = function (mb) { return top + ph - (Math.max(0, mb) / yMax) * ph; };
    let d = 'M' + xOf(points[0][0]).toFixed(1) + ',' + yOf(0).toFixed(1);
    for (const p of points) d += ' L' + xOf(p[0]).toFixed(1) + ',' + yOf(p[1]).toFixed(1);
    d += ' L' + xOf(points[points.length - 1][0]).toFixed(1) + ',' + yOf(0).toFixed(1) + ' Z';
    svgNode.appendChild(V.svg('line', { class: 'axis', x1: left, y1: top + ph, x2: left + pw, y2: top + ph }));
    svgNode.appendChild(V.svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: top + ph }));
    svgNode.appendChild(V.svg('path', { class: 'area', d: d }));
    svgNode.appendChild(V.svg('text', { class: 'tick', x: left - 4, y: top + 10, 'text-anchor': 'end', text: V.fmtMB(yMax) }));
    svgNode.appendChild(V.svg('text', { class: 'tick', x: left - 4, y: top + ph, 'text-anchor': 'end', text: '0' }));
    svgNode.appendChild(V.svg('text', { class: 'tick', x: left, y: h - 4, text: ext.t0.toFixed(2) + ' s' }));
    svgNode.appendChild(V.svg('text', { class: 'tick', x: left + pw, y: h - 4, 'text-anchor': 'end', text: ext.t1.toFixed(2) + ' s' }));
    const marker = V.svg('circle', { class: 'marker', r: 3, cx: -10, cy: -10 });
    svgNode.appendChild(marker);
    let nearest = points[0];
    svgNode.addEventListener('mousemove', function (ev) {
      const box = svgNode.getBoundingClientRect();
      const x = ((ev.clientX - box.left) / box.width) * w;
      const t = ext.t0 + ((x - left) / pw) * span;
      nearest = points[0];
      for (const p of points) if (Math.abs(p[0] - t) < Math.abs(nearest[0] - t)) nearest = p;
      marker.setAttribute('cx', xOf(nearest[0]).toFixed(1));
      marker.setAttribute('cy', yOf(nearest[1]).toFixed(1));
      V.refreshTip(svgNode, ev.clientX, ev.clientY);
    });
    return V.tipFor(svgNode, function () {
      return ['Footprint', ['time', nearest[0].toFixed(3) + ' s'], ['footprint', V.fmtMB(nearest[1]) || '0 MB'], ['peak', V.fmtMB(yMax)]];
    });
  };
})();
