/* test_prim_task.c — the /proc task-file reader and the stat, schedstat
 * and syscall parsers that the in-process sampler and the attach reader share
 * (src/prim/prim_internal.h, prim.h).
 *
 * Reads this process's own thread through both spellings of the path
 * (/proc/self and /proc/PID), checks a vanished thread reads as -ESRCH
 * (the attach reader's "gone"), that a descriptor the program took over is
 * neither read nor closed and the file is opened again, and feeds the
 * parsers the kernel's formats and malformed text. The one reader of
 * /proc/PID/stat (sonde_prim_proc_state) is read on live processes: the
 * parent chain (sonde_prim_descends_from) and a zombie's state (what the
 * collector's liveness check looks for).
 */
#include "prim/prim_internal.h"

#include "check.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_task_read(void)
{
    pid_t tid = sonde_prim_gettid();
    char a[256], b[256];
    sonde_prim_kept_fd_t fd_self = SONDE_PRIM_KEPT_FD_NONE, fd_pid = SONDE_PRIM_KEPT_FD_NONE;
    ssize_t n1 = sonde__prim_task_read(0, tid, "stat", &fd_self, a, sizeof a);
    ssize_t n2 = sonde__prim_task_read(getpid(), tid, "stat", &fd_pid, b, sizeof b);
    char want[32];
    snprintf(want, sizeof want, "%d (", (int)tid);
    check(n1 > 0 && strncmp(a, want, strlen(want)) == 0 && fd_self.fd > 2 && fd_self.check,
          "task_read_self", "n %zd: %s", n1, n1 > 0 ? a : "");
    check(n2 > 0 && strncmp(b, want, strlen(want)) == 0 && fd_pid.fd > 2 && !fd_pid.check,
          "task_read_pid", "n %zd: %s", n2, n2 > 0 ? b : "");
    /* the descriptor is kept and read again from the start */
    int kept = fd_self.fd;
    n1 = sonde__prim_task_read(0, tid, "stat", &fd_self, a, sizeof a);
    check(n1 > 0 && fd_self.fd == kept && strncmp(a, want, strlen(want)) == 0, "task_read_again",
          "n %zd fd %d/%d", n1, fd_self.fd, kept);
    /* a short buffer is NUL-terminated within its length */
    char small[4];
    sonde_prim_kept_fd_t fd_small = SONDE_PRIM_KEPT_FD_NONE;
    n1 = sonde__prim_task_read(0, tid, "stat", &fd_small, small, sizeof small);
    check(n1 == 3 && small[3] == 0, "task_read_short_buffer", "n %zd", n1);
    sonde_prim_kept_close(&fd_self);
    sonde_prim_kept_close(&fd_pid);
    sonde_prim_kept_close(&fd_small);

    sonde_prim_kept_fd_t fd_gone = SONDE_PRIM_KEPT_FD_NONE;
    ssize_t gone = sonde__prim_task_read(0, 0x7ffffff0, "stat", &fd_gone, a, sizeof a);
    check(gone == -ESRCH && fd_gone.fd == -1, "task_read_gone_is_esrch", "rc %zd fd %d", gone,
          fd_gone.fd);
}

/* The program closes sonde's descriptor and its number comes back on a file
 * of its own: the next read neither reads nor closes it, and opens the task
 * file again on another number. */
