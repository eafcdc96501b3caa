/* inject.c — `sonde attach --inject PID`: sonde's own profiler, loaded
 * into a running CPython 3.14+ through PEP 768, then taken out.
 *
 * Owns: the command's side of an injected session. It reads the target
 * (src/pyread/), makes a private directory the target can write (owned
 * by the target's user), writes two small Python files there (start.py:
 * import sonde's extension built for the target's interpreter from this
 * package and call _sonde._inject_start(dir, options); stop.py: call
 * _sonde._inject_stop()), asks a thread of the target to run start.py at
 * its next safe point (sonde_pyproc_remote_exec), waits for the session's
 * live marker, waits for the duration, Ctrl-C or the target's end, asks
 * for stop.py the same way, and reads the profile the session hands over
 * (src/handover/: the same private format `sonde run`'s followed
 * processes use) to write the report in any format. What the target keeps
 * afterwards: the modules sonde and sonde._sonde in sys.modules (CPython
 * cannot unload an extension), one atexit and one fork hook that do
 * nothing without a session. Runs on the command's main thread; the
 * signal handler is attach.c's (it sets *stop).
 */
#include "attach_cli.h"

#include "../core/buf.h"
#include "../handover/handover.h"
#include "../prim/prim.h"
#include "../pyread/pyread.h"
#include "../report/report.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INJECT_POLL_NS 10000000LL   /* look again every 10 ms */
#define INJECT_KICK_NS 100000000LL  /* set the eval breaker bit again */
#define INJECT_STOP_WAIT_MIN_SEC 10 /* the hand-over of a large profile */
#define INJECT_ERROR_FILE "error"   /* what start.py caught, in text */

typedef struct inject {
    pid_t pid;
    sonde_pyproc_t proc;
    char dir[256];
    char pkg_parent[4096];
    char version[32];
} inject_t;

static void inject_sleep(long long ns)
{
    struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
    nanosleep(&ts, NULL);
}

/* The module for the target's interpreter in pkg_dir: 1 found, 0 not. */
static int inject_module_present(const char *pkg_dir, int minor)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "_sonde.cpython-3%d-", minor);
    DIR *d = opendir(pkg_dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL)
        found = strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strstr(e->d_name, ".so") != NULL;
    closedir(d);
    return found;
}

/* Appends text as a Python bytes literal (every byte but a few safe ones
 * escaped), so that any path survives. */
static void inject_py_bytes(sonde_buf_t *out, const char *text)
{
    sonde_buf_append(out, "b'", 2);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '/' || *p == '.' || *p == '_' || *p == '-')
            sonde_buf_append(out, (const char *)p, 1);
        else
            sonde_buf_printf(out, "\\x%02x", *p);
    }
    sonde_buf_append(out, "'", 1);
}

/* Writes dir/name with text, readable by the target. Returns 0 or -errno. */
static int inject_write_file(const inject_t *in, const char *name, const sonde_buf_t *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", in->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -errno;
    size_t n = fwrite(text->data, 1, text->len, f);
    int rc = fclose(f);
    if (n != text->len || rc != 0) return -EIO;
    return 0;
}

