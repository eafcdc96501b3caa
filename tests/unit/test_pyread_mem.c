/* test_pyread_mem.c — unit test of the fault-safe memory reader (mem.c).
 *
 * Reads this process and a forked child through process_vm_readv and the
 * /proc/PID/mem fallback: mapped, unmapped, partially mapped and NULL-ish
 * ranges, a vanished process. Prints "PASS name" / "FAIL name: detail";
 * exits 1 on any failure.
 */
#include "pyread/pyread.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(bool ok, const char *name, int rc)
{
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        printf("FAIL %s: rc %d\n", name, rc);
        failures++;
    }
}

static void check_source(sonde_mem_t *mem, const char *how)
{
    static const char text[] = "the quick brown fox";
    char buf[64], name[128];
    long page = sysconf(_SC_PAGESIZE);

    /* two pages, the second unmapped: a range across the boundary is partial */
    char *pages =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) {
        check(false, "mmap", -errno);
        return;
    }
    memset(pages, 'x', (size_t)page);
    munmap(pages + page, (size_t)page);
    uint64_t reads0 = mem->reads, faults0 = mem->faults;

    memset(buf, 0, sizeof buf);
    int rc = sonde_mem_read(mem, (uint64_t)(uintptr_t)text, buf, sizeof text);
    snprintf(name, sizeof name, "%s: reads mapped memory exactly", how);
    check(rc == 0 && memcmp(buf, text, sizeof text) == 0, name, rc);

    rc = sonde_mem_read(mem, (uint64_t)(uintptr_t)(pages + page - 8), buf, 8);
    snprintf(name, sizeof name, "%s: reads up to the end of a mapping", how);
    check(rc == 0 && memcmp(buf, "xxxxxxxx", 8) == 0, name, rc);

    rc = sonde_mem_read(mem, (uint64_t)(uintptr_t)(pages + page - 8), buf, 16);
    snprintf(name, sizeof name, "%s: partially mapped range is -EFAULT", how);
    check(rc == -EFAULT, name, rc);

    rc = sonde_mem_read(mem, (uint64_t)(uintptr_t)(pages + page), buf, 8);
    snprintf(name, sizeof name, "%s: unmapped page is -EFAULT", how);
    check(rc == -EFAULT, name, rc);

    rc = sonde_mem_read(mem, 8, buf, 8);
    snprintf(name, sizeof name, "%s: NULL-ish pointer is -EFAULT", how);
    check(rc == -EFAULT, name, rc);

    rc = sonde_mem_read(mem, UINT64_MAX - 4, buf, 8);
    snprintf(name, sizeof name, "%s: wrapping range is -EFAULT", how);
    check(rc == -EFAULT, name, rc);

    rc = sonde_mem_read(mem, (uint64_t)(uintptr_t)text, buf, 0);
    snprintf(name, sizeof name, "%s: empty read succeeds", how);
    check(rc == 0, name, rc);

    snprintf(name, sizeof name, "%s: statistics count reads and faults", how);
    check(mem->reads - reads0 == 2 && mem->faults - faults0 == 4, name,
          (int)(mem->reads - reads0) * 100 + (int)(mem->faults - faults0));
    munmap(pages, (size_t)page);
}

int main(void)
{
    sonde_mem_t mem;
    int rc = sonde_mem_open(&mem, 0);
    check(rc == 0 && mem.pid == getpid(), "open self", rc);
    check_source(&mem, "self, process_vm_readv");
    sonde_mem_close(&mem);

    /* the /proc/PID/mem fallback, as if process_vm_readv were refused */
    rc = sonde_mem_open(&mem, 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)getpid());
    FILE *f = fopen(path, "r");
    if (f) {
        sonde_prim_kept_adopt(&mem.procmem, dup(fileno(f)), true);
        fclose(f);
    }
    mem.use_procmem = true;
    check(mem.procmem.fd > 2, "fallback descriptor opened", mem.procmem.fd);
    check_source(&mem, "self, /proc/self/mem");
    /* the program closes it and takes its number: reopened elsewhere */
    int number = mem.procmem.fd;
    int devnull = open("/dev/null", O_WRONLY);
    check(devnull >= 0 && dup2(devnull, number) == number, "fallback taken over", number);
    char byte;
    int quiet_rc = sonde_mem_read(&mem, (uint64_t)(uintptr_t)&number, &byte, 1);
    check(quiet_rc == -EAGAIN && mem.procmem.fd == -1, "quiet spell: nothing reopened", quiet_rc);
    sonde__prim_kept_quiet_end();
    check_source(&mem, "self, /proc/self/mem reopened");
    check(mem.procmem.fd > 2 && mem.procmem.fd != number, "fallback reopened on another number",
          mem.procmem.fd);
    sonde_mem_close(&mem);
    check(mem.procmem.fd == -1 && fcntl(number, F_GETFD) >= 0, "close releases the descriptor",
          mem.procmem.fd);
    close(number);
    close(devnull);

    /* a source on this process follows it into a child after fork() */
    static volatile uint64_t own = 1;
    for (int fallback = 0; fallback < 2; fallback++) {
        rc = sonde_mem_open(&mem, 0);
        mem.use_procmem = fallback;
        uint64_t seen = 0;
        rc = rc ? rc : sonde_mem_read(&mem, (uint64_t)(uintptr_t)&own, &seen, sizeof seen);
        pid_t kid = fork();
        if (kid == 0) {
            own = 2; /* only the child's copy */
            int child_rc = sonde_mem_read(&mem, (uint64_t)(uintptr_t)&own, &seen, sizeof seen);
            _exit(child_rc == 0 && seen == 2 && mem.pid == getpid() ? 0 : 1);
        }
        int status = 0;
        waitpid(kid, &status, 0);
        check(rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              fallback ? "after fork, a child reads itself (/proc/self/mem)"
                       : "after fork, a child reads itself (process_vm_readv)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        sonde_mem_close(&mem);
    }

    /* a child: same addresses (fork), then gone */
    static volatile uint64_t marker = 0x5eed5eed5eed5eedull;
    pid_t child = fork();
    if (child == 0) {
        marker = 0x0123456789abcdefull; /* only the child's copy changes */
        pause();
        _exit(0);
    }
    usleep(100 * 1000);
    rc = sonde_mem_open(&mem, child);
    uint64_t value = 0;
    rc = rc ? rc : sonde_mem_read(&mem, (uint64_t)(uintptr_t)&marker, &value, sizeof value);
    check(rc == 0 && value == 0x0123456789abcdefull, "reads another process's memory", rc);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    rc = sonde_mem_read(&mem, (uint64_t)(uintptr_t)&marker, &value, sizeof value);
    check(rc == -ESRCH, "a process that exited is -ESRCH", rc);
    sonde_mem_close(&mem);
    rc = sonde_mem_open(&mem, child);
    check(rc == -ESRCH, "opening a pid that does not exist is -ESRCH", rc);
    return failures ? 1 : 0;
}
