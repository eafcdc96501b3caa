/* elf.c — a small, bounds-checked ELF64 reader.
 *
 * Owns: sonde_elf_t. Called by proc.c when it opens another process: to
 * find the lowest PT_LOAD address (for the load bias), the symbols
 * _PyRuntime, Py_Version and PyCode_Type (.dynsym, then .symtab), and the
 * .PyRuntime section of a stripped binary. The file is hostile input: every
 * offset, size, count and string is checked against the file size and a
 * named bound before use; the file is read with pread, never mapped (a file
 * truncated under us gives an error, not SIGBUS). Nothing here runs in a
 * signal handler.
 */
#include "pyread_internal.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_MAX_SECTIONS 4096
#define ELF_MAX_SEGMENTS 256
#define ELF_MAX_TABLE (64ull << 20) /* bytes of a symbol or string table */
#define ELF_MAX_NAME 256            /* bytes of a symbol name compared */
#define ELF_PAGE 4096ull

/* Reads len bytes at file offset off (pyread_internal.h). */
int sonde_elf_pread(const sonde_elf_t *elf, uint64_t off, void *buf, size_t len)
{
    size_t done = 0;

    if (off > elf->file_size || len > elf->file_size - off) return -ENOEXEC;
    while (done < len) {
        ssize_t n = pread(elf->fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) return -ENOEXEC; /* truncated since we looked */
        done += (size_t)n;
    }
    return 0;
}

/* Reads a table of `size` bytes at `off` into a new buffer with a NUL
 * after it. */
static int elf_read_table(const sonde_elf_t *elf, uint64_t off, uint64_t size, char **out)
{
    *out = NULL;
    if (size > ELF_MAX_TABLE) return -E2BIG;
    char *buf = malloc((size_t)size + 1);
    if (buf == NULL) return -ENOMEM;
    int rc = sonde_elf_pread(elf, off, buf, (size_t)size);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[size] = 0;
    *out = buf;
    return 0;
}

static const Elf64_Shdr *elf_shdr(const sonde_elf_t *elf, uint32_t index)
{
    return index < elf->shnum ? &((const Elf64_Shdr *)elf->shdrs)[index] : NULL;
}

static int elf_read_segments(sonde_elf_t *elf, const Elf64_Ehdr *eh)
{
    Elf64_Phdr ph;

    if (eh->e_phnum > ELF_MAX_SEGMENTS || eh->e_phentsize != sizeof ph) return -ENOEXEC;
    for (uint32_t i = 0; i < eh->e_phnum; i++) {
        int rc = sonde_elf_pread(elf, eh->e_phoff + (uint64_t)i * sizeof ph, &ph, sizeof ph);
        if (rc != 0) return rc;
        if (ph.p_type != PT_LOAD) continue;
        uint64_t vaddr = ph.p_vaddr & ~(ELF_PAGE - 1);
        if (!elf->has_load || vaddr < elf->lowest_load_vaddr) elf->lowest_load_vaddr = vaddr;
        elf->has_load = true;
    }
    return elf->has_load ? 0 : -ENOEXEC;
}

static int elf_read_sections(sonde_elf_t *elf, const Elf64_Ehdr *eh)
{
    if (eh->e_shnum == 0 || eh->e_shoff == 0)
        return 0; /* no section headers: symbols can't be looked up */
    if (eh->e_shnum > ELF_MAX_SECTIONS || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shstrndx >= eh->e_shnum)
        return -ENOEXEC;
    size_t len = (size_t)eh->e_shnum * sizeof(Elf64_Shdr);
    elf->shdrs = malloc(len);
    if (elf->shdrs == NULL) return -ENOMEM;
    int rc = sonde_elf_pread(elf, eh->e_shoff, elf->shdrs, len);
    if (rc != 0) return rc;
    elf->shnum = eh->e_shnum;
    const Elf64_Shdr *strs = elf_shdr(elf, eh->e_shstrndx);
    if (strs->sh_type != SHT_STRTAB) return -ENOEXEC;
    elf->shstrtab_len = strs->sh_size;
    return elf_read_table(elf, strs->sh_offset, strs->sh_size, &elf->shstrtab);
}

