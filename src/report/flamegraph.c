/* flamegraph.c — call stacks as a self-contained interactive flame graph (SVG).
 *
 * Owns: sonde_report_flamegraph (report.h). Called by the CLI for
 * `sonde attach/record --format svg` (or -o *.svg). The picture follows
 * FlameGraph's conventions: one box per distinct call path, the root
 * ("all") at the bottom and callees above their callers, width
 * proportional to samples, children in alphabetical order, a warm colour
 * per function. The SVG carries its own script (no network, nothing
 * loaded): hover shows a frame's samples and percentage (also as a
 * tooltip), a click zooms into a frame ("Reset Zoom" or the root to go
 * back), "Search" (or Ctrl-F) highlights frames matching a regular
 * expression and shows the share they cover.
 *
 * Names come from the profiled program and are untrusted: every one is
 * written as XML character data or an attribute value with & < > " '
 * escaped, bytes that are not UTF-8 and characters XML forbids become
 * U+FFFD, control characters become spaces. No name is ever written inside
 * the script (a CDATA section of constant text); the script reads names
 * back from attributes and sets them only as text (textContent), so a
 * function called "</script><img onerror=...>" is shown, never run. Plain
 * C; never in a signal handler.
 */
#include "stackfmt.h"

#include <string.h>

#define FLAME_WIDTH 1200  /* image width, px */
#define FLAME_XPAD 10     /* left and right margins */
#define FLAME_FRAME_H 16  /* height of one level */
#define FLAME_TOP 66      /* title, subtitle and buttons */
#define FLAME_BOTTOM 34   /* the details line */
#define FLAME_FONT 12     /* px; the script uses the same figure */
#define FLAME_CHAR_W 0.59 /* average glyph width as a share of the font size */
#define FLAME_MIN_W 0.1   /* boxes narrower than this (px) are left out */