/* start.py and stop.py. options: `sonde run`'s words for the session. */
static int inject_write_scripts(const inject_t *in, const sonde_attach_args_t *args)
{
    sonde_buf_t start = SONDE_BUF_INIT, stop = SONDE_BUF_INIT;
    sonde_buf_printf(&start, "# sonde attach --inject: starts sonde's profiler in this process\n"
                             "def _sonde_inject():\n"
                             "    import os, sys\n"
                             "    d = os.fsdecode(");
    inject_py_bytes(&start, in->dir);
    sonde_buf_printf(&start, ")\n    p = os.fsdecode(");
    inject_py_bytes(&start, in->pkg_parent);
    sonde_buf_printf(&start, ")\n    words = [\"--interval\", \"%.6f\", \"--stacks\"",
                     1.0 / args->opts.rate_hz);
    const sonde_run_opts_t *f = &args->files;
    if (f->profile_all) sonde_buf_printf(&start, ", \"--profile-all\"");
    for (int i = 0; i < f->n_profile_only; i++) {
        sonde_buf_printf(&start, ", \"--profile-only\", os.fsdecode(");
        inject_py_bytes(&start, f->profile_only[i]);
        sonde_buf_printf(&start, ")");
    }
    for (int i = 0; i < f->n_profile_exclude; i++) {
        sonde_buf_printf(&start, ", \"--profile-exclude\", os.fsdecode(");
        inject_py_bytes(&start, f->profile_exclude[i]);
        sonde_buf_printf(&start, ")");
    }
    sonde_buf_printf(&start,
                     "]\n"
                     "    added = p not in sys.path\n"
                     "    if added:\n"
                     "        sys.path.insert(0, p)\n"
                     "    try:\n"
                     "        from sonde import _sonde\n"
                     "        _sonde._inject_start(d, words, %d)\n"
                     "    except BaseException as e:\n"
                     "        with open(os.path.join(d, \"" INJECT_ERROR_FILE "\"), \"w\") as f:\n"
                     "            f.write(\"%%s: %%s\" %% (type(e).__name__, e))\n"
                     "    finally:\n"
                     "        if added and p in sys.path:\n"
                     "            sys.path.remove(p)\n"
                     "_sonde_inject()\n",
                     (int)getpid());
    sonde_buf_printf(&stop, "# sonde attach --inject: ends sonde's profiler in this process\n"
                            "import os, sys\n"
                            "if \"sonde._sonde\" in sys.modules:\n"
                            "    sys.modules[\"sonde._sonde\"]._inject_stop(os.fsdecode(");
    inject_py_bytes(&stop, in->dir);
    sonde_buf_printf(&stop, "))\n");
    int rc = sonde_buf_error(&start) || sonde_buf_error(&stop) ? -ENOMEM : 0;
    if (rc == 0) rc = inject_write_file(in, "start.py", &start);
    if (rc == 0) rc = inject_write_file(in, "stop.py", &stop);
    sonde_buf_free(&start);
    sonde_buf_free(&stop);
    return rc;
}

