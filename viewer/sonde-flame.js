/* sonde-flame.js — the flame graph of a profile's call stacks.
 *
 * Owns: merging the "call_stacks" samples (docs/json-format.md) into a
 * tree of frames (one node per function and file under the same caller),
 * drawing it top-down (root on top, callees below) as SVG, zooming on a
 * click, highlighting a search, choosing one thread, and the hover figures
 * (samples, seconds, share of all and of the zoomed frame). Frames are
 * sized by time ("sec"), or by sample count when no stack has a time.
 * Function names and paths become SVG text nodes only. Called by sonde.js
 * when the profile has stacks.
 */
(function () {
  'use strict';
  const V = (window.SondeViewer = window.SondeViewer || {});
  const ROW = 18;        /* px per stack level */
  const CHAR_W = 6.6;    /* approximate width of a character of the 11px font */
  const MIN_W = 0.5;     /* frames narrower than this (px) are not drawn */

  function newNode(name, file, parent) {
    return { name: name, file: file, parent: parent, depth: parent ? parent.depth + 1 : 0, value: 0, count: 0, sec: 0, children: new Map(), lines: new Map(), x0: 0, w: 0 };
  }

  /* The tree of the samples of one thread (index) or of all (null). */
  V.flameTree = function (stacks, thread) {
    const frames = V.list(stacks.frames).map(function (f) {
      return V.isObject(f) ? { name: V.str(f.name), file: V.str(f.file), line: Math.trunc(V.num(f.line)) } : null;
    });
    const samples = V.list(stacks.samples).filter(V.isObject);
    const bySec = samples.some(function (s) { return V.num(s.sec) > 0; });
    const root = newNode('all', '', null);
    root.bySec = bySec;
    for (const s of samples) {
      if (thread !== null && s.thread !== thread) continue;
      const weight = bySec ? V.num(s.sec) : V.num(s.count);
      if (!(weight > 0)) continue;
      let node = root;
      const add = function (n) {
        n.value += weight;
        n.count += V.num(s.count);
        n.sec += V.num(s.sec);
      };
      add(root);
      for (const index of V.list(s.frames)) {
        const f = typeof index === 'number' ? frames[index] : null;
        if (!f) continue;
        const key = f.name + '\u0000' + f.file;
        let child = node.children.get(key);
        if (!child) {
          child = newNode(f.name, f.file, node);
          node.children.set(key, child);
        }
        add(child);
        child.lines.set(f.line, (child.lines.get(f.line) || 0) + weight);
        node = child;
      }
    }
    /* Positions as fractions of the root: heaviest callee first. */
    let maxDepth = 0;
    (function place(node, x0) {
      node.x0 = x0;
      node.w = root.value > 0 ? node.value / root.value : 0;
      maxDepth = Math.max(maxDepth, node.depth);
      const kids = Array.from(node.children.values()).sort(function (a, b) {
        return b.value - a.value || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
      });
      node.sorted = kids;
      let x = x0;
      for (const k of kids) {
        place(k, x);
        x += root.value > 0 ? k.value / root.value : 0;
      }
    })(root, 0);
    root.maxDepth = maxDepth;
    return root;
  };

  function hue(node) {
    let h = 0;
    const s = node.file + '/' + node.name;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return 'hsl(' + (10 + (h % 40)) + ',' + (65 + (h >> 8) % 20) + '%,' + (58 + (h >> 16) % 12) + '%)';
  }

  function isAncestor(a, b) {
    for (let n = b; n; n = n.parent) if (n === a) return true;
    return false;
  }

  function label(name, widthPx) {
    const fit = Math.floor((widthPx - 6) / CHAR_W);
    if (fit < 2) return '';
    return name.length <= fit ? name : name.slice(0, fit - 1) + '\u2026';
  }

  V.flameView = function (stacks) {
    const threads = V.list(stacks.threads).map(V.str);
    const state = { thread: null, tree: null, zoom: null, term: '' };
    const select = V.el('select', { class: 'flame-thread', 'aria-label': 'thread' });
    select.appendChild(V.el('option', { value: 'all', text: 'all threads' }));
    threads.forEach(function (name, i) { select.appendChild(V.el('option', { value: String(i), text: name || 'thread ' + i })); });
    const search = V.el('input', { type: 'search', class: 'flame-search', placeholder: 'search functions and files', 'aria-label': 'search' });
    const reset = V.el('button', { type: 'button', class: 'flame-reset', text: 'Reset zoom' });
    const status = V.el('span', { class: 'flame-status' });
    const svgBox = V.el('div', { class: 'flame-box' });
    const node = V.el('div', { class: 'flame' }, [
      V.el('div', { class: 'flame-tools' }, [threads.length ? select : null, search, reset, status]),
      svgBox,
    ]);

    function shareOf(n, of) {
      return of && of.value > 0 ? ((100 * n.value) / of.value).toFixed(2) + '%' : '0%';
    }

    function tipRows(n) {
      const rows = [n.name || '(unnamed)'];
      if (n.file) rows.push(['file', n.file]);
      if (n.lines.size) {
        const lines = Array.from(n.lines.entries()).sort(function (a, b) { return b[1] - a[1]; }).slice(0, 5).map(function (e) { return e[0]; });
        rows.push(['lines', lines.join(', ') + (n.lines.size > 5 ? ', \u2026' : '')]);
      }
      rows.push(['samples', V.fmtCount(n.count)]);
      if (state.tree.bySec) rows.push(['time', n.sec.toFixed(3) + ' s']);
      rows.push(['of all', shareOf(n, state.tree)]);
      if (state.zoom !== state.tree) rows.push(['of zoomed', shareOf(n, state.zoom)]);
      let childValue = 0;
      for (const c of n.children.values()) childValue += c.value;
      rows.push(['self', state.tree.value > 0 ? ((100 * (n.value - childValue)) / state.tree.value).toFixed(2) + '%' : '0%']);
      return rows;
    }

    function matches(n) {
      if (!state.term || n === state.tree) return false;
      return n.name.toLowerCase().indexOf(state.term) >= 0 || n.file.toLowerCase().indexOf(state.term) >= 0;
    }

    function draw() {
      V.clear(svgBox);
      const tree = state.tree;
      const zoom = state.zoom;
      const width = Math.max(320, svgBox.clientWidth || node.clientWidth || 960);
      const height = (tree.maxDepth + 1) * ROW + 2;
      const svgNode = V.svg('svg', { class: 'flame-svg', width: width, height: height, viewBox: '0 0 ' + width + ' ' + height });
      svgBox.setAttribute('data-zoom', zoom.name);
      let matchedValue = 0, matchedFrames = 0;
      const scale = zoom.w > 0 ? width / zoom.w : 0;
      (function visit(n, matchedAbove) {
        const inZoom = isAncestor(zoom, n);
        const above = !inZoom && isAncestor(n, zoom);
        if (!inZoom && !above) return;
        const x = above ? 0 : (n.x0 - zoom.x0) * scale;
        const w = above ? width : n.w * scale;
        if (w < MIN_W) return;
        const hit = matches(n);
        if (hit) {
          matchedFrames++;
          if (!matchedAbove) matchedValue += n.value;
        }
        const g = V.svg('g', { class: 'frame' + (above && n !== zoom ? ' ancestor' : '') + (hit ? ' match' : '') + (n === zoom ? ' zoomed' : ''), 'data-depth': n.depth });
        g.appendChild(V.svg('rect', { x: x.toFixed(2), y: n.depth * ROW, width: Math.max(0, w - 0.5).toFixed(2), height: ROW - 1, fill: n === tree ? '#c8c8c8' : hue(n) }));
        const text = label(n === tree ? 'all (' + V.fmtCount(tree.count) + ' samples)' : n.name, w);
        if (text) g.appendChild(V.svg('text', { x: (x + 3).toFixed(2), y: n.depth * ROW + ROW - 5, text: text }));
        g.addEventListener('click', function () { zoomTo(n); });
        V.tipFor(g, function () { return tipRows(n); });
        svgNode.appendChild(g);
        for (const c of n.sorted) visit(c, matchedAbove || hit);
      })(tree, false);
      svgBox.appendChild(svgNode);
      status.textContent = state.term
        ? matchedFrames + ' matching frame' + (matchedFrames === 1 ? '' : 's') + ', ' + (tree.value > 0 ? ((100 * matchedValue) / tree.value).toFixed(1) : '0.0') + '% of all'
        : '';
      reset.disabled = zoom === tree;
    }

    function zoomTo(n) {
      state.zoom = n;
      draw();
    }

    function rebuild() {
      state.tree = V.flameTree(stacks, state.thread);
      state.zoom = state.tree;
      draw();
    }

    select.addEventListener('change', function () {
      state.thread = select.value === 'all' ? null : parseInt(select.value, 10);
      rebuild();
    });
    search.addEventListener('input', function () {
      state.term = search.value.trim().toLowerCase();
      draw();
    });
    reset.addEventListener('click', function () { zoomTo(state.tree); });
    node.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape') zoomTo(state.tree);
    });
    let resizeTimer = 0;
    window.addEventListener('resize', function () {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(function () { if (state.tree && svgBox.clientWidth) draw(); }, 100);
    });

    return {
      node: node,
      /* Draws (again) once the view is visible and has a width. */
      show: function () {
        if (!state.tree) rebuild();
        else draw();
      },
    };
  };
})();
