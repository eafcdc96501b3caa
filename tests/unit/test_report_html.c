/* test_report_html.c — unit tests of the HTML report (src/report/html.c,
 * html_csp.c).
 *
 * Checks SHA-256 against the FIPS 180-4 examples and block-boundary
 * lengths (Python's hashlib as the reference), then builds pages with a
 * viewer directory made here: the JSON must sit in its data element with
 * no raw '<', '>' or '&' (even when the JSON text given has them), every
 * viewer script must be inlined and listed by hash in the
 * Content-Security-Policy, line endings normalised, and a viewer that
 * could end its element early, a missing viewer or one without scripts
 * must be refused, leaving the output as it was.
 *
 * Run with "--write DIR VIEWER_DIR" it instead writes one profile's
 * terminal report (parity.txt, and parity_all.txt with every line), JSON
 * (parity.json) and HTML (parity.html, with the real viewer) into DIR, for
 * tests/e2e/test_html.py to compare in a browser: one model, both reports.
 */
#include "report/html_internal.h"

#include "check.h"

#include <limits.h>
#include <sys/wait.h>

#define MS 1000000ull

/* ---- SHA-256 ------------------------------------------------------------ */

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha256(const char *dir)
{
    static const struct {
        const char *msg, *want;
    } vectors[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(vectors); i++) {
        uint8_t d[SONDE__SHA256_LEN];
        char got[2 * SONDE__SHA256_LEN + 1];
        sonde__sha256(vectors[i].msg, strlen(vectors[i].msg), d);
        hex(d, sizeof d, got);
        check(strcmp(got, vectors[i].want) == 0, "sha256_fips_vector", "%zu: %s", i, got);
    }
    sonde_buf_t b = SONDE_BUF_INIT;
    sonde__csp_hash_source(&b, "abc", 3);
    check(b.data && strcmp(b.data, "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='") == 0,
          "csp_hash_source_base64", "%s", b.data);
    sonde_buf_free(&b);

    /* Lengths around the 55/56/64-byte padding boundaries, against hashlib. */
    char data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)('a' + (i * 7) % 26);
    char *script = check_path(dir, "sha.py");
    char *out = check_path(dir, "sha.txt");
    static const char py[] = "import hashlib\n"
                             "d = bytes((ord('a') + (i * 7) % 26) for i in range(300))\n"
                             "for n in range(0, 300):\n"
                             "    print(hashlib.sha256(d[:n]).hexdigest())\n";
    check_write_file(script, py, sizeof py - 1);
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "'%s' '%s' > '%s'", check_python(), script, out);
    char *want = system(cmd) == 0 ? check_read_file(out, NULL) : NULL;
    bool ok = want != NULL;
    size_t bad = 0;
    for (size_t n = 0; ok && n < 300; n++) {
        uint8_t d[SONDE__SHA256_LEN];
        char got[2 * SONDE__SHA256_LEN + 1];
        sonde__sha256(data, n, d);
        hex(d, sizeof d, got);
        if (strncmp(want + n * 65, got, 64) != 0) {
            ok = false;
            bad = n;
        }
    }
    check(ok, "sha256_every_length_to_300", "differs at length %zu", bad);
    free(want);
    free(out);
    free(script);
}

/* ---- pages -------------------------------------------------------------- */

static char *make_viewer(const char *dir, const char *name, const char *js, const char *css)
{
    char *vdir = check_path(dir, name);
    mkdir(vdir, 0755);
    if (js) {
        char *p = check_path(vdir, "b.js");
        check_write_file(p, js, strlen(js));
        free(p);
        p = check_path(vdir, "a.js");
        const char *crlf = "var first = 1;\r\nvar crlf = 2;\r";
        check_write_file(p, crlf, strlen(crlf));
        free(p);
    }
    if (css) {
        char *p = check_path(vdir, "s.css");
        check_write_file(p, css, strlen(css));
        free(p);
    }
    char *p = check_path(vdir, "README");
    check_write_file(p, "not inlined", 11);
    free(p);
    return vdir;
}

/* The text between the first `open` and the next `close` after it, owned. */
static char *between(const char *text, const char *open, const char *close)
{
    const char *a = text ? strstr(text, open) : NULL;
    if (!a) return NULL;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b) return NULL;
    return strndup(a, (size_t)(b - a));
}

