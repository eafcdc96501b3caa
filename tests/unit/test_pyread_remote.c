/* test_pyread_remote.c — PEP 768's request (src/pyread/remote_exec.c),
 * written into this process's own memory through the same calls that
 * write into a target's (process_vm_writev).
 *
 * A stand-in thread state and interpreter laid out by the generated 3.14
 * and 3.15 tables: the request writes the path with its NUL, sets the
 * pending flag and the eval breaker's bit (keeping the other bits); a
 * pending request of another debugger is -EBUSY; remote debugging turned
 * off is -ENOPROTOOPT; a path too long -ENAMETOOLONG; 3.13's layout
 * -ENOTSUP; cancel clears the flag.
 */
#include "pyread/pyoffsets.h"
#include "pyread/pyread.h"

#include "check.h"

#include <stdint.h>
#include <string.h>

static _Alignas(16) uint8_t tstate[8192];
static _Alignas(16) uint8_t interp[32768];

static void put32(uint8_t *base, int32_t at, int32_t v)
{
    memcpy(base + at, &v, sizeof v);
}

static void put64(uint8_t *base, int32_t at, uint64_t v)
{
    memcpy(base + at, &v, sizeof v);
}

static uint64_t get64(const uint8_t *base, int32_t at)
{
    uint64_t v;
    memcpy(&v, base + at, sizeof v);
    return v;
}

static int32_t get32(const uint8_t *base, int32_t at)
{
    int32_t v;
    memcpy(&v, base + at, sizeof v);
    return v;
}

static void check_version(int minor)
{
    char name[96];
    const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, minor);
    if (!check(off != NULL, "layout", "no 3.%d table", minor)) return;
    sonde_pyproc_t proc;
    memset(&proc, 0, sizeof proc);
    sonde_mem_open(&proc.mem, 0);
    proc.off = off;
    memset(tstate, 0, sizeof tstate);
    memset(interp, 0, sizeof interp);
    check(off->tstate_remote_support > 0 &&
              off->tstate_remote_support + off->remote_script_path + off->remote_script_path_size <
                  (int32_t)sizeof tstate &&
              off->interp_remote_debug > 0 && off->interp_remote_debug < (int32_t)sizeof interp,
          "layout_fits", "3.%d: support at %d, remote_debug at %d", minor,
          off->tstate_remote_support, off->interp_remote_debug);
    put64(tstate, off->tstate_interp, (uint64_t)(uintptr_t)interp);
    put32(interp, off->interp_remote_debug, 1);
    put64(tstate, off->tstate_eval_breaker, 0x3);
    uint64_t addr = (uint64_t)(uintptr_t)tstate;
    int32_t support = off->tstate_remote_support;
    const char *path = "/tmp/sonde-inject-1-abc/start.py";

    int rc = sonde_pyproc_remote_exec(&proc, addr, path);
    snprintf(name, sizeof name, "3.%d_request_written", minor);
    check(rc == 0 && strcmp((const char *)tstate + support + off->remote_script_path, path) == 0 &&
              get32(tstate, support + off->remote_pending_call) == 1 &&
              get64(tstate, off->tstate_eval_breaker) ==
                  (0x3 | (uint64_t)off->eval_please_stop_bit),
          name, "rc %d, pending %d, breaker %#llx", rc,
          get32(tstate, support + off->remote_pending_call),
          (unsigned long long)get64(tstate, off->tstate_eval_breaker));
    snprintf(name, sizeof name, "3.%d_pending_seen", minor);
    check(sonde_pyproc_remote_pending(&proc, addr) == 1, name, "not pending");
    rc = sonde_pyproc_remote_exec(&proc, addr, path);
    snprintf(name, sizeof name, "3.%d_second_request_busy", minor);
    check(rc == -EBUSY, name, "rc %d", rc);
    rc = sonde_pyproc_remote_cancel(&proc, addr);
    snprintf(name, sizeof name, "3.%d_cancel_clears", minor);
    check(rc == 0 && sonde_pyproc_remote_pending(&proc, addr) == 0, name, "rc %d", rc);

    put32(interp, off->interp_remote_debug, 0);
    rc = sonde_pyproc_remote_exec(&proc, addr, path);
    snprintf(name, sizeof name, "3.%d_disabled_refused", minor);
    check(rc == -ENOPROTOOPT && get32(tstate, support + off->remote_pending_call) == 0, name,
          "rc %d", rc);
    put32(interp, off->interp_remote_debug, 1);

    char longer[1024];
    memset(longer, 'a', sizeof longer - 1);
    longer[0] = '/';
    longer[sizeof longer - 1] = 0;
    rc = sonde_pyproc_remote_exec(&proc, addr, longer);
    snprintf(name, sizeof name, "3.%d_long_path_refused", minor);
    check(rc == -ENAMETOOLONG, name, "rc %d", rc);
    sonde_mem_close(&proc.mem);
}

int main(void)
{
    check_version(14);
    check_version(15);
    sonde_pyproc_t proc;
    memset(&proc, 0, sizeof proc);
    sonde_mem_open(&proc.mem, 0);
    proc.off = sonde_pyoffsets_find(3, 13);
    int rc = sonde_pyproc_remote_exec(&proc, (uint64_t)(uintptr_t)tstate, "/x.py");
    check(rc == -ENOTSUP, "3.13_not_supported", "rc %d", rc);
    sonde_mem_close(&proc.mem);
    return check_exit_code();
}
