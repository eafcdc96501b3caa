/* test_atomic.c — unit tests of atomic file writing (src/core/file.c).
 *
 * Checks that sonde_write_file_atomic creates and replaces files whole,
 * with 0666 & ~umask, and that every failure — a missing directory, a path
 * that is a directory or a device, a write cut short by RLIMIT_FSIZE —
 * returns -errno and leaves no temporary file behind. Tests run as root, so
 * read-only directories cannot make writes fail here.
 */
#include "core/file.h"

#include "check.h"

#include <signal.h>
#include <sys/resource.h>

/* True when path holds exactly data. */
static bool file_is(const char *path, const char *data, size_t len)
{
    size_t got = 0;
    char *text = check_read_file(path, &got);
    bool same = text && got == len && memcmp(text, data, len) == 0;
    free(text);
    return same;
}

static void test_create_and_replace(const char *dir)
{
    char *path = check_path(dir, "report.json");
    int rc = sonde_write_file_atomic(path, "{\"a\": 1}\n", 9);
    check(rc == 0 && file_is(path, "{\"a\": 1}\n", 9), "atomic_creates_file", "rc %d", rc);
    check(check_count_entries(dir) == 1, "atomic_create_leaves_no_temp", "%d entries",
          check_count_entries(dir));

    /* A long file replaced by a short one: the result is the short one whole. */
    size_t big_len = 3 << 20;
    char *big = malloc(big_len);
    if (!big) exit(2);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + i % 26);
    rc = sonde_write_file_atomic(path, big, big_len);
    check(rc == 0 && file_is(path, big, big_len), "atomic_writes_large_file_whole", "rc %d", rc);
    rc = sonde_write_file_atomic(path, "short\n", 6);
    check(rc == 0 && file_is(path, "short\n", 6), "atomic_replaces_whole", "rc %d", rc);
    rc = sonde_write_file_atomic(path, NULL, 0);
    check(rc == 0 && file_is(path, "", 0), "atomic_empty_data", "rc %d", rc);
    check(check_count_entries(dir) == 1, "atomic_replace_leaves_no_temp", "%d entries",
          check_count_entries(dir));
    free(big);

    /* A reader holding the old file keeps the old contents (new inode). */
    rc = sonde_write_file_atomic(path, "old\n", 4);
    FILE *reader = fopen(path, "r");
    rc |= sonde_write_file_atomic(path, "new!\n", 5);
    char seen[16] = "";
    if (reader) {
        if (!fgets(seen, sizeof seen, reader)) seen[0] = 0;
        fclose(reader);
    }
    check(rc == 0 && strcmp(seen, "old\n") == 0 && file_is(path, "new!\n", 5),
          "atomic_reader_sees_old_or_new", "reader saw '%s'", seen);
    unlink(path);
    free(path);
}

static void test_mode(const char *dir)
{
    char *path = check_path(dir, "mode.txt");
    static const mode_t masks[] = {022, 077, 0};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(masks); i++) {
        mode_t old = umask(masks[i]);
        int rc = sonde_write_file_atomic(path, "x", 1);
        umask(old);
        struct stat st;
        mode_t want = 0666 & ~masks[i];
        bool ok = rc == 0 && stat(path, &st) == 0 && (st.st_mode & 07777) == want;
        char name[64];
        snprintf(name, sizeof name, "atomic_mode_umask_%03o", (unsigned)masks[i]);
        check(ok, name, "rc %d mode %03o want %03o", rc, (unsigned)(st.st_mode & 07777),
              (unsigned)want);
    }
    unlink(path);
    free(path);
}

