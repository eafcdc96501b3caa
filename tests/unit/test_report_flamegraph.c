/* test_report_flamegraph.c — unit tests of the SVG flame graph writer
 * (src/report/flamegraph.c). Python's XML parser reads each document back
 * (so it must be well-formed whatever the names hold) and reports the
 * frames, which must carry the names unchanged as text (markup, "]]>",
 * quotes), with only what XML cannot hold replaced (bytes that are not
 * UTF-8 and U+FFFE by U+FFFD, control characters by spaces); no element
 * or event attribute may come from a name; the widths must add up. */
#include "report/report.h"

#include "check.h"
#include "hostile_stacks.h"

#include <stdio.h>
#include <string.h>

static const char reader_py[] =
    "import sys, xml.etree.ElementTree as ET\n"
    "NS = '{http://www.w3.org/2000/svg}'\n"
    "root = ET.parse(sys.argv[1]).getroot()\n"
    "allowed = {'svg','defs','linearGradient','stop','style','script','rect','text','g','title'}\n"
    "for el in root.iter():\n"
    "    tag = el.tag.replace(NS, '')\n"
    "    if tag not in allowed: sys.exit('element ' + tag)\n"
    "    for a in el.attrib:\n"
    "        if a.startswith('on') and not (tag == 'svg' and a == 'onload'): sys.exit('attr ' + "
    "a)\n"
    "scripts = root.findall(NS + 'script')\n"
    "if len(scripts) != 1 or 'function zoom' not in scripts[0].text: sys.exit('script')\n"
    "out = ['title ' + root.find(NS + \"text[@id='title']\").text.encode().hex()]\n"
    "for g in root.find(NS + \"g[@id='frames']\").findall(NS + 'g'):\n"
    "    rect = g.find(NS + 'rect')\n"
    "    label = g.get('data-l')\n"
    "    title = g.find(NS + 'title').text\n"
    "    if not title.startswith(label + ' ('): sys.exit('title ' + title)\n"
    "    shown = g.find(NS + 'text').text or ''\n"
    "    if shown and not (label.startswith(shown) or label.startswith(shown[:-2])):\n"
    "        sys.exit('shown ' + shown)\n"
    "    out.append('%s %s %s %s' % (label.encode().hex(), g.get('data-s'), rect.get('x'),\n"
    "                                rect.get('width')))\n"
    "print('\\n'.join(out))\n";

static char *tmp_dir;

/* The reader's output for the SVG of prof, or NULL (with why). */
static char *read_back(const sonde_profile_t *prof, char **svg_out)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_flamegraph(prof, &out);
    if (rc != 0 || !out.data) {
        sonde_buf_free(&out);
        return NULL;
    }
    char *result = hostile_run_python(tmp_dir, reader_py, out.data, out.len);
    if (svg_out)
        *svg_out = out.data;
    else
        sonde_buf_free(&out);
    return result;
}

/* Hex of s. */
static void hex(const char *s, char *buf, size_t len)
{
    size_t at = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && at + 3 < len; p++)
        at += (size_t)snprintf(buf + at, len - at, "%02x", *p);
    buf[at] = 0;
}

/* The samples of the frame labelled label, or -1 when absent. */
static long samples_of(const char *result, const char *label)
{
    static char want[40000];
    hex(label, want, sizeof want - 2);
    strcat(want, " ");
    size_t n = strlen(want);
    for (const char *p = result; p && *p;) {
        if (strncmp(p, want, n) == 0) return strtol(p + n, NULL, 10);
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

int main(void)
{
    tmp_dir = check_tempdir();

    sonde_profile_t empty;
    sonde_profile_init(&empty);
    char *svg = NULL;
    char *result = read_back(&empty, &svg);
    check(result != NULL, "empty_profile_valid_svg", "rejected");
    check(svg && strstr(svg, "no samples"), "empty_profile_says_so", "%s", svg ? svg : "");
    free(result);
    free(svg);
    sonde_profile_free(&empty);

    for (int per_thread = 0; per_thread < 2; per_thread++) {
        sonde_profile_t prof;
        sonde_profile_init(&prof);
        hostile_profile(&prof, per_thread);
        svg = NULL;
        result = read_back(&prof, &svg);
        const char *name = per_thread ? "threads_parse_as_xml" : "hostile_parse_as_xml";
        check(result != NULL, name, "the XML parser or a check rejected it");
        if (!result) {
            free(svg);
            sonde_profile_free(&prof);
            continue;
        }
        check(samples_of(result, "all") == HOSTILE_TOTAL_SAMPLES, "root_holds_every_sample", "%s",
              result);
        check(samples_of(result, HOSTILE_MARKUP_FUNC " (" HOSTILE_MARKUP_FILE ":12)") == 15,
              "markup_round_trips", "%s", result);
        check(samples_of(result, "semi;colon new line  (" HOSTILE_SEMI_FILE ")") == 5,
              "controls_become_spaces", "%s", result);
        check(samples_of(result, "bad\xef\xbf\xbd\xef\xbf\xbdutf8 (" HOSTILE_UNICODE_FILE ":7)") ==
                  3,
              "invalid_utf8_replaced", "%s", result);
        check(samples_of(result, HOSTILE_CDATA_FUNC " (/app/x.py:3)") == 2, "cdata_end_as_text",
              "%s", result);
        check(samples_of(result, "\xef\xbf\xbd nonchar (/app/y.py:4)") == 1,
              "noncharacter_replaced", "%s", result);
        if (per_thread) {
            check(samples_of(result, HOSTILE_THREAD) == 5 && samples_of(result, "MainThread") == 16,
                  "thread_roots", "%s", result);
        }
        /* the long name: present, and its box's text cut to fit */
        check(svg && strstr(svg, "xxxxxxxxxx..</text>") != NULL, "long_label_cut", "no cut label");
        check(svg && !strstr(svg, "<img") && !strstr(svg, "<script>alert"), "no_markup_from_names",
              "raw markup in the SVG");
        char title_hex[256];
        hex("sonde: app.py --flag <b>&", title_hex, sizeof title_hex);
        check(strncmp(result, "title ", 6) == 0 &&
                  strncmp(result + 6, title_hex, strlen(title_hex)) == 0,
              "title_names_the_program", "%s", result);
        free(result);
        free(svg);
        sonde_profile_free(&prof);
    }

    /* Out of memory: an error, never a crash. */
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    hostile_profile(&prof, false);
    sonde_buf_t out = {NULL, 0, 0, -ENOMEM};
    check(sonde_report_flamegraph(&prof, &out) == -ENOMEM, "sticky_buffer_error", "not reported");
    sonde_profile_free(&prof);

    check_rm_rf(tmp_dir);
    free(tmp_dir);
    return check_exit_code();
}