/* The first file of kind in the directory: 1 with path filled, 0 none. */
static int inject_find(const inject_t *in, sonde_handover_kind_t kind, char *path, size_t len)
{
    DIR *d = opendir(in->dir);
    if (!d) return 0;
    struct dirent *e;
    sonde_handover_name_t name;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL)
        if (sonde_handover_parse(e->d_name, &name) && name.kind == kind) {
            snprintf(path, len, "%s/%s", in->dir, e->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

/* What start.py caught, into buf (one line). 1 found, 0 none. */
static int inject_error_text(const inject_t *in, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/" INJECT_ERROR_FILE, in->dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    for (char *p = buf; *p; p++)
        if (*p == '\n') *p = ' ';
    return 1;
}

static void inject_remove_dir(const inject_t *in)
{
    DIR *d = opendir(in->dir);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", in->dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(in->dir);
}

/* The thread to ask: the GIL's holder (it runs bytecode now), else the
 * main thread (the last in the list). Returns its thread state, or 0. */
static uint64_t inject_pick_thread(inject_t *in)
{
    uint64_t holder = 0;
    if (sonde_pyproc_gil_holder(&in->proc, &holder) == 0 && holder) return holder;
    sonde_pythread_t threads[256];
    int n = sonde_pyproc_threads(&in->proc, threads, 256);
    return n > 0 ? threads[n - 1].tstate : 0;
}

static bool inject_alive(pid_t pid)
{
    char state = 0;
    return sonde_prim_proc_state(pid, &state, NULL) == 0 && state != 'Z' && state != 'X';
}

/* Asks the target to run dir/script and waits until done(in) says it ran
 * (1), *stop, the target's end or wait_sec. Returns 1 ran, 0 timed out
 * (the request withdrawn), -ESRCH the target ended, -EINTR stopped, or
 * the request's -errno. */
static int inject_run(inject_t *in, const char *script, double wait_sec,
                      int (*done)(const inject_t *in), volatile sig_atomic_t *stop)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", in->dir, script);
    uint64_t tstate = inject_pick_thread(in);
    if (!tstate) return -ESRCH;
    int rc = sonde_pyproc_remote_exec(&in->proc, tstate, path);
    if (rc < 0) return rc;
    sonde_ns_t start = sonde_prim_monotonic_ns(), kicked = start;
    for (;;) {
        if (done(in)) return 1;
        if (!inject_alive(in->pid)) return done(in) ? 1 : -ESRCH;
        sonde_ns_t now = sonde_prim_monotonic_ns();
        if (*stop || now - start >= (sonde_ns_t)(wait_sec * 1e9)) {
            (void)sonde_pyproc_remote_cancel(&in->proc, tstate);
            inject_sleep(INJECT_POLL_NS); /* one that took it just now shows it */
            if (done(in)) return 1;
            return *stop ? -EINTR : 0;
        }
        if (now - kicked >= INJECT_KICK_NS && sonde_pyproc_remote_pending(&in->proc, tstate) == 1) {
            /* Still waiting: the thread asked may wait in C code while
             * another runs Python (a server's main thread in accept(),
             * its workers busy). Ask the one holding the GIL now instead;
             * both taking it is harmless (the scripts run once). */
            uint64_t holder = 0;
            if (sonde_pyproc_gil_holder(&in->proc, &holder) == 0 && holder && holder != tstate &&
                sonde_pyproc_remote_exec(&in->proc, holder, path) == 0) {
                (void)sonde_pyproc_remote_cancel(&in->proc, tstate);
                tstate = holder;
            } else {
                (void)sonde_pyproc_remote_kick(&in->proc, tstate);
            }
            kicked = now;
        }
        inject_sleep(INJECT_POLL_NS);
    }
}

static int inject_started(const inject_t *in)
{
    char path[512], text[8];
    return inject_find(in, SONDE_HANDOVER_LIVE, path, sizeof path) ||
           inject_error_text(in, text, sizeof text);
}

static int inject_handed_over(const inject_t *in)
{
    char path[512];
    return inject_find(in, SONDE_HANDOVER_PROFILE, path, sizeof path) ||
           inject_find(in, SONDE_HANDOVER_FAILED, path, sizeof path);
}

/* Opens the target and checks what injection needs. Returns 0, 1 after a
 * line (nothing to sample), or SONDE_INJECT_OUTSIDE after a line. */
static int inject_open(inject_t *in, const sonde_attach_args_t *args)
{
    int rc = sonde_pyproc_open_pid(&in->proc, in->pid);
    if (rc < 0) {
        if (rc == -ENOTSUP) {
            /* a version sonde cannot read at all: the usual message */
            sonde_attach_cli_open_error(in->pid, rc, "");
            return 1;
        }
        sonde_attach_cli_open_error(in->pid, rc, "");
        return 1;
    }
    snprintf(in->version, sizeof in->version, "%d.%d.%d", in->proc.version_major,
             in->proc.version_minor, in->proc.version_micro);
    if (in->proc.version_major == 3 && in->proc.version_minor < 14) {
        sonde_cli_error("pid %d runs Python %s; --inject needs 3.14 or newer (PEP 768): sampling "
                        "it from outside instead",
                        (int)in->pid, in->version);
        return SONDE_INJECT_OUTSIDE;
    }
    char pkg_dir[4096];
    if (sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir) < 0 ||
        !inject_module_present(pkg_dir, in->proc.version_minor)) {
        sonde_cli_error("no sonde module for Python 3.%d beside this command (build it: make "
                        "PYTHON=python3.%d): sampling pid %d from outside instead",
                        in->proc.version_minor, in->proc.version_minor, (int)in->pid);
        return SONDE_INJECT_OUTSIDE;
    }
    snprintf(in->pkg_parent, sizeof in->pkg_parent, "%s", pkg_dir);
    char *slash = strrchr(in->pkg_parent, '/');
    if (slash && slash != in->pkg_parent) *slash = 0;
    rc = sonde_prim_proc_same_root(in->pid);
    if (rc != 1) {
        sonde_cli_error("pid %d sees another file system (a container or chroot): --inject cannot "
                        "give it sonde's module; sampling it from outside instead",
                        (int)in->pid);
        return SONDE_INJECT_OUTSIDE;
    }
    (void)args;
    return 0;
}

/* The private directory, owned by the target's user. Returns 0 or 1
 * after a line. */
