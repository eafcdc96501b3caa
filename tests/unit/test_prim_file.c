/* test_prim_file.c — unit tests of file writing (src/prim/file.c).
 *
 * Checks that sonde_write_file_atomic creates and replaces files whole,
 * with 0666 & ~umask for a new file and the old bits for a replaced one,
 * that every failure — a missing directory, a path that is a directory or
 * a device, a write cut short by RLIMIT_FSIZE — returns -errno and leaves
 * no temporary file behind; that symbolic links are followed (the link
 * stays, its target is written, in the target's directory); that
 * sonde_write_output writes into a descriptor named through /proc at its
 * offset and never replaces a device; and that a temporary file a killed
 * writer left (".NAME.sonde-tmp.PID.XXXXXX") is removed by the next write
 * of the same destination, and nothing else is. Tests run as root, so
 * read-only directories cannot make writes fail here.
 */
#include "prim/file.h"

#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

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
        unlink(path);
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
    /* A file that is replaced keeps its permission bits, whatever the umask. */
    if (chmod(path, 0600) != 0) exit(2);
    int rc = sonde_write_file_atomic(path, "y", 1);
    struct stat st;
    check(rc == 0 && stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
          "atomic_replace_keeps_mode", "rc %d mode %03o", rc, (unsigned)(st.st_mode & 0777));
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

/* The entry of dir whose name starts with prefix, or "" (owned by the
 * caller). */
static char *find_entry(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    char *found = NULL;
    struct dirent *e;
    while (d && !found && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) found = strdup(e->d_name);
    if (d) closedir(d);
    return found ? found : strdup("");
}

/* Whether path is a symbolic link whose text is target. */
static bool link_is(const char *path, const char *target)
{
    char text[4096];
    ssize_t n = readlink(path, text, sizeof text - 1);
    if (n < 0) return false;
    text[n] = 0;
    return strcmp(text, target) == 0;
}

static void test_links(const char *dir)
{
    char *other = check_path(dir, "other");
    if (mkdir(other, 0755) != 0) exit(2);
    char *target = check_path(other, "real.json");
    check_write_file(target, "old", 3);
    char *link = check_path(dir, "link.json");
    if (symlink(target, link) != 0) exit(2);

    /* The link stays; the file it names gets the data, written beside it. */
    int rc = sonde_write_file_atomic(link, "new", 3);
    check(rc == 0 && link_is(link, target) && file_is(target, "new", 3), "atomic_symlink_followed",
          "rc %d", rc);
    check(check_count_entries(other) == 1 && check_count_entries(dir) == 2,
          "atomic_symlink_no_temp_left", "%d and %d entries", check_count_entries(other),
          check_count_entries(dir));
    rc = sonde_write_output(link, "out", 3);
    check(rc == 0 && link_is(link, target) && file_is(target, "out", 3), "output_symlink_followed",
          "rc %d", rc);

    /* A relative chain: link2 -> link.json -> other/real.json. */
    char *link2 = check_path(dir, "link2.json");
    if (symlink("link.json", link2) != 0) exit(2);
    rc = sonde_write_output(link2, "chain", 5);
    check(rc == 0 && link_is(link2, "link.json") && link_is(link, target) &&
              file_is(target, "chain", 5),
          "output_relative_link_chain", "rc %d", rc);
    /* A relative link inside another directory is relative to that one. */
    char *inner = check_path(other, "inner.json");
    if (symlink("real.json", inner) != 0) exit(2);
    rc = sonde_write_output(inner, "inner", 5);
    check(rc == 0 && link_is(inner, "real.json") && file_is(target, "inner", 5),
          "output_relative_link_in_other_dir", "rc %d", rc);

    /* A dangling link: its target is created, as the shell's '>' would. */
    char *dangling = check_path(dir, "dangling.json");
    char *created = check_path(other, "created.json");
    if (symlink(created, dangling) != 0) exit(2);
    rc = sonde_write_output(dangling, "c", 1);
    check(rc == 0 && link_is(dangling, created) && file_is(created, "c", 1),
          "output_dangling_link_creates_target", "rc %d", rc);

    /* A link to a directory, a loop, a link into a missing directory. */
    char *to_dir = check_path(dir, "to_dir");
    if (symlink(other, to_dir) != 0) exit(2);
    rc = sonde_write_output(to_dir, "x", 1);
    check(rc == -EISDIR && link_is(to_dir, other), "output_link_to_dir_eisdir", "rc %d", rc);
    char *loop_a = check_path(dir, "loop_a"), *loop_b = check_path(dir, "loop_b");
    if (symlink("loop_b", loop_a) != 0 || symlink("loop_a", loop_b) != 0) exit(2);
    rc = sonde_write_output(loop_a, "x", 1);
    check(rc == -ELOOP && link_is(loop_a, "loop_b"), "output_link_loop_eloop", "rc %d", rc);
    check(sonde_check_output(loop_a) == -ELOOP, "check_output_link_loop_eloop", "accepted");
    char *nowhere = check_path(dir, "nowhere");
    if (symlink("no/such/dir/x.json", nowhere) != 0) exit(2);
    rc = sonde_write_output(nowhere, "x", 1);
    check(rc == -ENOENT && link_is(nowhere, "no/such/dir/x.json"), "output_link_missing_dir",
          "rc %d", rc);
    check(sonde_check_output(link) == 0 && file_is(target, "inner", 5), "check_output_through_link",
          "changed");

    char *paths[] = {link,   link2,  inner,  dangling, created,
                     to_dir, loop_a, loop_b, nowhere,  target};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(paths); i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    rmdir(other);
    free(other);
}