static const char flame_script[] =
    "\"use strict\";\n"
    "var fg = {};\n"
    "function init(evt) {\n"
    "  var svg = document.documentElement;\n"
    "  fg.width = +svg.getAttribute(\"width\");\n"
    "  fg.frames = [];\n"
    "  fg.details = document.getElementById(\"details\");\n"
    "  fg.matched = document.getElementById(\"matched\");\n"
    "  fg.searchButton = document.getElementById(\"search\");\n"
    "  fg.unzoomButton = document.getElementById(\"unzoom\");\n"
    "  fg.total = 0;\n"
    "  fg.zoomed = null;\n"
    "  var nodes = document.getElementById(\"frames\").childNodes;\n"
    "  for (var i = 0; i < nodes.length; i++) {\n"
    "    var g = nodes[i];\n"
    "    if (g.nodeType !== 1 || g.getAttribute(\"class\") !== \"f\") continue;\n"
    "    var rect = g.getElementsByTagName(\"rect\")[0];\n"
    "    var f = {\n"
    "      g: g, rect: rect, text: g.getElementsByTagName(\"text\")[0],\n"
    "      label: g.getAttribute(\"data-l\") || \"\", samples: +g.getAttribute(\"data-s\"),\n"
    "      x: +rect.getAttribute(\"x\"), w: +rect.getAttribute(\"width\"),\n"
    "      y: +rect.getAttribute(\"y\"), fill: rect.getAttribute(\"fill\")\n"
    "    };\n"
    "    g.fgIndex = fg.frames.length;\n"
    "    fg.frames.push(f);\n"
    "    if (f.samples > fg.total) fg.total = f.samples;\n"
    "    g.addEventListener(\"click\", onClick);\n"
    "    g.addEventListener(\"mouseover\", onOver);\n"
    "    g.addEventListener(\"mouseout\", onOut);\n"
    "  }\n"
    "  fg.rootY = 0;\n"
    "  for (var j = 0; j < fg.frames.length; j++) if (fg.frames[j].y > fg.rootY) fg.rootY = "
    "fg.frames[j].y;\n"
    "  fg.searchButton.addEventListener(\"click\", function () {\n"
    "    if (fg.term !== undefined) resetSearch(); else askSearch();\n"
    "  });\n"
    "  fg.unzoomButton.addEventListener(\"click\", unzoom);\n"
    "  window.addEventListener(\"keydown\", function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && (e.key === \"f\" || e.keyCode === 70) || e.keyCode === "
    "114) {\n"
    "      e.preventDefault();\n"
    "      askSearch();\n"
    "    } else if (e.key === \"Escape\" || e.keyCode === 27) {\n"
    "      resetSearch();\n"
    "      unzoom();\n"
    "    }\n"
    "  });\n"
    "}\n"
    "function frameOf(e) {\n"
    "  var n = e.target;\n"
    "  while (n && n.fgIndex === undefined) n = n.parentNode;\n"
    "  return n ? fg.frames[n.fgIndex] : null;\n"
    "}\n"
    "function percent(samples) {\n"
    "  return fg.total ? (100 * samples / fg.total).toFixed(2) + \"%\" : \"0%\";\n"
    "}\n"
    "function describe(f) {\n"
    "  return f.label + \" (\" + f.samples + \" sample\" + (f.samples === 1 ? \"\" : \"s\") + \", "
    "\" + percent(f.samples) + \")\";\n"
    "}\n"
    "function onOver(e) {\n"
    "  var f = frameOf(e);\n"
    "  if (f) fg.details.textContent = describe(f);\n"
    "}\n"
    "function onOut() {\n"
    "  fg.details.textContent = \" \";\n"
    "}\n"
    "function onClick(e) {\n"
    "  var f = frameOf(e);\n"
    "  if (!f) return;\n"
    "  if (f.y === fg.rootY) unzoom(); else zoom(f);\n"
    "}\n"
    "function fit(f, x, w) {\n"
    "  var chars = Math.floor((w - 6) / (12 * 0.59));\n"
    "  var label = f.label;\n"
    "  if (chars < 3) label = \"\";\n"
    "  else if (label.length > chars) label = label.substring(0, chars - 2) + \"..\";\n"
    "  f.text.textContent = label;\n"
    "  f.text.setAttribute(\"x\", (x + 3).toFixed(1));\n"
    "}\n"
    "function place(f, x, w, cls) {\n"
    "  f.rect.setAttribute(\"x\", x.toFixed(2));\n"
    "  f.rect.setAttribute(\"width\", w.toFixed(2));\n"
    "  f.g.setAttribute(\"class\", cls);\n"
    "  fit(f, x, w);\n"
    "}\n"
    "function zoom(z) {\n"
    "  var pad = fg.frames.length ? fg.frames[0].x : 10;\n"
    "  var full = fg.width - 2 * pad, scale = full / z.w, eps = 1e-6;\n"
    "  fg.zoomed = z;\n"
    "  fg.unzoomButton.setAttribute(\"class\", \"\");\n"
    "  for (var i = 0; i < fg.frames.length; i++) {\n"
    "    var f = fg.frames[i];\n"
    "    if (f.y > z.y) {\n"
    "      if (f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps) place(f, pad, full, \"f "
    "parent\");\n"
    "      else f.g.setAttribute(\"class\", \"f hide\");\n"
    "    } else if (f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps && (f.y < z.y || f === z)) {\n"
    "      var w = f.w * scale;\n"
    "      if (w < 0.1) f.g.setAttribute(\"class\", \"f hide\");\n"
    "      else place(f, pad + (f.x - z.x) * scale, w, \"f\");\n"
    "    } else {\n"
    "      f.g.setAttribute(\"class\", \"f hide\");\n"
    "    }\n"
    "  }\n"
    "}\n"
    "function unzoom() {\n"
    "  fg.zoomed = null;\n"
    "  fg.unzoomButton.setAttribute(\"class\", \"hide\");\n"
    "  for (var i = 0; i < fg.frames.length; i++) {\n"
    "    var f = fg.frames[i];\n"
    "    place(f, f.x, f.w, \"f\");\n"
    "  }\n"
    "}\n"
    "function askSearch() {\n"
    "  var term = window.prompt(\"Search for a function or file (a regular expression):\", fg.term "
    "|| \"\");\n"
    "  if (term) search(term);\n"
    "}\n"
    "function resetSearch() {\n"
    "  for (var i = 0; i < fg.frames.length; i++) fg.frames[i].rect.setAttribute(\"fill\", "
    "fg.frames[i].fill);\n"
    "  fg.term = undefined;\n"
    "  fg.matched.textContent = \" \";\n"
    "  fg.searchButton.textContent = \"Search\";\n"
    "}\n"
    "function search(term) {\n"
    "  var re;\n"
    "  resetSearch();\n"
    "  try {\n"
    "    re = new RegExp(term);\n"
    "  } catch (err) {\n"
    "    re = { test: function (s) { return s.indexOf(term) >= 0; } };\n"
    "  }\n"
    "  var hits = [];\n"
    "  for (var i = 0; i < fg.frames.length; i++) {\n"
    "    var f = fg.frames[i];\n"
    "    if (f.y === fg.rootY || !re.test(f.label)) continue;\n"
    "    f.rect.setAttribute(\"fill\", \"rgb(230,0,230)\");\n"
    "    hits.push(f);\n"
    "  }\n"
    "  fg.term = term;\n"
    "  fg.searchButton.textContent = \"Reset Search\";\n"
    "  hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });\n"
    "  var covered = 0, end = -1;\n"
    "  for (var j = 0; j < hits.length; j++) {\n"
    "    var h = hits[j], from = Math.max(h.x, end), to = h.x + h.w;\n"
    "    if (to > from) { covered += to - from; end = to; }\n"
    "  }\n"
    "  var all = fg.frames.length ? fg.frames[0].w : 1;\n"
    "  for (var k = 0; k < fg.frames.length; k++) if (fg.frames[k].w > all) all = fg.frames[k].w;\n"
    "  fg.matched.textContent = \"Matched: \" + (100 * covered / all).toFixed(1) + \"%\";\n"
    "}\n";

