/* test_pyread_elf.c — unit test of the ELF reader (elf.c), together with
 * the maps parser's load address.
 *
 * Ground truth is this very process: a symbol of the test binary (.symtab)
 * and one of libc (.dynsym), looked up in the files and moved by the load
 * bias found in /proc/self/maps, must land on the addresses the program
 * itself sees. Then thousands of corrupted and truncated copies of the
 * binary go through the reader, which must fail cleanly (run it under
 * ASan to catch overreads). Prints "PASS name" / "FAIL name: detail";
 * exits 1 on any failure.
 */
#include "pyread/pyread_internal.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ELF_FUZZ_ROUNDS 3000
#define ELF_MAPS_MAX (1 << 20)

static int failures;

static void check(bool ok, const char *name, const char *detail)
{
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, detail);
        failures++;
    }
}

/* A function of this binary to look up by name (hidden: only in .symtab). */
int test_elf_marker_function(int x);
__attribute__((noinline)) int test_elf_marker_function(int x)
{
    return x * 3 + 1;
}

static size_t read_maps(char *text, size_t cap)
{
    int fd = open("/proc/self/maps", O_RDONLY);
    size_t used = 0;
    ssize_t n;
    while (fd >= 0 && used < cap && (n = read(fd, text + used, cap - used)) > 0)
        used += (size_t)n;
    if (fd >= 0) close(fd);
    return used;
}

/* The start of the offset-0 mapping of the file whose path ends in `suffix`. */
static bool find_mapping(const char *text, size_t len, const char *suffix, char *path,
                         uint64_t *base)
{
    const char *line = text, *end = text + len;
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t line_len = nl ? (size_t)(nl - line) : (size_t)(end - line);
        sonde_maps_line_t m;
        size_t slen = strlen(suffix);
        if (sonde_maps_parse_line(line, line_len, &m) == 0 && m.offset == 0 && m.path_len >= slen &&
            m.path_len < 4096 && memcmp(m.path + m.path_len - slen, suffix, slen) == 0) {
            memcpy(path, m.path, m.path_len);
            path[m.path_len] = 0;
            *base = m.start;
            return true;
        }
        line = nl ? nl + 1 : end;
    }
    return false;
}

static void check_symbol(const char *what, const char *path, uint64_t base, const char *symbol,
                         uint64_t truth)
{
    sonde_elf_t elf;
    uint64_t value = 0;
    char name[160], detail[200];
    int fd = open(path, O_RDONLY);
    int rc = fd < 0 ? -errno : sonde_elf_open(&elf, fd);

    snprintf(name, sizeof name, "%s: %s at its run-time address", what, symbol);
    if (rc != 0) {
        snprintf(detail, sizeof detail, "open %s: rc %d", path, rc);
        check(false, name, detail);
    } else {
        const char *names[] = {symbol};
        int found = sonde_elf_symbols(&elf, names, 1, &value);
        uint64_t addr = base - elf.lowest_load_vaddr + value;
        snprintf(detail, sizeof detail, "found %d, value %llx + bias = %llx, truth %llx", found,
                 (unsigned long long)value, (unsigned long long)addr, (unsigned long long)truth);
        check(found == 1 && addr == truth, name, detail);
        sonde_elf_close(&elf);
    }
    if (fd >= 0) close(fd);
}

static void check_real(void)
{
    static char maps[ELF_MAPS_MAX];
    char exe[4096], libc[4096], detail[200];
    uint64_t exe_base = 0, libc_base = 0;
    size_t len = read_maps(maps, sizeof maps);

    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[exe_len > 0 ? exe_len : 0] = 0;
    sonde_maps_image_t image;
    int n = sonde_maps_find_images(maps, len, exe, &image, 1);
    check(n == 1 && !image.is_libpython, "maps: this executable found", exe);
    if (n == 1) exe_base = image.base;
    check_symbol("executable .symtab", exe, exe_base, "test_elf_marker_function",
                 (uint64_t)(uintptr_t)test_elf_marker_function);

    if (find_mapping(maps, len, "/libc.so.6", libc, &libc_base))
        check_symbol("libc .dynsym", libc, libc_base, "getpid", (uint64_t)(uintptr_t)getpid);
    else
        check(false, "libc mapped", "no libc.so.6 in /proc/self/maps");

    sonde_elf_t elf;
    int fd = open(exe, O_RDONLY);
    int rc = sonde_elf_open(&elf, fd);
    uint64_t addr = 0, size = 0, off = 0;
    int text_rc = rc ? rc : sonde_elf_section(&elf, ".text", &addr, &size, &off);
    int missing_rc = rc ? rc : sonde_elf_section(&elf, ".PyRuntime", &addr, &size, &off);
    snprintf(detail, sizeof detail, "open %d, .text %d, .PyRuntime %d", rc, text_rc, missing_rc);
    check(rc == 0 && text_rc == 0 && missing_rc == -ENOENT, "sections found by name", detail);
    if (rc == 0) sonde_elf_close(&elf);
    close(fd);

    fd = open("/proc/self/maps", O_RDONLY);
    rc = sonde_elf_open(&elf, fd);
    check(rc == -ENOEXEC, "a file that is not ELF is -ENOEXEC", "");
    close(fd);
}