static void test_descriptors(const char *dir)
{
    /* A regular file open on a descriptor: written at its offset, after what
     * is there, never replaced (same inode). */
    char *path = check_path(dir, "stdout.txt");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "program\n", 8) != 8) exit(2);
    struct stat before, after;
    fstat(fd, &before);
    char name[64], link_text[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    check(sonde_check_output(name) == 0, "check_output_own_fd", "refused");
    int rc = sonde_write_output(name, "report\n", 7);
    stat(path, &after);
    check(rc == 0 && file_is(path, "program\nreport\n", 15) && before.st_ino == after.st_ino,
          "output_own_fd_at_offset", "rc %d", rc);
    snprintf(name, sizeof name, "/dev/fd/%d", fd);
    rc = sonde_write_output(name, "more\n", 5);
    check(rc == 0 && file_is(path, "program\nreport\nmore\n", 20), "output_dev_fd", "rc %d", rc);
    /* A link to it in an ordinary directory: the link stays. */
    char *link = check_path(dir, "to_fd");
    snprintf(link_text, sizeof link_text, "/proc/self/fd/%d", fd);
    if (symlink(link_text, link) != 0) exit(2);
    rc = sonde_write_output(link, "end\n", 4);
    check(rc == 0 && link_is(link, link_text) && file_is(path, "program\nreport\nmore\nend\n", 24),
          "output_link_to_own_fd", "rc %d", rc);
    check(sonde_write_file_atomic(link, "x", 1) == -EINVAL && link_is(link, link_text),
          "atomic_refuses_own_fd", "accepted");
    close(fd);
    /* Closed, or open for reading only: -EBADF, nothing created. */
    rc = sonde_write_output(link_text, "x", 1);
    check(rc == -EBADF, "output_closed_fd_ebadf", "rc %d", rc);
    check(sonde_check_output(link_text) == -EBADF, "check_output_closed_fd_ebadf", "accepted");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    check(sonde_write_output(name, "x", 1) == -EBADF && sonde_check_output(name) == -EBADF,
          "output_read_only_fd_ebadf", "accepted");
    close(fd);
    check(file_is(path, "program\nreport\nmore\nend\n", 24), "output_fd_errors_leave_file",
          "changed");

    /* A pipe (no path to follow): written into it. */
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) exit(2);
    snprintf(name, sizeof name, "/proc/self/fd/%d", pipe_fds[1]);
    rc = sonde_write_output(name, "piped", 5);
    char got[16] = "";
    ssize_t n = read(pipe_fds[0], got, sizeof got - 1);
    check(rc == 0 && n == 5 && memcmp(got, "piped", 5) == 0, "output_own_fd_pipe", "rc %d n %zd",
          rc, n);
    close(pipe_fds[0]);
    close(pipe_fds[1]);

    /* A socket's name: refused up front, never replaced. */
    char *sock_path = check_path(dir, "sock");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0 || bind(sock, (struct sockaddr *)&addr, sizeof addr) != 0) exit(2);
    rc = sonde_write_output(sock_path, "x", 1);
    struct stat sock_st;
    check(sonde_check_output(sock_path) == -ENXIO && rc == -ENXIO &&
              lstat(sock_path, &sock_st) == 0 && S_ISSOCK(sock_st.st_mode),
          "output_socket_name_enxio", "rc %d", rc);
    close(sock);
    unlink(sock_path);
    free(sock_path);

    /* A device: written, never replaced. */
    struct stat st;
    rc = sonde_write_output("/dev/null", "x", 1);
    check(rc == 0 && stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "output_dev_null", "rc %d",
          rc);
    unlink(link);
    free(link);
    unlink(path);
    free(path);
}