static void test_page(const char *dir)
{
    char *viewer = make_viewer(dir, "viewer", "console.log('b');\n", "body { color: red; }\n");
    const char json[] = "{\"files\": {\"</script><script>alert(1)</script>\": {}}, "
                        "\"x\": \"<!-- & -->\"}";
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_html_page(json, sizeof json - 1, viewer, &out);
    check(rc == 0 && out.data, "html_page_built", "rc %d", rc);
    const char *page = out.data ? out.data : "";

    char *data =
        between(page, "<script type=\"application/json\" id=\"sonde-profile\">", "</script>");
    check(data && !strchr(data, '<') && !strchr(data, '>') && !strchr(data, '&'),
          "html_json_has_no_raw_markup", "%s", data ? data : "(no data element)");
    check(data && strstr(data, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)") &&
              strstr(data, "\\u003c!-- \\u0026 --\\u003e"),
          "html_json_escaped_as_json", "%s", data ? data : "");
    check(check_count(page, "<script>") == 2 &&
              strstr(page, "<script>console.log('b');\n</script>"),
          "html_every_script_inlined", "%d scripts", check_count(page, "<script>"));
    const char *first = strstr(page, "var first");
    const char *second = strstr(page, "console.log");
    check(first && second && first < second, "html_scripts_in_name_order", "order wrong");
    check(strstr(page, "var first = 1;\nvar crlf = 2;\n</script>") != NULL,
          "html_line_endings_normalised", "CR kept");
    check(strstr(page, "<style>body { color: red; }\n</style>") != NULL, "html_css_inlined",
          "no style");
    check(!strstr(page, "not inlined"), "html_other_files_ignored", "README inlined");

    /* The policy allows exactly these scripts, by hash, and no network. */
    char *csp = between(page, "Content-Security-Policy\" content=\"", "\"");
    sonde_buf_t h1 = SONDE_BUF_INIT, h2 = SONDE_BUF_INIT;
    sonde__csp_hash_source(&h1, "var first = 1;\nvar crlf = 2;\n", 29);
    sonde__csp_hash_source(&h2, "console.log('b');\n", 18);
    check(csp && strstr(csp, "default-src 'none'") && strstr(csp, h1.data) &&
              strstr(csp, h2.data) && !strstr(csp, "script-src 'unsafe-inline'") &&
              !strstr(csp, "http"),
          "html_csp_hashes_scripts", "%s", csp ? csp : "(none)");
    free(csp);
    sonde_buf_free(&h1);
    sonde_buf_free(&h2);
    free(data);

    /* Errors leave the output as it was. */
    size_t before = out.len;
    char *bad = make_viewer(dir, "bad", "var s = '</SCRIPT>';\n", NULL);
    check(sonde_report_html_page(json, sizeof json - 1, bad, &out) == -EINVAL && out.len == before,
          "html_viewer_closing_script_refused", "accepted");
    char *bad_css = make_viewer(dir, "badcss", "1;\n", "a { } </style><script>\n");
    check(sonde_report_html_page(json, sizeof json - 1, bad_css, &out) == -EINVAL &&
              out.len == before,
          "html_viewer_closing_style_refused", "accepted");
    char *comment = make_viewer(dir, "comment", "x = '<!--';\n", NULL);
    check(sonde_report_html_page(json, sizeof json - 1, comment, &out) == -EINVAL,
          "html_viewer_comment_open_refused", "accepted");
    char *no_js = make_viewer(dir, "nojs", NULL, "a {}\n");
    check(sonde_report_html_page(json, sizeof json - 1, no_js, &out) == -ENOENT &&
              out.len == before,
          "html_viewer_without_script_refused", "accepted");
    char *missing = check_path(dir, "missing");
    check(sonde_report_html_page(json, sizeof json - 1, missing, &out) == -ENOENT,
          "html_viewer_missing", "accepted");

    sonde_buf_free(&out);
    free(missing);
    free(no_js);
    free(comment);
    free(bad_css);
    free(bad);
    free(viewer);
}

/* ---- the parity profile --------------------------------------------------- */

static const char parity_py[] = "import time\n"                               /* 1 */
                                "\n"                                          /* 2 */
                                "def spin(n):\n"                              /* 3 */
                                "    total = 0\n"                             /* 4 */
                                "    for i in range(n):\n"                    /* 5 */
                                "        total += i * i  # hot Python line\n" /* 6 */
                                "    return total\n"                          /* 7 */
                                "\n"                                          /* 8 */
                                "def native(values):\n"                       /* 9 */
                                "    return sorted(values)  # native\n"       /* 10 */
                                "\n"                                          /* 11 */
                                "def wait():\n"                               /* 12 */
                                "    time.sleep(0.2)  # system\n"             /* 13 */
                                "\n"                                          /* 14 */
                                "s = '</script><script>alert(1)</script>'\n"  /* 15 */
                                "t = '<img src=x onerror=alert(2)>'\n"        /* 16 */
                                "spin(10)\n"                                  /* 17 */
                                "native([3, 2, 1])\n"                         /* 18 */
                                "wait()\n"                                    /* 19 */
                                "print('tiny')  # below the threshold\n"      /* 20 */
                                "print('tinier')  # under 0.05 %\n"           /* 21 */
                                "x = 1\n"                                     /* 22 */
                                "y = 2\n"                                     /* 23 */
                                "z = 3  # far from hot lines\n";              /* 24 */

