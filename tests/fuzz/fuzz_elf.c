/* fuzz_elf.c — libFuzzer target: the ELF reader (src/pyread/elf.c) that
 * the attach reader runs on the executable and libpython of the process
 * it attaches to (any file a process can map).
 *
 * Input: the file. It is written to a memory file (memfd) that the reader
 * opens as it opens a real one, then the reader looks up the symbols and
 * sections the attach reader asks for and reads a section's bytes.
 * Checked: open fails cleanly or gives a PT_LOAD base and section headers
 * within their bounds; a section found lies in a readable range or its
 * read fails cleanly; symbol look-ups return a count within 0..n with the
 * values of the found ones non-zero; nothing leaks (LeakSanitizer).
 *
 * Seeds: SONDE_FUZZ_WRITE_SEEDS=DIR build/fuzz/bin/fuzz_elf writes small
 * ELF files shaped like libpython (symbols in .dynsym or .symtab, a
 * stripped one with its .PyRuntime section, one without section headers)
 * into DIR (`make fuzz-seeds`).
 */
#include "fakeproc.h"

#define FUZZ_SECTION_READ_MAX (1u << 20)

static int elf_fd = -1;

static void write_seeds(const char *dir)
{
    static const struct {
        const char *name;
        fake_elf_spec_t spec;
    } seeds[] = {
        {"dynsym", {true, false, 0x1800, false, "3.11.7", false}},
        {"symtab", {false, true, 0, false, NULL, false}},
        {"stripped", {false, false, 0, true, "/build/Python-3.9.18", false}},
        {"no_sections", {true, true, 0, false, NULL, true}},
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(seeds); i++) {
        fake_image_t f = {NULL, 0, 0};
        fake_elf(&f, &seeds[i].spec);
        fake_write_seed(dir, seeds[i].name, f.bytes, f.len);
        free(f.bytes);
    }
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
    elf_fd = memfd_create("sonde-fuzz-elf", MFD_CLOEXEC);
    if (elf_fd < 0) {
        perror("memfd_create");
        abort();
    }
    return 0;
}

static void check_section(sonde_elf_t *elf, const char *name)
{
    uint64_t addr = 0, size = 0, file_offset = 0;
    int rc = sonde_elf_section(elf, name, &addr, &size, &file_offset);
    fuzz_assert(rc == 0 || rc == -ENOENT, "section %s: %d", name, rc);
    if (rc != 0 || size > FUZZ_SECTION_READ_MAX) return;
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL) abort();
    rc = sonde_elf_pread(elf, file_offset, buf, (size_t)size);
    fuzz_assert(rc == 0 ? file_offset + size <= elf->file_size : rc == -ENOEXEC,
                "section %s [%llu, +%llu) of a %llu-byte file: %d", name,
                (unsigned long long)file_offset, (unsigned long long)size,
                (unsigned long long)elf->file_size, rc);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"_PyRuntime", "Py_Version", "PyCode_Type"};
    if (ftruncate(elf_fd, 0) != 0 || pwrite(elf_fd, data, size, 0) != (ssize_t)size) abort();

    sonde_elf_t elf;
    int rc = sonde_elf_open(&elf, elf_fd);
    if (rc != 0) {
        fuzz_assert(rc == -ENOEXEC || rc == -E2BIG || rc == -ENOMEM, "open: %d", rc);
        fuzz_assert(elf.shdrs == NULL && elf.shstrtab == NULL, "a failed open kept its tables");
        return 0;
    }
    fuzz_assert(elf.has_load && (elf.lowest_load_vaddr & 4095) == 0, "no page-aligned PT_LOAD");
    fuzz_assert(elf.shnum <= 4096, "%u sections", elf.shnum);
    fuzz_assert(elf.shnum == 0 || elf.shstrtab != NULL, "sections without their names");

    uint64_t values[3] = {1, 1, 1};
    int found = sonde_elf_symbols(&elf, names, 3, values);
    if (found >= 0) {
        int nonzero = 0;
        for (int k = 0; k < 3; k++)
            nonzero += values[k] != 0;
        fuzz_assert(found <= 3 && nonzero == found, "%d found, %d values", found, nonzero);
    } else {
        fuzz_assert(found == -ENOEXEC || found == -E2BIG || found == -ENOMEM, "symbols: %d", found);
    }
    check_section(&elf, ".PyRuntime");
    check_section(&elf, ".rodata");
    check_section(&elf, "");
    sonde_elf_close(&elf);
    return 0;
}
