/* sonde-util.js — helpers shared by the viewer's modules.
 *
 * Owns: the SondeViewer namespace, reading numbers and strings from the
 * profile defensively (a JSON file given to `sonde view` may come from
 * anywhere), number formats that match the terminal report, DOM builders
 * that only ever insert text as text nodes, and the one hover tooltip.
 * Loaded first of the viewer's scripts (html.c inlines them by name;
 * sonde.js, the entry point, sorts last).
 */
(function () {
  'use strict';
  const V = (window.SondeViewer = window.SondeViewer || {});
  const SVG_NS = 'http://www.w3.org/2000/svg';

  /* ---- values from the profile ---------------------------------------- */

  V.num = function (v) {
    return typeof v === 'number' && isFinite(v) ? v : 0;
  };
  V.str = function (v) {
    return typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v);
  };
  V.isObject = function (v) {
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  };
  V.has = function (obj, key) {
    return V.isObject(obj) && Object.prototype.hasOwnProperty.call(obj, key);
  };
  V.list = function (v) {
    return Array.isArray(v) ? v : [];
  };

  /* ---- formats (as src/report/text.c prints them) --------------------- */

  /* A share of the time: blank for 0, "<0.1%" below 0.05, else "%.1f%%". */
  V.fmtPercent = function (v) {
    if (!(v > 0)) return '';
    if (v < 0.05) return '<0.1%';
    return v.toFixed(1) + '%';
  };
  /* A percentage that is always shown (summary figures): "%.1f%%". */
  V.fmtPercentAlways = function (v) {
    return V.num(v).toFixed(1) + '%';
  };
  V.fmtSeconds = function (s) {
    return V.num(s).toFixed(3) + ' s';
  };
  /* printf's %g for the modest values it is used with here. */
  V.fmtG = function (v) {
    return String(Number(V.num(v).toPrecision(6)));
  };
  V.fmtMB = function (mb) {
    mb = V.num(mb);
    if (mb >= 1024) return (mb / 1024).toFixed(2) + ' GB';
    if (mb >= 100) return mb.toFixed(0) + ' MB';
    if (mb >= 1) return mb.toFixed(1) + ' MB';
    if (mb > 0) return mb.toFixed(3) + ' MB';
    return '';
  };
  V.fmtCount = function (n) {
    return String(Math.round(V.num(n)));
  };
  /* A program argument quoted for a POSIX shell when it needs it (as the
   * terminal report's header does). */
  V.shellQuote = function (arg) {
    if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
    return "'" + arg.split("'").join("'\\''") + "'";
  };
  V.basename = function (path) {
    const s = V.str(path);
    const i = s.lastIndexOf('/');
    return i >= 0 && i < s.length - 1 ? s.slice(i + 1) : s;
  };

  /* ---- DOM: text only ----------------------------------------------------- */

  const FORBIDDEN = { innerHTML: 1, outerHTML: 1, srcdoc: 1, src: 1, href: 1 };

  function setProps(node, props, isSvg) {
    if (!props) return;
    for (const key of Object.keys(props)) {
      const value = props[key];
      if (value === undefined || value === null) continue;
      if (FORBIDDEN[key] || /^on/i.test(key)) throw new Error('refused property ' + key);
      if (key === 'class') {
        if (isSvg) node.setAttribute('class', value);
        else node.className = value;
      } else if (key === 'text') {
        node.textContent = V.str(value);
      } else if (isSvg || key.indexOf('-') >= 0) {
        node.setAttribute(key, V.str(value));
      } else {
        node[key] = value;
      }
    }
  }

  function appendChildren(node, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      if (typeof child === 'object' && child.nodeType) node.appendChild(child);
      else node.appendChild(document.createTextNode(V.str(child)));
    }
  }

  /* An HTML element; strings among children become text nodes. */
  V.el = function (tag, props, children) {
    const node = document.createElement(tag);
    setProps(node, props, false);
    appendChildren(node, children);
    return node;
  };
  /* An SVG element (attributes set with setAttribute, text as text nodes). */
  V.svg = function (tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    setProps(node, attrs, true);
    appendChildren(node, children);
    return node;
  };
  V.clear = function (node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  };

  /* ---- the tooltip -------------------------------------------------------- */

  /* tipFor(node, fn): hovering node (or anything inside it) shows the rows
   * fn() returns: strings (a title line) or [label, value] pairs. */
  const tips = new WeakMap();
  let tipBox = null;

  V.tipFor = function (node, fn) {
    tips.set(node, fn);
    return node;
  };

  function tipTarget(node) {
    for (let n = node; n && n !== document; n = n.parentNode) if (tips.has(n)) return n;
    return null;
  }

  function showTip(target, x, y) {
    const rows = tips.get(target)();
    V.clear(tipBox);
    for (const row of rows) {
      if (Array.isArray(row)) {
        tipBox.appendChild(
          V.el('div', { class: 'tip-row' }, [
            V.el('span', { class: 'tip-label', text: row[0] }),
            V.el('span', { class: 'tip-value', text: row[1] }),
          ])
        );
      } else {
        tipBox.appendChild(V.el('div', { class: 'tip-title', text: row }));
      }
    }
    tipBox.hidden = false;
    moveTip(x, y);
  }

  function moveTip(x, y) {
    const pad = 14;
    const w = tipBox.offsetWidth;
    const h = tipBox.offsetHeight;
    let left = x + pad;
    let top = y + pad;
    if (left + w > window.innerWidth - 4) left = Math.max(4, x - w - pad);
    if (top + h > window.innerHeight - 4) top = Math.max(4, y - h - pad);
    tipBox.style.left = left + 'px';
    tipBox.style.top = top + 'px';
  }

  V.installTooltip = function () {
    tipBox = V.el('div', { id: 'sonde-tip', class: 'tip', role: 'tooltip' });
    tipBox.hidden = true;
    document.body.appendChild(tipBox);
    let current = null;
    document.addEventListener('mouseover', function (ev) {
      const target = tipTarget(ev.target);
      if (target === current) return;
      current = target;
      if (target) showTip(target, ev.clientX, ev.clientY);
      else tipBox.hidden = true;
    });
    document.addEventListener('mousemove', function (ev) {
      if (current) moveTip(ev.clientX, ev.clientY);
    });
    document.addEventListener('mouseleave', function () {
      current = null;
      tipBox.hidden = true;
    });
  };
  /* Re-reads the hovered element's rows (a chart whose point changed). */
  V.refreshTip = function (node, x, y) {
    if (tipBox && !tipBox.hidden && tipTarget(node)) showTip(tipTarget(node), x, y);
  };
})();
