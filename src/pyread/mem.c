/* mem.c — fault-safe reads of a process's memory, this one or another.
 *
 * Owns: sonde_mem_t. Called by every reader in src/pyread/ (the in-process
 * sampler thread reading its own interpreter, and the attach reader reading
 * another process). Reads never dereference the address themselves: they go
 * through process_vm_readv(2) (sonde_prim_mem_read), or pread(2) on
 * /proc/PID/mem (opened by sonde_prim_proc_open) when the kernel
 * or a seccomp filter refuses process_vm_readv (ENOSYS/EPERM), so a freed or
 * unmapped address gives -EFAULT instead of a crash. A source opened on
 * this process follows it into a child after fork() (a pthread_atfork
 * handler bumps a generation counter; the next read takes the new pid), so
 * a child never reads its parent. The attach reader may turn on a page
 * snapshot (sonde_mem_snapshot_begin/end) that serves small reads from
 * whole pages read once per walk. Nothing here runs in a signal handler
 * (reads are free of allocation and locks; snapshot_begin allocates once).
 */
#include "pyread.h"

#include "../prim/prim.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Addresses below one page are NULL-ish pointers: refuse them without a
 * system call. Above 2^57 nothing is user space on any Linux we run on. */
#define MEM_LOWEST_ADDR 4096ull
#define MEM_ADDR_LIMIT (1ull << 57)
/* Bound on short-read retries through /proc/PID/mem. */
#define MEM_PREAD_RETRIES 4

/* Forks seen by this process (incremented in each child). */
static atomic_uint mem_forks;
static pthread_once_t mem_atfork_once = PTHREAD_ONCE_INIT;

static void mem_after_fork_in_child(void)
{
    atomic_fetch_add_explicit(&mem_forks, 1, memory_order_relaxed);
}

static void mem_register_atfork(void)
{
    pthread_atfork(NULL, NULL, mem_after_fork_in_child);
}

/* In a child after fork(): read the child, not the parent. */
static void mem_follow_fork(sonde_mem_t *mem)
{
    mem->fork_generation = atomic_load_explicit(&mem_forks, memory_order_relaxed);
    mem->pid = getpid();
    sonde_prim_kept_close(&mem->procmem); /* it names the parent's memory */
}

/* Opens a memory source; pid 0 means this process. Nothing is opened until
 * a read needs the /proc fallback. Returns 0, or -ESRCH when the process
 * does not exist. */
int sonde_mem_open(sonde_mem_t *mem, pid_t pid)
{
    mem->self = pid <= 0 || pid == getpid();
    if (mem->self) pthread_once(&mem_atfork_once, mem_register_atfork);
    mem->fork_generation = atomic_load_explicit(&mem_forks, memory_order_relaxed);
    mem->pid = mem->self ? getpid() : pid;
    mem->procmem = SONDE_PRIM_KEPT_FD_NONE;
    mem->use_procmem = false;
    mem->reads = 0;
    mem->faults = 0;
    mem->pages = NULL;
    mem->direct = false;
    if (!mem->self && kill(pid, 0) != 0 && errno == ESRCH) return -ESRCH;
    return 0;
}

/* ---- direct mode (the memory profiler reading its own thread) -------------- */

int sonde_mem_open_direct(sonde_mem_t *mem)
{
    sonde_mem_open(mem, 0);
    mem->direct = true;
    return 0;
}

static int mem_read_copy(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len)
{
    if (addr < MEM_LOWEST_ADDR || addr >= MEM_ADDR_LIMIT || len >= MEM_ADDR_LIMIT - addr) {
        mem->faults++;
        return -EFAULT;
    }
    memcpy(buf, (const void *)(uintptr_t)addr, len);
    mem->reads++;
    return 0;
}

static int mem_open_procmem(sonde_mem_t *mem)
{
    if (sonde_prim_kept_get(&mem->procmem) >= 0) return 0;
    if (mem->self && sonde_prim_kept_quiet()) return -EAGAIN; /* see prim.h */
    int fd = sonde_prim_proc_open(mem->pid, "mem");
    if (fd < 0) return fd;
    return sonde_prim_kept_adopt(&mem->procmem, fd, mem->self);
}

static int mem_gone_or(const sonde_mem_t *mem, int err)
{
    if (kill(mem->pid, 0) != 0 && errno == ESRCH) return -ESRCH;
    return err;
}

static int mem_read_procmem(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;
    int fd = sonde_prim_kept_get(&mem->procmem);
    if (fd < 0) return fd;

    for (int tries = 0; done < len && tries < MEM_PREAD_RETRIES; tries++) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(addr + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno == EIO ? -EFAULT : mem_gone_or(mem, -errno);
        }
        if (n == 0) return mem_gone_or(mem, -EFAULT);
        done += (size_t)n;
    }
    return done == len ? 0 : -EFAULT;
}

/* ---- page snapshot ---------------------------------------------------------- */

#define MEM_PAGE_SIZE 4096ull