static void test_task_read_taken_over(void)
{
    pid_t tid = sonde_prim_gettid();
    char text[256];
    sonde_prim_kept_fd_t kept = SONDE_PRIM_KEPT_FD_NONE;
    ssize_t n = sonde__prim_task_read(0, tid, "stat", &kept, text, sizeof text);
    int number = kept.fd;
    int pipe_fds[2] = {-1, -1};
    check(n > 0 && pipe(pipe_fds) == 0, "taken_over_setup", "n %zd", n);
    /* the program's os.closerange, then its own file on the same number */
    check(dup2(pipe_fds[1], number) == number, "taken_over_dup2", "fd %d", number);
    /* a quiet spell first: nothing opened, the number left alone */
    n = sonde__prim_task_read(0, tid, "stat", &kept, text, sizeof text);
    check(n == -EAGAIN && kept.fd == -1 && sonde_prim_kept_quiet(), "taken_over_quiet",
          "n %zd fd %d", n, kept.fd);
    sonde__prim_kept_quiet_end();
    n = sonde__prim_task_read(0, tid, "stat", &kept, text, sizeof text);
    check(n > 0 && kept.fd >= 0 && kept.fd != number, "taken_over_reopened", "n %zd fd %d/%d", n,
          kept.fd, number);
    check(write(number, "x", 1) == 1, "taken_over_left_open", "fd %d", number);
    /* closed under sonde and not reused: forgotten, then reopened */
    int second = kept.fd;
    close(second);
    n = sonde__prim_task_read(0, tid, "stat", &kept, text, sizeof text);
    check(n == -EAGAIN && sonde_prim_kept_quiet(), "closed_quiet_again", "n %zd", n);
    sonde__prim_kept_quiet_end();
    n = sonde__prim_task_read(0, tid, "stat", &kept, text, sizeof text);
    check(n > 0 && kept.fd >= 0, "closed_reopened", "n %zd fd %d", n, kept.fd);
    /* closing what the program took over leaves it alone */
    sonde_prim_kept_fd_t stolen = kept;
    check(dup2(pipe_fds[1], kept.fd) == kept.fd, "taken_over_dup2_again", "fd %d", kept.fd);
    sonde_prim_kept_close(&stolen);
    check(stolen.fd == -1 && write(kept.fd, "y", 1) == 1, "close_leaves_program_fd", "fd %d",
          kept.fd);
    char got[4] = "";
    check(read(pipe_fds[0], got, sizeof got) == 2 && memcmp(got, "xy", 2) == 0,
          "program_pipe_gets_only_its_bytes", "%.2s", got);
    close(kept.fd);
    close(number);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static void test_schedstat(void)
{
    sonde_ns_t cpu = 1, runq = 1;
    int rc = sonde__prim_parse_schedstat("123456789 987654 42\n", &cpu, &runq);
    check(rc == 0 && cpu == 123456789 && runq == 987654, "schedstat_three_fields",
          "rc %d cpu %llu runq %llu", rc, (unsigned long long)cpu, (unsigned long long)runq);
    rc = sonde__prim_parse_schedstat("555", &cpu, &runq);
    check(rc == 0 && cpu == 555 && runq == 0, "schedstat_runq_missing", "rc %d runq %llu", rc,
          (unsigned long long)runq);
    cpu = runq = 7;
    rc = sonde__prim_parse_schedstat("garbage", &cpu, &runq);
    check(rc == -EINVAL && cpu == 7 && runq == 7, "schedstat_malformed", "rc %d", rc);
    rc = sonde__prim_parse_schedstat("", &cpu, &runq);
    check(rc == -EINVAL, "schedstat_empty", "rc %d", rc);

    /* this thread's own file parses and shows CPU time. The kernel adds a
     * running slice to the figure only when the thread leaves the CPU, so
     * a fresh process can read 0: run a few ms, then sleep once. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 3000000L);
    usleep(1000);
    char text[128];
    sonde_prim_kept_fd_t fd = SONDE_PRIM_KEPT_FD_NONE;
    ssize_t n = sonde__prim_task_read(0, sonde_prim_gettid(), "schedstat", &fd, text, sizeof text);
    if (n > 0) {
        rc = sonde__prim_parse_schedstat(text, &cpu, &runq);
        check(rc == 0 && cpu > 0, "schedstat_own_thread", "rc %d: %s", rc, text);
        sonde_prim_kept_close(&fd);
    }
}

static void test_syscall(void)
{
    long nr = 0;
    check(sonde_prim_parse_syscall("running\n", &nr) == SONDE_WAIT_RUNNING && nr == -1,
          "syscall_running", "nr %ld", nr);
    check(sonde_prim_parse_syscall("-1 0x7ffd 0x0\n", &nr) == SONDE_WAIT_RUNNING && nr == -1,
          "syscall_blocked_outside", "nr %ld", nr);
    char text[64];
    snprintf(text, sizeof text, "%ld 0x1 0x2 0x3 0x4 0x5 0x6 0x7ffd 0x7f", (long)SYS_futex);
    check(sonde_prim_parse_syscall(text, &nr) == SONDE_WAIT_THREAD && nr == SYS_futex,
          "syscall_futex_is_thread_wait", "nr %ld", nr);
    snprintf(text, sizeof text, "%ld 0x3 0x7ffd 0x400", (long)SYS_read);
    check(sonde_prim_parse_syscall(text, &nr) == SONDE_WAIT_SYSTEM && nr == SYS_read,
          "syscall_read_is_system", "nr %ld", nr);
    check(sonde_prim_parse_syscall("x", &nr) == SONDE_WAIT_UNKNOWN, "syscall_malformed", "nr %ld",
          nr);
}

static void test_stat(void)
{
    char state = 0;
    pid_t ppid = 0;
    int rc = sonde__prim_parse_stat("4242 (python3) S 77 4242 4242 0 -1\n", &state, &ppid);
    check(rc == 0 && state == 'S' && ppid == 77, "stat_plain", "rc %d state %c ppid %d", rc, state,
          (int)ppid);
    /* a comm of its own choosing: spaces, parentheses, a newline */
    rc = sonde__prim_parse_stat("4242 (x) R 1\n) (y) Z 9) D 5 0 0\n", &state, &ppid);
    check(rc == 0 && state == 'D' && ppid == 5, "stat_hostile_comm", "rc %d state %c ppid %d", rc,
          state, (int)ppid);
    check(sonde__prim_parse_stat("4242 (x) S", &state, &ppid) == -EINVAL, "stat_no_ppid", "parsed");
    check(sonde__prim_parse_stat("4242 (x) S 99999999", &state, &ppid) == -EINVAL,
          "stat_ppid_out_of_range", "parsed");
    check(sonde__prim_parse_stat("4242 (x)", &state, NULL) == -EINVAL &&
              sonde__prim_parse_stat("no paren", &state, NULL) == -EINVAL,
          "stat_malformed", "parsed");
}

static void test_proc_state(void)
{
    char state = 0;
    pid_t ppid = 0;
    int rc = sonde_prim_proc_state(getpid(), &state, &ppid);
    check(rc == 0 && state == 'R' && ppid == getppid(), "proc_state_self", "rc %d state %c ppid %d",
          rc, state, (int)ppid);
    check(sonde_prim_descends_from(getpid(), getppid()) == 1, "descends_from_parent", "no");
    check(sonde_prim_descends_from(getppid(), getpid()) == 0, "parent_not_below_child", "yes");
    pid_t child = fork();
    if (child == 0) _exit(0);
    check(child > 0, "fork", "%s", strerror(errno));
    if (child <= 0) return;
    check(sonde_prim_descends_from(child, getpid()) == 1, "descends_from_child", "no");
    /* Exited, not yet reaped: a zombie, which the collector counts as ended. */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    rc = waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT);
    state = 0;
    int rs = sonde_prim_proc_state(child, &state, NULL);
    check(rc == 0 && rs == 0 && state == 'Z', "proc_state_zombie", "rc %d/%d state %c", rc, rs,
          state);
    waitpid(child, NULL, 0);
    check(sonde_prim_proc_state(child, &state, NULL) == -ESRCH, "proc_state_gone", "state %c",
          state);
}

int main(void)
{
    test_task_read();
    test_task_read_taken_over();
    test_schedstat();
    test_syscall();
    test_stat();
    test_proc_state();
    return check_exit_code();
}