/* The .PyRuntime section of a CPython 3.10+ binary holds _PyRuntime. */
static void check_pyruntime_section(void)
{
    static const char *const candidates[] = {"/usr/bin/python3", "/usr/local/bin/python3"};
    char detail[200];

    for (size_t i = 0; i < SONDE_ARRAY_LEN(candidates); i++) {
        int fd = open(candidates[i], O_RDONLY);
        sonde_elf_t elf;
        if (fd < 0) continue;
        if (sonde_elf_open(&elf, fd) == 0) {
            uint64_t addr = 0, size = 0, off = 0, value = 0;
            const char *names[] = {"_PyRuntime"};
            int found = sonde_elf_symbols(&elf, names, 1, &value);
            int rc = sonde_elf_section(&elf, ".PyRuntime", &addr, &size, &off);
            if (found == 1 || rc == 0) {
                snprintf(detail, sizeof detail, "%s: symbol %llx (found %d), section %llx (rc %d)",
                         candidates[i], (unsigned long long)value, found, (unsigned long long)addr,
                         rc);
                check(found == 1 && rc == 0 && addr == value,
                      ".PyRuntime section starts at _PyRuntime", detail);
                sonde_elf_close(&elf);
                close(fd);
                return;
            }
            sonde_elf_close(&elf);
        }
        close(fd);
    }
    check(true, ".PyRuntime section starts at _PyRuntime (no CPython 3.10+ binary here)", "");
}

static void check_fuzz(void)
{
    char exe[4096], detail[200];
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[exe_len > 0 ? exe_len : 0] = 0;
    int fd = open(exe, O_RDONLY);
    off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    uint8_t *orig = size > 0 ? malloc((size_t)size) : NULL;
    uint8_t *copy = size > 0 ? malloc((size_t)size) : NULL;
    int mfd = memfd_create("elf_fuzz", 0);
    long opened = 0, looked_up = 0;

    if (orig == NULL || copy == NULL || mfd < 0 || pread(fd, orig, (size_t)size, 0) != size) {
        check(false, "fuzz setup", "cannot read the test binary");
        goto out;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, orig, sizeof eh);
    srandom(11);
    for (int round = 0; round < ELF_FUZZ_ROUNDS; round++) {
        memcpy(copy, orig, (size_t)size);
        int flips = 1 + (int)(random() % 16);
        for (int k = 0; k < flips; k++) {
            /* aim at the headers and tables the reader trusts least */
            uint64_t where;
            switch (random() % 4) {
            case 0:
                where = (uint64_t)(random() % 64);
                break;
            case 1:
                where = eh.e_phoff + (uint64_t)(random() % (eh.e_phnum * 56 + 1));
                break;
            case 2:
                where = eh.e_shoff + (uint64_t)(random() % (eh.e_shnum * 64 + 1));
                break;
            default:
                where = (uint64_t)random() % (uint64_t)size;
                break;
            }
            if (where < (uint64_t)size) copy[where] = random() % 3 ? (uint8_t)random() : 0xff;
        }
        off_t len = random() % 8 ? size : random() % size;
        if (ftruncate(mfd, 0) != 0 || pwrite(mfd, copy, (size_t)len, 0) != len) break;
        sonde_elf_t elf;
        if (sonde_elf_open(&elf, mfd) != 0) continue;
        opened++;
        const char *names[] = {"_PyRuntime", "test_elf_marker_function", "getpid"};
        uint64_t values[3];
        uint64_t a, s, o;
        looked_up += sonde_elf_symbols(&elf, names, 3, values) > 0;
        sonde_elf_section(&elf, ".PyRuntime", &a, &s, &o);
        sonde_elf_section(&elf, ".text", &a, &s, &o);
        sonde_elf_close(&elf);
    }
    snprintf(detail, sizeof detail, "%ld opened, %ld with a symbol found", opened, looked_up);
    check(opened > 0, "3000 corrupted copies of the binary read without a crash", detail);
out:
    free(orig);
    free(copy);
    if (fd >= 0) close(fd);
    if (mfd >= 0) close(mfd);
}

int main(void)
{
    check(test_elf_marker_function(1) == 4, "marker function runs", "");
    check_real();
    check_pyruntime_section();
    check_fuzz();
    return failures ? 1 : 0;
}
