/* test_pyread_snapshot.c — unit tests of the page snapshot of the memory
 * reader (sonde_mem_snapshot_begin/end, src/pyread/mem.c), which the attach
 * sampler wraps around each stack walk of another process. A forked child
 * keeps a known pattern at the addresses the parent knows; the parent reads
 * it through the snapshot and checks: the bytes (within a page, across a
 * page boundary, larger than a page), one system call per page, a range
 * running into an unmapped page still fails, a change made by the target
 * during a snapshot is seen after the next begin, the page limit, and that
 * a source reading this process never caches. */
#include "pyread/pyread.h"

#include "check.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096
#define PAGES 80 /* more than SONDE_MEM_SNAPSHOT_PAGES */

static uint8_t expect_byte(size_t at)
{
    return (uint8_t)(at * 7 + at / PAGE);
}

static bool same(const uint8_t *got, size_t at, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (got[i] != expect_byte(at + i)) return false;
    return true;
}

int main(void)
{
    uint8_t *region =
        mmap(NULL, (PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return 2;
    munmap(region + PAGES * PAGE, PAGE); /* a hole right after the region */
    for (size_t i = 0; i < PAGES * PAGE; i++)
        region[i] = expect_byte(i);
    uint64_t base = (uint64_t)(uintptr_t)region;

    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) return 2;
    pid_t child = fork();
    if (child == 0) {
        char cmd;
        while (read(to_child[0], &cmd, 1) == 1) {
            if (cmd == 'w') region[100] = 0xab;
            if (write(to_parent[1], &cmd, 1) != 1) break;
        }
        _exit(0);
    }

    sonde_mem_t mem;
    uint8_t buf[2 * PAGE];
    check(sonde_mem_open(&mem, child) == 0, "open_child", "failed");
    check(sonde_mem_snapshot_begin(&mem) == 0, "begin", "failed");

    uint64_t reads0 = mem.reads;
    bool ok = sonde_mem_read(&mem, base + 10, buf, 64) == 0 && same(buf, 10, 64);
    ok = ok && sonde_mem_read(&mem, base + PAGE - 8, buf, 16) == 0 && same(buf, PAGE - 8, 16);
    for (int i = 0; i < 50 && ok; i++)
        ok = sonde_mem_read(&mem, base + 200 + 13 * (size_t)i, buf, 24) == 0 &&
             same(buf, 200 + 13 * (size_t)i, 24);
    check(ok, "bytes_through_snapshot", "wrong bytes");
    check(mem.reads - reads0 == 2, "one_read_per_page", "%llu reads for 2 pages",
          (unsigned long long)(mem.reads - reads0));

    check(sonde_mem_read(&mem, base + PAGES * PAGE - 4, buf, 8) == -EFAULT,
          "into_unmapped_page_fails", "read succeeded");
    check(sonde_mem_read(&mem, base + PAGES * PAGE - 8, buf, 8) == 0 &&
              same(buf, PAGES * PAGE - 8, 8),
          "last_bytes_before_hole", "failed");
    check(sonde_mem_read(&mem, base + 3 * PAGE + 5, buf, 2 * PAGE) == 0 &&
              same(buf, 3 * PAGE + 5, 2 * PAGE),
          "larger_than_a_page_direct", "wrong bytes");

    /* The target writes during the snapshot: seen after the next begin. */
    char cmd = 'w';
    if (write(to_child[1], &cmd, 1) != 1 || read(to_parent[0], &cmd, 1) != 1) return 2;
    uint8_t value = 0;
    sonde_mem_read(&mem, base + 100, &value, 1);
    check(value == expect_byte(100), "snapshot_keeps_its_copy", "0x%02x", value);
    sonde_mem_snapshot_end(&mem);
    sonde_mem_read(&mem, base + 100, &value, 1);
    check(value == 0xab, "after_end_reads_live", "0x%02x", value);
    sonde_mem_snapshot_begin(&mem);
    sonde_mem_read(&mem, base + 100, &value, 1);
    check(value == 0xab, "new_snapshot_sees_change", "0x%02x", value);
    sonde_mem_snapshot_end(&mem);

    /* More pages than the snapshot holds: the rest are read directly. */
    sonde_mem_snapshot_begin(&mem);
    reads0 = mem.reads;
    ok = true;
    for (size_t p = 1; p < PAGES && ok; p++) /* page 0 holds the 0xab */
        ok = sonde_mem_read(&mem, base + p * PAGE + 40, buf, 32) == 0 &&
             same(buf, p * PAGE + 40, 32);
    for (size_t p = 1; p < PAGES && ok; p++)
        ok = sonde_mem_read(&mem, base + p * PAGE + 80, buf, 32) == 0 &&
             same(buf, p * PAGE + 80, 32);
    uint64_t used = mem.reads - reads0;
    check(ok, "past_the_page_limit_correct", "wrong bytes");
    check(used == SONDE_MEM_SNAPSHOT_PAGES + 2 * (PAGES - 1 - SONDE_MEM_SNAPSHOT_PAGES),
          "page_limit_then_direct", "%llu reads", (unsigned long long)used);
    sonde_mem_snapshot_end(&mem);
    sonde_mem_close(&mem);

    /* This process: never cached (it would only add a copy). */
    sonde_mem_t self;
    sonde_mem_open(&self, 0);
    sonde_mem_snapshot_begin(&self);
    reads0 = self.reads;
    for (int i = 0; i < 4; i++)
        sonde_mem_read(&self, base + 8 * (size_t)i, buf, 8);
    check(self.reads - reads0 == 4, "self_not_cached", "%llu reads",
          (unsigned long long)(self.reads - reads0));
    sonde_mem_snapshot_end(&self);
    sonde_mem_close(&self);

    close(to_child[1]);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return check_exit_code();
}
