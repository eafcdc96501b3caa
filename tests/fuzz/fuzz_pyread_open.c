/* fuzz_pyread_open.c — libFuzzer target: opening a reader of another
 * process (sonde_pyproc_open_pid, src/pyread/proc.c), the first thing
 * `sonde attach` and `dump` do with a pid: /proc/PID/maps and exe, the
 * ELF file of the executable or libpython (through /proc/PID/root), the
 * load bias, _PyRuntime (symbol or .PyRuntime section), the version
 * (_Py_DebugOffsets, Py_Version, .rodata's version string or the file
 * name) and on 3.13+ the layout taken from the target's _Py_DebugOffsets;
 * then, once open, its threads and one walk of each.
 *
 * Input (fakeproc.h serves it as the process): one byte of length and the
 * /proc/PID/exe path (length 255: unreadable), two bytes of length and the
 * maps text, four bytes of length and the ELF file (every mapped file),
 * then the memory image at FAKE_BASE. Checked: open fails with one of its
 * documented codes (the version kept for -ENOTSUP) and leaves nothing
 * allocated, or gives a layout of the version it found and a runtime
 * address, which the in-process reader (open_self) opens too and reads the
 * same threads from; threads and frames within their bounds; no descriptor leaks
 * (every memory file handed out for maps or the ELF file is closed again:
 * checked through /proc/self/fd every 100 inputs).
 *
 * Seeds: SONDE_FUZZ_WRITE_SEEDS=DIR build/fuzz/bin/fuzz_pyread_open writes
 * a process of every version (`make fuzz-seeds`).
 */
#include "fakeproc.h"

#include <dirent.h>

#define FUZZ_MAX_THREADS 8

/* Descriptors of this process open on the fake process's files (the
 * memory files fakeproc.h hands out for maps and the ELF file). */
static int count_fake_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[300], target[300] = "";
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) target[len] = 0;
        n += strncmp(target, "/memfd:sonde-fuzz", 17) == 0;
    }
    closedir(d);
    return n;
}

