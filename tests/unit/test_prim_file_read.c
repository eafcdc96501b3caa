/* test_prim_file_read.c — sonde_buf_read_file (src/prim/file.h), the one bounded
 * reader behind source text, viewer files and `sonde view`'s input.
 *
 * Whole files, files at and past the cap (cut or refused), an empty file,
 * appending after earlier contents, and the paths that must fail without
 * blocking: a directory, a FIFO with no writer, a missing file.
 */
#include "prim/file.h"

#include "check.h"

#include <sys/stat.h>

static void test_regular(const char *dir)
{
    char *path = check_path(dir, "f.txt");
    check_write_file(path, "hello\nworld\n", 12);
    sonde_buf_t b = SONDE_BUF_INIT;
    bool cut = true;
    int rc = sonde_buf_read_file(&b, path, 100, &cut);
    check(rc == 0 && b.len == 12 && memcmp(b.data, "hello\nworld\n", 12) == 0 && !cut &&
              b.data[12] == 0,
          "read_whole", "rc %d len %zu", rc, b.len);

    sonde_buf_reset(&b);
    rc = sonde_buf_read_file(&b, path, 12, &cut);
    check(rc == 0 && b.len == 12 && !cut, "read_exactly_at_cap", "rc %d len %zu cut %d", rc, b.len,
          cut);

    sonde_buf_reset(&b);
    rc = sonde_buf_read_file(&b, path, 5, &cut);
    check(rc == 0 && b.len == 5 && cut && strcmp(b.data, "hello") == 0, "read_cut_at_cap",
          "rc %d len %zu cut %d", rc, b.len, cut);

    sonde_buf_reset(&b);
    rc = sonde_buf_read_file(&b, path, 5, NULL);
    check(rc == -EFBIG, "read_too_large_refused", "rc %d", rc);

    sonde_buf_reset(&b);
    sonde_buf_puts(&b, "head:");
    rc = sonde_buf_read_file(&b, path, 100, NULL);
    check(rc == 0 && b.len == 17 && strncmp(b.data, "head:hello", 10) == 0, "read_appends",
          "rc %d len %zu", rc, b.len);

    char *empty = check_path(dir, "empty");
    check_write_file(empty, "", 0);
    sonde_buf_t e = SONDE_BUF_INIT;
    rc = sonde_buf_read_file(&e, empty, 100, &cut);
    check(rc == 0 && e.len == 0 && !cut, "read_empty_file", "rc %d len %zu", rc, e.len);
    sonde_buf_free(&e);
    sonde_buf_free(&b);
    unlink(path);
    unlink(empty);
    free(path);
    free(empty);
}

static void test_refused(const char *dir)
{
    sonde_buf_t b = SONDE_BUF_INIT;
    int rc = sonde_buf_read_file(&b, dir, 100, NULL);
    check(rc == -EISDIR, "read_directory", "rc %d", rc);

    char *fifo = check_path(dir, "fifo");
    check(mkfifo(fifo, 0600) == 0, "fifo_made", "errno %d", errno);
    rc = sonde_buf_read_file(&b, fifo, 100, NULL); /* must not block */
    check(rc == -EINVAL, "read_fifo_refused", "rc %d", rc);
    unlink(fifo);
    free(fifo);

    char *missing = check_path(dir, "missing");
    rc = sonde_buf_read_file(&b, missing, 100, NULL);
    check(rc == -ENOENT, "read_missing", "rc %d", rc);
    free(missing);
    sonde_buf_free(&b);
}

int main(void)
{
    char *dir = check_tempdir();
    test_regular(dir);
    test_refused(dir);
    check_rm_rf(dir);
    free(dir);
    return check_exit_code();
}