/* Figures chosen away from rounding ties at one decimal. */
static int build_parity(sonde_profile_t *prof, char *app, const char *lib)
{
    const char *argv[] = {app, "--n", "it's"};
    sonde_profile_init(prof);
    int rc = sonde_profile_set_run(prof, "parity.py", 3, argv, "3.11.7");
    prof->elapsed_sec = 2.345678;
    prof->interval_sec = 0.01;
    prof->samples = 211;
    prof->unattributed_ns = 13 * MS;
    rc |= sonde_profile_add(prof, app, "spin", 3, 5, 123 * MS, 0, 0, 12);
    rc |= sonde_profile_add(prof, app, "spin", 3, 6, 611 * MS, 17 * MS, 0, 63);
    rc |= sonde_profile_add(prof, app, "native", 9, 10, 9 * MS, 733 * MS, 0, 74);
    rc |= sonde_profile_add(prof, app, "wait", 12, 13, 0, 3 * MS, 377 * MS, 38);
    rc |= sonde_profile_add(prof, app, NULL, 1, 17, 31 * MS, 0, 0, 3);
    rc |= sonde_profile_add(prof, app, NULL, 1, 20, 17 * MS, 0, 0, 2);
    rc |= sonde_profile_add(prof, app, NULL, 1, 21, MS / 2, 0, 0, 1);
    rc |= sonde_profile_add(prof, lib, "helper", 1, 2, 4 * MS, 0, 0, 1);
    sonde_stack_frame_t a[] = {{"<module>", app, 17}, {"spin", app, 6}};
    sonde_stack_frame_t b[] = {{"<module>", app, 18}, {"native", app, 10}};
    sonde_stack_frame_t c[] = {{"<module>", app, 19}, {"wait", app, 13}};
    int t = sonde_profile_thread(prof, "MainThread");
    rc |= t < 0;
    rc |= sonde_profile_add_stack(prof, a, 2, t, 75, 751 * MS);
    rc |= sonde_profile_add_stack(prof, b, 2, t, 74, 742 * MS);
    rc |= sonde_profile_add_stack(prof, c, 2, t, 38, 380 * MS);
    rc |= sonde_profile_finish(prof);
    return rc;
}

static int write_parity(const char *out_dir, const char *viewer_dir)
{
    char *app = check_path(out_dir, "parity.py");
    char *lib = check_path(out_dir, "parity_lib.py");
    check_write_file(app, parity_py, sizeof parity_py - 1);
    check_write_file(lib, "def helper():\n    pass\n", 23);
    sonde_profile_t prof;
    int rc = build_parity(&prof, app, lib);
    static const struct {
        const char *name;
        int kind; /* 0 text, 1 all-lines text, 2 JSON, 3 HTML */
    } outs[] = {{"parity.txt", 0}, {"parity_all.txt", 1}, {"parity.json", 2}, {"parity.html", 3}};
    for (size_t i = 0; rc == 0 && i < SONDE_ARRAY_LEN(outs); i++) {
        sonde_buf_t out = SONDE_BUF_INIT;
        sonde_text_opts_t opts;
        sonde_text_opts_default(&opts);
        opts.width = 250;
        opts.all_lines = outs[i].kind == 1;
        if (outs[i].kind <= 1)
            rc = sonde_report_text(&prof, &opts, &out);
        else if (outs[i].kind == 2)
            rc = sonde_report_json(&prof, &out);
        else
            rc = sonde_report_html(&prof, viewer_dir, &out);
        if (rc == 0) {
            char *path = check_path(out_dir, outs[i].name);
            rc = sonde_write_file_atomic(path, out.data, out.len);
            free(path);
        }
        sonde_buf_free(&out);
    }
    sonde_profile_free(&prof);
    free(lib);
    free(app);
    if (rc)
        fprintf(stderr, "test_report_html: cannot write the parity reports: %s\n", strerror(-rc));
    return rc ? 1 : 0;
}

static void test_profile_page(const char *dir)
{
    char *viewer = make_viewer(dir, "viewer2", "1;\n", NULL);
    char *app = check_path(dir, "parity.py");
    char *lib = check_path(dir, "parity_lib.py");
    check_write_file(app, parity_py, sizeof parity_py - 1);
    check_write_file(lib, "def helper():\n    pass\n", 23);
    sonde_profile_t prof;
    check(build_parity(&prof, app, lib) == 0, "html_parity_profile_built", "failed");
    sonde_buf_t page = SONDE_BUF_INIT, json = SONDE_BUF_INIT;
    int rc = sonde_report_html(&prof, viewer, &page);
    sonde_report_json(&prof, &json);
    char *data = between(page.data, "id=\"sonde-profile\">", "</script>");
    check(rc == 0 && data && json.data && strcmp(data, json.data) == 0,
          "html_embeds_the_json_report", "rc %d", rc);
    check(data && strstr(data, "\"call_stacks\"") && strstr(data, "\"source\""),
          "html_json_has_stacks_and_source", "missing");
    free(data);
    sonde_buf_free(&json);
    sonde_buf_free(&page);
    sonde_profile_free(&prof);
    free(lib);
    free(app);
    free(viewer);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--write") == 0) return write_parity(argv[2], argv[3]);
    char *dir = check_tempdir();
    test_sha256(dir);
    test_page(dir);
    test_profile_page(dir);
    check_rm_rf(dir);
    free(dir);
    return check_exit_code();
}