static int inject_make_dir(inject_t *in)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/' || strlen(tmp) > 150) tmp = "/tmp";
    snprintf(in->dir, sizeof in->dir, "%s/sonde-inject-%d-XXXXXX", tmp, (int)in->pid);
    if (!mkdtemp(in->dir)) {
        sonde_cli_error("cannot make a directory in %s: %s", tmp, strerror(errno));
        in->dir[0] = 0;
        return 1;
    }
    uid_t uid;
    gid_t gid;
    if (sonde_prim_proc_owner(in->pid, &uid, &gid) == 0 && uid != geteuid() &&
        chown(in->dir, uid, gid) != 0) {
        sonde_cli_error("cannot give %s to pid %d's user: %s", in->dir, (int)in->pid,
                        strerror(errno));
        return 1;
    }
    return 0;
}

/* Why a request could not be made, in one line. */
static int inject_request_error(const inject_t *in, int rc, const char *what)
{
    if (rc == -ENOPROTOOPT)
        sonde_cli_error("pid %d has remote debugging turned off (-X disable-remote-debug, "
                        "PYTHON_DISABLE_REMOTE_DEBUG, or a build without it): sampling it from "
                        "outside instead",
                        (int)in->pid);
    else if (rc == -EBUSY)
        sonde_cli_error("pid %d has another debugger's request pending: sampling it from outside "
                        "instead",
                        (int)in->pid);
    else
        sonde_cli_error("cannot ask pid %d to %s: %s; sampling it from outside instead",
                        (int)in->pid, what, strerror(-rc));
    return SONDE_INJECT_OUTSIDE;
}

/* Reads the hand-over and writes the report. Returns 0 or 1. */
static int inject_report(const inject_t *in, const sonde_attach_args_t *args, double seconds)
{
    char path[512];
    sonde_profile_t prof;
    const char *why = "";
    if (!inject_find(in, SONDE_HANDOVER_PROFILE, path, sizeof path)) {
        sonde_handover_name_t name;
        if (inject_find(in, SONDE_HANDOVER_FAILED, path, sizeof path) &&
            sonde_handover_parse(strrchr(path, '/') + 1, &name))
            sonde_cli_error("pid %d could not hand its profile over: %s", (int)in->pid,
                            strerror((int)name.number));
        else
            sonde_cli_error("pid %d handed no profile over", (int)in->pid);
        return 1;
    }
    sonde_profile_init(&prof);
    int rc = sonde_handover_read(path, &prof, &why);
    if (rc < 0) {
        sonde_cli_error("cannot read pid %d's profile: %s", (int)in->pid,
                        why && *why ? why : strerror(-rc));
        sonde_profile_free(&prof);
        return 1;
    }
    sonde_report_ctx_t ctx;
    sonde_buf_t viewer = SONDE_BUF_INIT;
    char pkg_dir[4096];
    sonde_report_ctx_init(&ctx, args->outfile ? -1 : 1);
    ctx.pprof.compress = sonde_cli_gzip;
    if (sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir) == 0) {
        sonde_buf_printf(&viewer, "%s/viewer", pkg_dir);
        if (!sonde_buf_error(&viewer)) ctx.viewer_dir = viewer.data;
    }
    const char *what = "write the report";
    fflush(stdout);
    if (!args->outfile)
        fprintf(stderr, "sonde: profiled pid %d from inside for %.1f s\n", (int)in->pid, seconds);
    rc = sonde_report_emit(args->format, &prof, &ctx, args->outfile, 1, &what);
    if (rc < 0)
        sonde_cli_error("cannot %s%s%s: %s", what, args->outfile ? " to " : "",
                        args->outfile ? args->outfile : "", strerror(-rc));
    else if (args->outfile)
        fprintf(stderr, "sonde: profiled pid %d from inside for %.1f s; %s written to %s\n",
                (int)in->pid, seconds, args->format->name, args->outfile);
    sonde_buf_free(&viewer);
    sonde_profile_free(&prof);
    return rc < 0 ? 1 : 0;
}