static void walk_threads(sonde_pyproc_t *proc)
{
    sonde_pythread_t threads[FUZZ_MAX_THREADS], again[FUZZ_MAX_THREADS];
    int n = sonde_pyproc_threads(proc, threads, FUZZ_MAX_THREADS);
    fuzz_assert(n <= FUZZ_MAX_THREADS, "%d threads", n);

    /* The reader the in-process sampler opens, told the version and the
     * addresses open_pid found, reads the same threads. */
    sonde_pyproc_t self;
    unsigned long hex = (unsigned long)proc->version_major << 24 |
                        (unsigned long)proc->version_minor << 16 |
                        (unsigned long)proc->version_micro << 8;
    int rc = sonde_pyproc_open_self(&self, hex, proc->runtime_addr, proc->code_type_addr);
    fuzz_assert(rc == 0, "open_self refuses what open_pid opened: %d", rc);
    self.pthread_tid_offset = proc->pthread_tid_offset;
    int n_self = sonde_pyproc_threads(&self, again, FUZZ_MAX_THREADS);
    fuzz_assert(n_self == n, "%d threads, then %d", n, n_self);
    fuzz_assert(self.interp_addr == proc->interp_addr, "another interpreter");
    for (int i = 0; i < n; i++)
        fuzz_assert(again[i].tstate == threads[i].tstate &&
                        again[i].native_tid == threads[i].native_tid &&
                        again[i].holds_gil == threads[i].holds_gil,
                    "thread %d differs", i);
    sonde_pyproc_close(&self);
    for (int i = 0; i < n; i++) {
        sonde_pyframe_iter_t it;
        sonde_pyframe_t frame;
        if (sonde_pyframe_iter_begin(proc, threads[i].tstate, &it) != 0) continue;
        int depth = 0;
        while (sonde_pyframe_iter_next(&it, &frame) == 1) {
            fuzz_assert(++depth <= SONDE_PY_MAX_DEPTH, "too deep");
            fuzz_assert(sonde_pyproc_code(proc, frame.code_id) != NULL, "an unknown code id");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned long inputs;
    fuzz_cursor_t c = fuzz_cursor(data, size);
    size_t exe_len = (size_t)fuzz_uint(&c, 1), len = 0;
    char *exe = NULL; /* 255: /proc/PID/exe unreadable */
    if (exe_len != 255) {
        const uint8_t *exe_bytes = fuzz_bytes(&c, exe_len, &len);
        if ((exe = strndup((const char *)exe_bytes, len)) == NULL) abort();
    }
    size_t maps_len = (size_t)fuzz_uint(&c, 2);
    const uint8_t *maps = fuzz_bytes(&c, maps_len, &maps_len);
    size_t elf_len = (size_t)fuzz_uint(&c, 4);
    const uint8_t *elf = fuzz_bytes(&c, elf_len, &elf_len);
    const uint8_t *image = fuzz_bytes(&c, SIZE_MAX, &len);

    fake_exe = exe;
    fake_maps = (const char *)maps;
    fake_maps_len = maps_len;
    fake_file = elf;
    fake_file_len = elf_len;
    fake_mem = image;
    fake_mem_len = len;

    sonde_pyproc_t proc;
    int rc = sonde_pyproc_open_pid(&proc, FAKE_PID);
    if (rc == 0) {
        fuzz_assert(proc.off != NULL && proc.codes != NULL, "open without a layout");
        fuzz_assert(SONDE_PY_SUPPORTED(proc.version_major, proc.version_minor) &&
                        proc.off->minor == proc.version_minor,
                    "the layout of 3.%d for version %d.%d", proc.off->minor, proc.version_major,
                    proc.version_minor);
        fuzz_assert(proc.runtime_addr != 0, "no runtime address");
        walk_threads(&proc);
    } else {
        fuzz_assert(rc == -ENOEXEC || rc == -ENOTSUP || rc == -EACCES || rc == -EPERM ||
                        rc == -ESRCH || rc == -EFAULT || rc == -E2BIG || rc == -ENOMEM ||
                        rc == -ENAMETOOLONG,
                    "open: %d", rc);
        fuzz_assert(proc.codes == NULL && proc.own_layout == NULL, "a failed open kept memory");
        if (rc == -ENOTSUP && proc.version_major != 0) {
            char line[256];
            sonde_pyversion_unsupported_text(line, sizeof line, proc.version_major,
                                             proc.version_minor, proc.version_micro);
            fuzz_assert(line[0] && !strchr(line, '\n'), "no one-line note");
        }
    }
    sonde_pyproc_close(&proc);
    free(exe);
    fake_exe = NULL;
    fake_maps = NULL;
    fake_file = NULL;
    fake_mem = NULL;
    if (++inputs % 100 == 0) {
        int fds = count_fake_fds();
        fuzz_assert(fds == 0, "%d descriptors left open on the process's files", fds);
    }
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

/* Appends n little-endian bytes of value. */
static void put_le(fake_image_t *seed, uint64_t value, int n)
{
    uint8_t bytes[8];
    for (int i = 0; i < n; i++)
        bytes[i] = (uint8_t)(value >> (8 * i));
    fake_append(seed, bytes, (size_t)n);
}

static void write_seed(const char *dir, const char *name, const char *exe, const char *maps,
                       const fake_elf_spec_t *spec, const fake_image_t *mem)
{
    fake_image_t seed = {NULL, 0, 0}, elf = {NULL, 0, 0};
    fake_elf(&elf, spec);
    put_le(&seed, exe ? strlen(exe) : 255, 1);
    if (exe) fake_append(&seed, exe, strlen(exe));
    put_le(&seed, strlen(maps), 2);
    fake_append(&seed, maps, strlen(maps));
    put_le(&seed, elf.len, 4);
    fake_append(&seed, elf.bytes, elf.len);
    fake_append(&seed, mem->bytes, mem->len);
    fake_write_seed(dir, name, seed.bytes, seed.len);
    free(seed.bytes);
    free(elf.bytes);
}

static void write_seeds(const char *dir)
{
    /* mapped where _PyRuntime (FAKE_RUNTIME_VADDR) lands on FAKE_BASE */
    unsigned long long base = FAKE_BASE - FAKE_RUNTIME_VADDR;
    for (size_t v = 0; v < SONDE_ARRAY_LEN(fake_minors); v++) {
        int minor = fake_minors[v];
        const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, minor);
        fake_image_t mem = {NULL, 0, 0};
        fake_world(&mem, off, FAKE_WORLD_PLAIN);
        /* Py_Version (3.11+), after the world */
        size_t version = fake_alloc(&mem, 8);
        fake_put64(&mem, version, 0, 3ull << 24 | (uint64_t)minor << 16 | 7u << 8 | 0xf0u);
        char exe[64], maps[512], rodata[64], name[64];
        snprintf(exe, sizeof exe, "/usr/bin/python3.%d", minor);
        snprintf(rodata, sizeof rodata, "GCC 12.2.0; Python 3.%d.7", minor);
        fake_elf_spec_t spec = {true, false, 0, false, rodata, false};
        if (minor >= 11) spec.py_version = FAKE_RUNTIME_VADDR + version;
        /* the executable, linked statically */
        snprintf(maps, sizeof maps,
                 "%llx-%llx r--p 00000000 08:01 42 %s\n"
                 "%llx-%llx rw-p 00000000 00:00 0 [heap]\n",
                 base, base + 0x10000, exe, base + 0x20000, base + 0x30000);
        snprintf(name, sizeof name, "3.%d-exe", minor);
        write_seed(dir, name, exe, maps, &spec, &mem);
        if (minor % 3 == 0 || minor == SONDE_PY_MINOR_MAX) { /* a few, the newest among them */
            /* libpython, stripped: .PyRuntime section; no exe link */
            snprintf(maps, sizeof maps,
                     "%llx-%llx r--p 00000000 08:01 42 /usr/bin/python3\n"
                     "%llx-%llx r--p 00000000 08:01 43 /opt/lib/libpython3.%d.so.1.0 (deleted)\n",
                     base + 0x100000, base + 0x110000, base, base + 0x10000, minor);
            fake_elf_spec_t stripped = {false, false, 0, true, rodata, false};
            snprintf(name, sizeof name, "3.%d-libpython-stripped", minor);
            write_seed(dir, name, NULL, maps, &stripped, &mem);
        }
        free(mem.bytes);
    }
    /* Python 3.6: a libpython without _PyRuntime, named by its file */
    fake_image_t none = {NULL, 0, 0};
    fake_alloc(&none, 64);
    fake_elf_spec_t old = {false, false, 0, false, "3.6.15", false};
    write_seed(dir, "3.6-libpython", "/usr/bin/python3.6",
               "10000-20000 r--p 00000000 08:01 7 /usr/lib/libpython3.6m.so.1.0\n", &old, &none);
    free(none.bytes);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("SONDE_FUZZ_WRITE_SEEDS");
    if (dir && *dir) {
        write_seeds(dir);
        exit(0);
    }
    return 0;
}