/* Reads the headers of the ELF file open on fd (pyread_internal.h). */
int sonde_elf_open(sonde_elf_t *elf, int fd)
{
    Elf64_Ehdr eh;
    struct stat st;
    int rc = 0;

    memset(elf, 0, sizeof *elf);
    elf->fd = fd;
    if (fstat(fd, &st) != 0) return -errno;
    if (!S_ISREG(st.st_mode)) return -ENOEXEC;
    elf->file_size = (uint64_t)st.st_size;
    rc = sonde_elf_pread(elf, 0, &eh, sizeof eh);
    if (rc != 0) goto error;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
        rc = -ENOEXEC;
        goto error;
    }
    elf->type = eh.e_type;
    rc = elf_read_segments(elf, &eh);
    if (rc != 0) goto error;
    rc = elf_read_sections(elf, &eh);
    if (rc != 0) goto error;
    return 0;

error:
    sonde_elf_close(elf);
    elf->fd = fd;
    return rc;
}

/* Frees what sonde_elf_open allocated; the fd stays open. */
void sonde_elf_close(sonde_elf_t *elf)
{
    free(elf->shdrs);
    free(elf->shstrtab);
    elf->shdrs = NULL;
    elf->shstrtab = NULL;
    elf->shnum = 0;
}

static const char *elf_section_name(const sonde_elf_t *elf, const Elf64_Shdr *sh)
{
    if (elf->shstrtab == NULL || sh->sh_name >= elf->shstrtab_len) return "";
    return elf->shstrtab + sh->sh_name;
}

/* Finds a section by name (pyread_internal.h). */
int sonde_elf_section(sonde_elf_t *elf, const char *name, uint64_t *addr, uint64_t *size,
                      uint64_t *file_offset)
{
    for (uint32_t i = 0; i < elf->shnum; i++) {
        const Elf64_Shdr *sh = elf_shdr(elf, i);
        if (strcmp(elf_section_name(elf, sh), name) != 0) continue;
        *addr = sh->sh_addr;
        *size = sh->sh_size;
        *file_offset = sh->sh_offset;
        return 0;
    }
    return -ENOENT;
}

/* Looks names up in one symbol table section; returns how many new ones
 * were found. */
static int elf_symbols_in(sonde_elf_t *elf, const Elf64_Shdr *symtab, const char *const *names,
                          int n, uint64_t *values)
{
    const Elf64_Shdr *strtab = elf_shdr(elf, symtab->sh_link);
    char *syms = NULL, *strs = NULL;
    int found = 0;

    if (strtab == NULL || strtab->sh_type != SHT_STRTAB || symtab->sh_entsize != sizeof(Elf64_Sym))
        return 0;
    int rc = elf_read_table(elf, symtab->sh_offset, symtab->sh_size, &syms);
    if (rc == 0) rc = elf_read_table(elf, strtab->sh_offset, strtab->sh_size, &strs);
    if (rc != 0) {
        free(syms);
        return rc;
    }
    uint64_t count = symtab->sh_size / sizeof(Elf64_Sym);
    for (uint64_t i = 0; i < count; i++) {
        Elf64_Sym sym;
        memcpy(&sym, syms + i * sizeof sym, sizeof sym);
        if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || sym.st_name >= strtab->sh_size ||
            ELF64_ST_TYPE(sym.st_info) == STT_TLS)
            continue;
        const char *sym_name = strs + sym.st_name; /* NUL-terminated: see above */
        for (int k = 0; k < n; k++) {
            if (values[k] == 0 && strncmp(sym_name, names[k], ELF_MAX_NAME) == 0) {
                values[k] = sym.st_value;
                found++;
            }
        }
    }
    free(syms);
    free(strs);
    return found;
}

/* Looks n symbols up in .dynsym, then .symtab (pyread_internal.h). */
int sonde_elf_symbols(sonde_elf_t *elf, const char *const *names, int n, uint64_t *values)
{
    static const uint32_t kinds[] = {SHT_DYNSYM, SHT_SYMTAB};
    int found = 0;

    for (int k = 0; k < n; k++)
        values[k] = 0;
    for (size_t kind = 0; kind < SONDE_ARRAY_LEN(kinds) && found < n; kind++) {
        for (uint32_t i = 0; i < elf->shnum && found < n; i++) {
            const Elf64_Shdr *sh = elf_shdr(elf, i);
            if (sh->sh_type != kinds[kind]) continue;
            int rc = elf_symbols_in(elf, sh, names, n, values);
            if (rc < 0) return rc;
            found += rc;
        }
    }
    return found;
}