int sonde_attach_cli_inject(const sonde_attach_args_t *args, volatile sig_atomic_t *stop)
{
    inject_t in;
    memset(&in, 0, sizeof in);
    in.pid = args->pid;
    int rc = inject_open(&in, args);
    if (rc != 0) {
        if (in.proc.off) sonde_pyproc_close(&in.proc);
        return rc;
    }
    if ((rc = inject_make_dir(&in)) != 0) goto done;
    if ((rc = inject_write_scripts(&in, args)) < 0) {
        sonde_cli_error("cannot write the profiler's start in %s: %s", in.dir, strerror(-rc));
        rc = 1;
        goto done;
    }
    rc = inject_run(&in, "start.py", args->inject_wait_sec, inject_started, stop);
    char text[512];
    if (rc == 1 && inject_error_text(&in, text, sizeof text)) {
        sonde_cli_error("the profiler could not start in pid %d: %s", (int)in.pid, text);
        rc = 1;
        goto done;
    }
    if (rc == 0) {
        sonde_cli_error("pid %d ran no Python code within %g s (its threads wait in C code), so "
                        "the profiler could not be loaded (--inject-wait): sampling it from "
                        "outside instead",
                        (int)in.pid, args->inject_wait_sec);
        rc = SONDE_INJECT_OUTSIDE;
        goto done;
    }
    if (rc == -EINTR) {
        rc = 1;
        goto done;
    }
    if (rc == -ESRCH) {
        sonde_cli_error("pid %d ended before the profiler started", (int)in.pid);
        rc = 1;
        goto done;
    }
    if (rc < 0) {
        rc = inject_request_error(&in, rc, "load the profiler");
        goto done;
    }

    sonde_ns_t began = sonde_prim_monotonic_ns();
    if (args->opts.duration_sec > 0)
        fprintf(stderr,
                "sonde: profiling pid %d (Python %s) from inside for %g s; Ctrl-C to stop "
                "sooner\n",
                (int)in.pid, in.version, args->opts.duration_sec);
    else
        fprintf(stderr, "sonde: profiling pid %d (Python %s) from inside; Ctrl-C to stop\n",
                (int)in.pid, in.version);
    while (!*stop && !inject_handed_over(&in) && inject_alive(in.pid)) {
        double elapsed = (double)(sonde_prim_monotonic_ns() - began) / 1e9;
        if (args->opts.duration_sec > 0 && elapsed >= args->opts.duration_sec) break;
        inject_sleep(INJECT_POLL_NS);
    }
    double seconds = (double)(sonde_prim_monotonic_ns() - began) / 1e9;
    if (!inject_handed_over(&in) && inject_alive(in.pid)) {
        volatile sig_atomic_t never = 0;
        double wait = args->inject_wait_sec > INJECT_STOP_WAIT_MIN_SEC ? args->inject_wait_sec
                                                                       : INJECT_STOP_WAIT_MIN_SEC;
        rc = inject_run(&in, "stop.py", wait, inject_handed_over, &never);
        if (rc == 0) {
            /* the request stays: the profiler stops at the target's next
             * Python code, or at its exit, into a directory left for it */
            char stop_path[512];
            snprintf(stop_path, sizeof stop_path, "%s/stop.py", in.dir);
            (void)sonde_pyproc_remote_exec(&in.proc, inject_pick_thread(&in), stop_path);
            sonde_cli_error("pid %d ran no Python code within %g s to stop the profiler; it "
                            "stops at its exit, its profile in %s",
                            (int)in.pid, wait, in.dir);
            in.dir[0] = 0; /* left for it */
            rc = 1;
            goto done;
        }
        if (rc < 0 && rc != -ESRCH) {
            sonde_cli_error("cannot ask pid %d to stop the profiler: %s", (int)in.pid,
                            strerror(-rc));
            rc = 1;
            goto done;
        }
    }
    if (!inject_handed_over(&in) && !inject_alive(in.pid)) {
        /* a profile written at its exit may still be on its way */
        for (int i = 0; i < 50 && !inject_handed_over(&in); i++)
            inject_sleep(INJECT_POLL_NS);
        if (!inject_handed_over(&in)) {
            sonde_cli_error("pid %d ended without handing its profile over", (int)in.pid);
            rc = 1;
            goto done;
        }
    }
    rc = inject_report(&in, args, seconds);
done:
    if (in.dir[0]) inject_remove_dir(&in);
    sonde_pyproc_close(&in.proc);
    return rc;
}