static const char flame_style[] =
    "text { font-family: Verdana, DejaVu Sans, sans-serif; font-size: 12px; fill: #000; }\n"
    "#title { text-anchor: middle; font-size: 17px; }\n"
    "#subtitle { text-anchor: middle; fill: #555; }\n"
    "#search, #matched { text-anchor: end; }\n"
    "#search, #unzoom { cursor: pointer; fill: #333; }\n"
    "#search:hover, #unzoom:hover { fill: #a00; }\n"
    ".hide { display: none; }\n"
    "g.f { cursor: pointer; }\n"
    "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
    ".parent { opacity: 0.5; }\n";

/* Appends s as XML text or attribute content (see the banner). At most
 * max_chars characters (0: all); a cut string ends in "..". */
static void flame_xml(sonde_buf_t *out, const char *s, size_t max_chars)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t left = strlen((const char *)p), chars = 0, total = 0;
    if (max_chars) { /* count characters first, to know whether to cut */
        const unsigned char *q = p;
        for (size_t rest = left; rest > 0; total++) {
            uint32_t cp = 0;
            size_t n = sonde__utf8_decode(q, rest, &cp);
            n = n ? n : 1;
            q += n;
            rest -= n;
        }
        if (total > max_chars)
            max_chars = max_chars > 2 ? max_chars - 2 : 0;
        else
            max_chars = 0;
    }
    while (left > 0) {
        if (max_chars && chars == max_chars) {
            sonde_buf_puts(out, "..");
            return;
        }
        uint32_t cp = 0;
        size_t n = sonde__utf8_decode(p, left, &cp);
        if (n == 0 || cp == 0xfffe || cp == 0xffff) {
            sonde_buf_puts(out, "\xef\xbf\xbd");
            n = n ? n : 1;
        } else if (cp < 0x20 || cp == 0x7f) {
            sonde_buf_putc(out, ' ');
        } else {
            switch (cp) {
            case '&':
                sonde_buf_puts(out, "&amp;");
                break;
            case '<':
                sonde_buf_puts(out, "&lt;");
                break;
            case '>':
                sonde_buf_puts(out, "&gt;");
                break;
            case '"':
                sonde_buf_puts(out, "&quot;");
                break;
            case '\'':
                sonde_buf_puts(out, "&#39;");
                break;
            default:
                sonde_buf_append(out, p, n);
            }
        }
        p += n;
        left -= n;
        chars++;
    }
}

/* A warm colour from a function's name, the same wherever it appears. */
static void flame_color(const sonde_profile_t *prof, const sonde_tree_node_t *node,
                        sonde_buf_t *out)
{
    if (node->depth == 0) {
        sonde_buf_puts(out, "rgb(210,210,210)");
        return;
    }
    if (node->key & SONDE_TREE_THREAD) {
        sonde_buf_puts(out, "rgb(170,185,215)");
        return;
    }
    const sonde_stack_frame_t *frame = &prof->frames[node->key];
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = frame->func ? frame->func : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    h ^= h >> 31;
    unsigned r = 205 + (unsigned)(h % 51), g = (unsigned)((h >> 8) % 231),
             b = (unsigned)((h >> 16) % 56);
    sonde_buf_printf(out, "rgb(%u,%u,%u)", r, g, b);
}