static void test_errors(const char *dir)
{
    char *missing = check_path(dir, "no/such/dir/out.json");
    int rc = sonde_write_file_atomic(missing, "x", 1);
    check(rc == -ENOENT && check_count_entries(dir) == 0, "atomic_missing_dir_enoent",
          "rc %d, %d entries", rc, check_count_entries(dir));
    rc = sonde_check_writable(missing);
    check(rc == -ENOENT, "check_writable_missing_dir_enoent", "rc %d", rc);
    free(missing);

    char *sub = check_path(dir, "sub");
    if (mkdir(sub, 0755) != 0) exit(2);
    rc = sonde_write_file_atomic(sub, "x", 1);
    check(rc == -EISDIR && check_count_entries(dir) == 1 && check_count_entries(sub) == 0,
          "atomic_path_is_directory_eisdir", "rc %d, %d entries", rc, check_count_entries(dir));
    rc = sonde_check_writable(sub);
    check(rc == -EISDIR && check_count_entries(dir) == 1, "check_writable_directory_eisdir",
          "rc %d", rc);
    char *slash = check_path(sub, "");
    rc = sonde_write_file_atomic(slash, "x", 1);
    check(rc == -EISDIR && check_count_entries(sub) == 0, "atomic_trailing_slash_eisdir", "rc %d",
          rc);
    free(slash);

    rc = sonde_write_file_atomic("/dev/null", "x", 1);
    struct stat st;
    check(rc == -EINVAL && stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode),
          "atomic_refuses_device", "rc %d", rc);
    check(sonde_check_writable("/dev/null") == -EINVAL, "check_writable_refuses_device", "rc %d",
          sonde_check_writable("/dev/null"));
    check(sonde_write_file_atomic("", "x", 1) == -EINVAL, "atomic_empty_path_einval", "accepted");

    /* A file under a regular file: ENOTDIR. */
    char *file = check_path(dir, "plain");
    check_write_file(file, "p", 1);
    char *under = check_path(file, "x.json");
    rc = sonde_write_file_atomic(under, "x", 1);
    check(rc == -ENOTDIR && file_is(file, "p", 1), "atomic_parent_is_file_enotdir", "rc %d", rc);
    free(under);
    unlink(file);
    free(file);

    /* A write that fails half-way (file size limit): the old file stays and
     * no temporary file is left. */
    char *target = check_path(sub, "big.json");
    check_write_file(target, "previous", 8);
    struct rlimit old_limit, limit;
    getrlimit(RLIMIT_FSIZE, &old_limit);
    limit = old_limit;
    limit.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    static char data[65536];
    memset(data, 'z', sizeof data);
    if (setrlimit(RLIMIT_FSIZE, &limit) == 0) {
        rc = sonde_write_file_atomic(target, data, sizeof data);
        setrlimit(RLIMIT_FSIZE, &old_limit);
        check(rc == -EFBIG && file_is(target, "previous", 8) && check_count_entries(sub) == 1,
              "atomic_failed_write_leaves_old_file_and_no_temp", "rc %d, %d entries", rc,
              check_count_entries(sub));
    } else {
        check(false, "atomic_failed_write_leaves_old_file_and_no_temp", "setrlimit: %s",
              strerror(errno));
    }
    signal(SIGXFSZ, SIG_DFL);
    unlink(target);
    free(target);
    rmdir(sub);
    free(sub);
}

static void test_check_writable(const char *dir)
{
    char *path = check_path(dir, "later.json");
    int rc = sonde_check_writable(path);
    check(rc == 0 && check_count_entries(dir) == 0, "check_writable_ok_leaves_nothing",
          "rc %d, %d entries", rc, check_count_entries(dir));
    check_write_file(path, "keep", 4);
    rc = sonde_check_writable(path);
    check(rc == 0 && file_is(path, "keep", 4) && check_count_entries(dir) == 1,
          "check_writable_existing_file_untouched", "rc %d", rc);
    unlink(path);
    free(path);

    /* A relative path with no directory part means the current directory. */
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) && chdir(dir) == 0) {
        rc = sonde_check_writable("rel.json");
        int rc2 = sonde_write_file_atomic("rel.json", "r", 1);
        check(rc == 0 && rc2 == 0 && file_is("rel.json", "r", 1), "atomic_relative_path",
              "rc %d %d", rc, rc2);
        unlink("rel.json");
        if (chdir(cwd) != 0) exit(2);
    }
}

int main(void)
{
    char *dir = check_tempdir();
    test_create_and_replace(dir);
    test_mode(dir);
    test_errors(dir);
    test_check_writable(dir);
    check(check_count_entries(dir) == 0, "atomic_no_leftovers_at_end", "%d entries",
          check_count_entries(dir));
    check_rm_rf(dir);
    free(dir);
    return check_exit_code();
}