/* The pid of a process that has ended (and been reaped). */
static pid_t dead_pid(void)
{
    pid_t child = fork();
    if (child == 0) _exit(0);
    if (child < 0 || waitpid(child, NULL, 0) != child) exit(2);
    return child;
}

static void test_stale_temps(const char *dir)
{
    char *dest = check_path(dir, "out.json");
    char name[256];
    struct {
        const char *what;
        long pid; /* 0: the dead one */
        const char *suffix;
        bool stale;
    } cases[] = {
        {"dead writer", 0, "abc123", true},
        {"live writer (parent)", (long)getppid(), "abc123", false},
        {"not six random characters", 0, "abc12", false},
        {"no pid", -1, "abc123", false},
    };
    pid_t dead = dead_pid();
    for (size_t i = 0; i < SONDE_ARRAY_LEN(cases); i++) {
        if (cases[i].pid == -1)
            snprintf(name, sizeof name, "%s/.out.json.sonde-tmp.x.%s", dir, cases[i].suffix);
        else
            snprintf(name, sizeof name, "%s/.out.json.sonde-tmp.%ld.%s", dir,
                     cases[i].pid ? cases[i].pid : (long)dead, cases[i].suffix);
        check_write_file(name, "partial", 7);
    }
    /* Another destination's leftover, and one locked by a writer of this
     * process (held open under this pid). */
    snprintf(name, sizeof name, "%s/.other.json.sonde-tmp.%ld.abc123", dir, (long)dead);
    check_write_file(name, "other", 5);
    snprintf(name, sizeof name, "%s/.out.json.sonde-tmp.%ld.locked", dir, (long)getpid());
    check_write_file(name, "locked", 6);
    int locked = open(name, O_RDONLY | O_CLOEXEC);
    if (locked < 0 || flock(locked, LOCK_EX) != 0) exit(2);

    int rc = sonde_write_file_atomic(dest, "{}", 2);
    snprintf(name, sizeof name, "%s/.out.json.sonde-tmp.%ld.abc123", dir, (long)dead);
    check(rc == 0 && access(name, F_OK) != 0, "stale_temp_of_dead_writer_removed", "rc %d", rc);
    /* out.json, 3 kept of out.json's, the other destination's, the locked one */
    check(check_count_entries(dir) == 6, "stale_temp_others_kept", "%d entries",
          check_count_entries(dir));
    close(locked);
    check_rm_rf(dir);
    if (mkdir(dir, 0700) != 0) exit(2);
    free(dest);
}

/* A writer killed in the middle of a write (SIGXFSZ, as a kill -9 would)
 * leaves its temporary file, named for it; the next write of the same
 * destination removes it. */