static void flame_node(const sonde_profile_t *prof, const sonde_tree_t *tree,
                       const sonde_tree_node_t *node, double scale, int height, sonde_buf_t *label,
                       sonde_buf_t *out)
{
    double x = FLAME_XPAD + (double)node->start * scale;
    double w = (double)node->samples * scale;
    int y = height - FLAME_BOTTOM - (int)(node->depth + 1) * FLAME_FRAME_H;
    double share = 100.0 * (double)node->samples / (double)tree->nodes[0].samples;
    sonde_buf_reset(label);
    sonde__tree_label(prof, node, label);
    const char *text = label->data ? label->data : "";

    sonde_buf_printf(out, "<g class=\"f\" data-s=\"%llu\" data-l=\"",
                     (unsigned long long)node->samples);
    flame_xml(out, text, 0);
    sonde_buf_puts(out, "\"><title>");
    flame_xml(out, text, 0);
    sonde_buf_printf(out,
                     " (%llu sample%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
                     "height=\"%d\" fill=\"",
                     (unsigned long long)node->samples, node->samples == 1 ? "" : "s", share, x, y,
                     w, FLAME_FRAME_H - 1);
    flame_color(prof, node, out);
    sonde_buf_printf(out, "\" rx=\"2\" ry=\"2\"/><text x=\"%.1f\" y=\"%.1f\">", x + 3,
                     y + FLAME_FRAME_H / 2.0 + 3.5);
    double fit = (w - 6) / (FLAME_FONT * FLAME_CHAR_W);
    if (fit >= 3) flame_xml(out, text, (size_t)fit);
    sonde_buf_puts(out, "</text></g>\n");
}

/* The title: what was profiled. */
static void flame_title(const sonde_profile_t *prof, sonde_buf_t *title)
{
    sonde_buf_puts(title, "sonde: ");
    sonde_buf_puts(title, prof->program && prof->program[0] ? prof->program : "Python");
    for (int i = 1; i < prof->argc && i < 16; i++) {
        sonde_buf_putc(title, ' ');
        sonde_buf_puts(title, prof->argv[i] ? prof->argv[i] : "");
    }
}

int sonde_report_flamegraph(const sonde_profile_t *prof, sonde_buf_t *out)
{
    sonde_tree_t tree;
    sonde_buf_t label = SONDE_BUF_INIT, title = SONDE_BUF_INIT;
    int rc = sonde__tree_build(prof, &tree);
    if (rc < 0) return rc;
    uint64_t total = tree.nodes[0].samples;
    int levels = total ? (int)tree.max_depth + 1 : 1;
    int height = FLAME_TOP + levels * FLAME_FRAME_H + FLAME_BOTTOM;

    sonde_buf_printf(out,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                     "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
                     "<!-- Flame graph by sonde %s. Hover for counts, click to zoom, "
                     "Ctrl-F to search. -->\n",
                     FLAME_WIDTH, height, FLAME_WIDTH, height, SONDE_VERSION);
    sonde_buf_puts(out, "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" "
                        "x2=\"0\"><stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop "
                        "stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n");
    sonde_buf_printf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", flame_style);
    sonde_buf_printf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n",
                     flame_script);
    sonde_buf_printf(out,
                     "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
                     "fill=\"url(#background)\"/>\n",
                     FLAME_WIDTH, height);
    flame_title(prof, &title);
    sonde_buf_printf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", FLAME_WIDTH / 2);
    flame_xml(out, title.data ? title.data : "", 150);
    sonde_buf_printf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">%llu sample%s",
                     FLAME_WIDTH / 2, (unsigned long long)total, total == 1 ? "" : "s");
    if (prof->interval_sec > 0) sonde_buf_printf(out, " at %.0f Hz", 1.0 / prof->interval_sec);
    if (prof->elapsed_sec > 0) sonde_buf_printf(out, " over %.1f s", prof->elapsed_sec);
    if (prof->python_version) {
        sonde_buf_puts(out, ", Python ");
        flame_xml(out, prof->python_version, 32);
    }
    sonde_buf_puts(out, total ? "" : " (no samples: nothing to draw)");
    sonde_buf_printf(
        out,
        "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
        "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
        "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
        "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n<g id=\"frames\">\n",
        FLAME_XPAD, FLAME_WIDTH - FLAME_XPAD, FLAME_XPAD, height - 12, FLAME_WIDTH - FLAME_XPAD,
        height - 12);
    if (total) {
        double scale = (double)(FLAME_WIDTH - 2 * FLAME_XPAD) / (double)total;
        for (size_t n = 0; n < tree.n; n++)
            if ((double)tree.nodes[n].samples * scale >= FLAME_MIN_W)
                flame_node(prof, &tree, &tree.nodes[n], scale, height, &label, out);
    }
    sonde_buf_puts(out, "</g>\n</svg>\n");
    rc = sonde_buf_error(&label) ? sonde_buf_error(&label) : sonde_buf_error(&title);
    if (rc == 0) rc = sonde_buf_error(out);
    sonde_buf_free(&label);
    sonde_buf_free(&title);
    sonde__tree_free(&tree);
    return rc;
}
