/* test_fleet.c — unit tests of the pure parts of continuous profiles
 * (src/fleet/): the period files' names, writing, listing oldest first and
 * trimming to a count and a byte total (spool.c); Pyroscope's application
 * name with tags and the checks of header lines (upload.c). The network
 * side is tested end to end (tests/e2e/test_fleet.py).
 */
#include "fleet/fleet.h"

#include "check.h"

static void test_names(void)
{
    uint64_t from = 0, until = 0;
    bool ok =
        sonde_spool_parse_name("sonde-1700000000000-1700000060000.pb.gz", ".pb.gz", &from, &until);
    check(ok && from == 1700000000000ull && until == 1700000060000ull, "spool_name_parsed",
          "%d %llu %llu", ok, (unsigned long long)from, (unsigned long long)until);
    const char *bad[] = {
        "sonde-1700000000000-1700000060000.json",      "sonde-170000000000-1700000060000.pb.gz",
        "x-1700000000000-1700000060000.pb.gz",         "sonde-17000000000a0-1700000060000.pb.gz",
        "sonde-1700000000000-1700000060000.pb.gz.tmp", ".sonde-1700000000000-1700000060000.pb.gz"};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(bad); i++)
        check(!sonde_spool_parse_name(bad[i], ".pb.gz", &from, &until), "spool_name_rejected", "%s",
              bad[i]);
}

static void test_spool(void)
{
    char *dir = check_tempdir();
    char *sub = check_path(dir, "a/b/");
    sonde_spool_t s;
    sonde_spool_entry_t e;
    int rc = sonde_spool_init(&s, sub, ".json", 3, 25, 0700);
    check(rc == 0 && s.dir[strlen(s.dir) - 1] != '/', "spool_init_mkdirs", "rc %d dir %s", rc,
          s.dir);
    struct stat st;
    check(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700, "spool_init_mode", "%o",
          (unsigned)st.st_mode & 0777);
    check(sonde_spool_oldest(&s, &e) == 0, "spool_empty", "%s", "");
    /* written out of order: the oldest is the earliest span */
    sonde_spool_write(&s, 3000, 4000, "cccc", 4);
    sonde_spool_write(&s, 1000, 2000, "aaaa", 4);
    sonde_spool_write(&s, 2000, 3000, "bbbb", 4);
    char *other = check_path(sub, "notes.txt");
    check_write_file(other, "keep me", 7);
    rc = sonde_spool_oldest(&s, &e);
    check(rc == 1 && e.from_ms == 1000 && e.until_ms == 2000 && e.bytes == 4, "spool_oldest",
          "rc %d from %llu", rc, (unsigned long long)e.from_ms);
    sonde_buf_t body = SONDE_BUF_INIT;
    rc = sonde_spool_read(&s, &e, &body);
    check(rc == 0 && body.len == 4 && memcmp(body.data, "aaaa", 4) == 0, "spool_read", "rc %d", rc);
    /* a fourth file: over 3 files, the oldest goes, unless it is kept */
    sonde_spool_write(&s, 4000, 5000, "dddd", 4);
    rc = sonde_spool_trim(&s, e.name);
    sonde_spool_entry_t o;
    check(rc == 1 && sonde_spool_oldest(&s, &o) == 1 && o.from_ms == 1000, "spool_trim_keeps",
          "rc %d oldest %llu", rc, (unsigned long long)o.from_ms);
    unsigned files = 0;
    uint64_t bytes = 0;
    sonde_spool_count(&s, &files, &bytes);
    check(files == 3 && bytes == 12, "spool_count", "%u files %llu bytes", files,
          (unsigned long long)bytes);
    /* bytes: 25 allows six files of four bytes, files three */
    s.max_files = 0;
    for (uint64_t t = 5000; t < 10000; t += 1000)
        sonde_spool_write(&s, t, t + 1000, "eeee", 4);
    rc = sonde_spool_trim(&s, NULL);
    sonde_spool_count(&s, &files, &bytes);
    sonde_spool_oldest(&s, &o);
    check(rc == 2 && files == 6 && bytes == 24 && o.from_ms == 4000, "spool_trim_bytes",
          "rc %d files %u oldest %llu", rc, files, (unsigned long long)o.from_ms);
    check(access(other, F_OK) == 0, "spool_leaves_other_files", "%s", "");
    check(sonde_spool_remove(&s, &o) == 0 && sonde_spool_remove(&s, &o) == 0, "spool_remove_twice",
          "%s", "");
    sonde_buf_free(&body);
    free(other);
    free(sub);
    check_rm_rf(dir);
    free(dir);
}

static void test_app_name(void)
{
    sonde_buf_t b = SONDE_BUF_INIT;
    char err[256] = "";
    const char *tags[] = {"env=prod", "region=eu-1"};
    int rc = sonde_upload_app_name("shop.api", tags, 2, &b, err, sizeof err);
    check(rc == 0 && strcmp(b.data, "shop.api{env=prod,region=eu-1}") == 0, "app_name_tags",
          "rc %d %s", rc, b.data ? b.data : "");
    sonde_buf_reset(&b);
    rc = sonde_upload_app_name("svc", NULL, 0, &b, err, sizeof err);
    check(rc == 0 && strcmp(b.data, "svc") == 0, "app_name_bare", "%s", b.data ? b.data : "");
    const char *bad_tags[][1] = {{"novalue"}, {"=x"}, {"k=a,b"}, {"k-y=v"}, {"k={x}"}};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(bad_tags); i++) {
        sonde_buf_reset(&b);
        rc = sonde_upload_app_name("svc", bad_tags[i], 1, &b, err, sizeof err);
        check(rc == -EINVAL && strstr(err, "--tag"), "app_name_bad_tag", "%s: rc %d %s",
              bad_tags[i][0], rc, err);
    }
    rc = sonde_upload_app_name("a{b}", NULL, 0, &b, err, sizeof err);
    check(rc == -EINVAL && strstr(err, "--app-name"), "app_name_bad", "rc %d %s", rc, err);
    sonde_buf_free(&b);
}

static void test_headers(void)
{
    char err[256] = "";
    int n = sonde_upload_check_headers("# comment\r\nAuthorization: Bearer x\r\n\n  X-Scope-OrgID: "
                                       "t1  \n",
                                       err, sizeof err);
    check(n == 2, "headers_counted", "%d %s", n, err);
    check(sonde_upload_check_headers(NULL, err, sizeof err) == 0, "headers_none", "%s", "");
    n = sonde_upload_check_headers("Authorization Bearer x\n", err, sizeof err);
    check(n == -EINVAL && strstr(err, "not 'Name: value'"), "headers_no_colon", "%d %s", n, err);
    n = sonde_upload_check_headers("Bad Name: x\n", err, sizeof err);
    check(n == -EINVAL && strstr(err, "name with ' '"), "headers_bad_name", "%d %s", n, err);
    n = sonde_upload_check_headers("A: b\x01\n", err, sizeof err);
    check(n == -EINVAL && strstr(err, "control"), "headers_control", "%d %s", n, err);
}

int main(void)
{
    test_names();
    test_spool();
    test_app_name();
    test_headers();
    return check_exit_code();
}