static void test_killed_writer(const char *dir)
{
    char *dest = check_path(dir, "big.json");
    check_write_file(dest, "previous", 8);
    static char data[1 << 16];
    memset(data, 'k', sizeof data);
    pid_t child = fork();
    if (child == 0) {
        struct rlimit limit = {4096, 4096}, no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(SIGXFSZ, SIG_DFL);
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(3);
        sonde_write_file_atomic(dest, data, sizeof data);
        _exit(4); /* not reached: SIGXFSZ ends the write */
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) exit(2);
    char prefix[64];
    snprintf(prefix, sizeof prefix, ".big.json.sonde-tmp.%ld.", (long)child);
    char *left = find_entry(dir, prefix);
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ && left[0] &&
              strlen(left) == strlen(prefix) + 6 && file_is(dest, "previous", 8),
          "killed_writer_leaves_named_temp", "status %#x, left '%s'", (unsigned)status, left);
    free(left);
    int rc = sonde_write_file_atomic(dest, "{}", 2);
    check(rc == 0 && file_is(dest, "{}", 2) && check_count_entries(dir) == 1,
          "killed_writer_temp_removed_next_time", "rc %d, %d entries", rc,
          check_count_entries(dir));
    unlink(dest);
    free(dest);
}

/* As another user (root's tests drop to nobody in a child): a file it may
 * not write and a directory it may not create in are refused, up front and
 * at the write, with nothing left behind; root replacing nobody's file
 * keeps nobody as its owner. */
static void test_unprivileged(const char *dir)
{
    if (geteuid() != 0) return; /* (then the checks below need no child) */
    const uid_t nobody = 65534;
    char *shared = check_path(dir, "shared"), *locked = check_path(dir, "locked");
    char *ro = check_path(shared, "ro.json"), *in_locked = check_path(locked, "x.json");
    char *owned = check_path(shared, "owned.json");
    if (mkdir(shared, 0777) != 0 || chmod(shared, 0777) != 0 || mkdir(locked, 0555) != 0 ||
        chmod(dir, 0755) != 0)
        exit(2);
    check_write_file(ro, "keep", 4);
    check_write_file(owned, "nobody's", 8);
    if (chmod(ro, 0444) != 0 || chown(owned, nobody, nobody) != 0 || chmod(owned, 0640) != 0)
        exit(2);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        if (setgid(nobody) != 0 || setuid(nobody) != 0) _exit(3);
        int rc = sonde_write_output(ro, "new", 3);
        check(rc == -EACCES && sonde_check_output(ro) == -EACCES && file_is(ro, "keep", 4) &&
                  check_count_entries(shared) == 2,
              "read_only_file_not_replaced", "rc %d", rc);
        rc = sonde_write_output(in_locked, "new", 3);
        check(rc == -EACCES && sonde_check_output(in_locked) == -EACCES &&
                  check_count_entries(locked) == 0,
              "unwritable_directory_eacces_no_temp", "rc %d", rc);
        fflush(stdout);
        _exit(check_exit_code());
    }
    int status = 0;
    check(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "unprivileged_checks_ran", "status %#x", (unsigned)status);

    int rc = sonde_write_output(owned, "root's", 6);
    struct stat st;
    check(rc == 0 && stat(owned, &st) == 0 && st.st_uid == nobody && st.st_gid == nobody &&
              (st.st_mode & 0777) == 0640 && file_is(owned, "root's", 6),
          "replaced_file_keeps_owner", "rc %d uid %u mode %03o", rc, (unsigned)st.st_uid,
          (unsigned)(st.st_mode & 0777));
    unlink(ro);
    unlink(owned);
    rmdir(shared);
    rmdir(locked);
    free(ro);
    free(owned);
    free(in_locked);
    free(shared);
    free(locked);
}

int main(void)
{
    char *dir = check_tempdir();
    test_create_and_replace(dir);
    test_mode(dir);
    test_errors(dir);
    test_check_writable(dir);
    test_links(dir);
    test_descriptors(dir);
    test_stale_temps(dir);
    test_killed_writer(dir);
    test_unprivileged(dir);
    check(check_count_entries(dir) == 0, "atomic_no_leftovers_at_end", "%d entries",
          check_count_entries(dir));
    check_rm_rf(dir);
    free(dir);
    return check_exit_code();
}