struct sonde_mem_pages {
    bool active;                             /* between begin and end */
    int n;                                   /* pages held */
    uint64_t addr[SONDE_MEM_SNAPSHOT_PAGES]; /* page address; bit 0 set: unreadable */
    uint8_t data[SONDE_MEM_SNAPSHOT_PAGES][MEM_PAGE_SIZE];
};

static int mem_read_syscall(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len);

/* The copy of the page at page_addr, read on first use; NULL when it is
 * unreadable or the snapshot is full. */
static const uint8_t *mem_snapshot_page(sonde_mem_t *mem, uint64_t page_addr)
{
    struct sonde_mem_pages *pages = mem->pages;
    for (int i = 0; i < pages->n; i++) {
        if (pages->addr[i] == page_addr) return pages->data[i];
        if (pages->addr[i] == (page_addr | 1)) return NULL;
    }
    if (pages->n >= SONDE_MEM_SNAPSHOT_PAGES) return NULL;
    int slot = pages->n++;
    if (mem_read_syscall(mem, page_addr, pages->data[slot], MEM_PAGE_SIZE) != 0) {
        pages->addr[slot] = page_addr | 1;
        mem->faults--; /* a probe, not a failed read of the caller's */
        return NULL;
    }
    pages->addr[slot] = page_addr;
    return pages->data[slot];
}

/* Serves a read from the snapshot: 0, or -EAGAIN to read direct. */
static int mem_snapshot_read(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len)
{
    uint64_t first = addr & ~(MEM_PAGE_SIZE - 1);
    uint64_t last = (addr + len - 1) & ~(MEM_PAGE_SIZE - 1);
    const uint8_t *page0 = mem_snapshot_page(mem, first);
    if (!page0) return -EAGAIN;
    if (first == last) {
        memcpy(buf, page0 + (addr - first), len);
        return 0;
    }
    const uint8_t *page1 = mem_snapshot_page(mem, last);
    if (!page1) return -EAGAIN;
    size_t head = (size_t)(last - addr);
    memcpy(buf, page0 + (addr - first), head);
    memcpy((uint8_t *)buf + head, page1, len - head);
    return 0;
}

int sonde_mem_snapshot_begin(sonde_mem_t *mem)
{
    if (!mem->pages) {
        mem->pages = malloc(sizeof *mem->pages);
        if (!mem->pages) return -ENOMEM;
    }
    mem->pages->active = true;
    mem->pages->n = 0;
    return 0;
}

void sonde_mem_snapshot_end(sonde_mem_t *mem)
{
    if (mem->pages) {
        mem->pages->active = false;
        mem->pages->n = 0;
    }
}

/* Reads exactly len bytes at addr into buf. Returns 0, -EFAULT for an
 * unmapped or partially mapped range, -ESRCH when the process is gone, or
 * -EPERM/-EACCES when reading is not permitted; on error buf may hold part
 * of the data. Never faults the caller. */
int sonde_mem_read(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len)
{
    if (len == 0) return 0;
    if (mem->direct) return mem_read_copy(mem, addr, buf, len);
    if (mem->pages && mem->pages->active && len <= MEM_PAGE_SIZE && addr >= MEM_LOWEST_ADDR &&
        addr < MEM_ADDR_LIMIT - MEM_PAGE_SIZE && !mem->self &&
        mem_snapshot_read(mem, addr, buf, len) == 0)
        return 0;
    return mem_read_syscall(mem, addr, buf, len);
}

static int mem_read_syscall(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len)
{
    int rc = 0;

    if (SONDE_UNLIKELY(mem->self && mem->fork_generation !=
                                        atomic_load_explicit(&mem_forks, memory_order_relaxed)))
        mem_follow_fork(mem);
    if (addr < MEM_LOWEST_ADDR || addr >= MEM_ADDR_LIMIT || len >= MEM_ADDR_LIMIT - addr) {
        rc = -EFAULT;
        goto error;
    }
    if (!mem->use_procmem) {
        ssize_t n = sonde_prim_mem_read(mem->pid, addr, buf, len);
        if (n == (ssize_t)len) {
            mem->reads++;
            return 0;
        }
        if (n >= 0) {
            rc = -EFAULT;
            goto error;
        }
        rc = (int)n;
        if (rc != -ENOSYS && rc != -EPERM) goto error;
        /* Refused wholesale (seccomp, old kernel): try /proc/PID/mem once,
         * and keep using it if it opens. */
        if (mem_open_procmem(mem) != 0) goto error;
        mem->use_procmem = true;
    }
    /* (Re)opened after a fork, or when the program closed it. */
    if ((rc = mem_open_procmem(mem)) != 0) goto error;
    rc = mem_read_procmem(mem, addr, buf, len);
    if (rc != 0) goto error;
    mem->reads++;
    return 0;

error:
    mem->faults++;
    return rc;
}

/* Releases the /proc fallback descriptor, if any. Safe to call twice. */
void sonde_mem_close(sonde_mem_t *mem)
{
    sonde_prim_kept_close(&mem->procmem);
    free(mem->pages);
    mem->pages = NULL;
}
