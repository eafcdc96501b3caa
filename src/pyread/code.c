/* code.c — the code-object cache: address -> code id and what a sample
 * needs about the code (names, first line, line table, call classification).
 *
 * Owns: struct sonde_pycode_cache (proc->codes) and the code ids. Called by
 * frames.c for every sampled frame, and by proc.c (create/free and the
 * public accessors). Runs in a normal thread (the sampler thread or the
 * attach tool), never in a signal handler: it allocates when it meets a new
 * code object and when its tables grow.
 *
 * Per frame a sample costs at most one read here: the code object's
 * header, which holds every pointer the cache is keyed on, compared once
 * per frame walk (a recursion re-uses the comparison). A hit compares that
 * header with the cached copy (type, filename, name, qualname, line table,
 * bytecode object or length, first line); a code object freed and replaced
 * at the same address fails the comparison and is resolved again under a
 * new id. Resolving reads the strings, a private copy of the line table and
 * a snapshot of the bytecode, from which a bitmap of call-family code units
 * is kept (calls.c). Up to 3.10 co_code is immutable. From 3.11 co_code_adaptive is
 * quickened in place, but a specialised instruction stays in its base
 * family and keeps its inline cache size, so one snapshot classifies it for
 * good; INSTRUMENTED_LINE / INSTRUMENTED_INSTRUCTION (3.12+) are resolved
 * to the opcode they hide through the code's _co_monitoring data.
 */
#include "pyread_internal.h"

#include <stdlib.h>
#include <string.h>

#define CODE_MAX_IDS (1u << 20) /* code objects one reader tracks */
#define CODE_BLOCK_SHIFT 10     /* infos per block: 1024 */
#define CODE_BLOCK_SIZE (1u << CODE_BLOCK_SHIFT)
#define CODE_INITIAL_SLOTS 1024  /* power of two */
#define CODE_MONITORING_READ 128 /* bytes of _PyCoMonitoringData read */
#define CODE_TYPE_NAME_MAX 8     /* "code" plus NUL, with room */
#define CODE_LINE_ENTRY_MIN 2    /* bytes per line-data entry (3.14+: 2 to 5) */
#define CODE_LINE_ENTRY_MAX 8

/* The header fields a cached entry is validated against. */
struct code_sig {
    uint64_t type;
    uint64_t filename;
    uint64_t name;
    uint64_t qualname;
    uint64_t linetable;
    uint64_t bytecode; /* co_code object (<=3.10) */
    uint64_t n_units;  /* ob_size (3.11+) */
    int64_t firstlineno;
};

struct code_info {
    sonde_pycode_t pub; /* strings owned by the cache's string set */
    uint8_t *linetable; /* owned; private copy */
    size_t linetable_len;
    uint8_t *call_bits; /* owned; one bit per code unit */
    uint32_t n_units;
    int minor;
    int64_t memo_offset; /* last offset looked up, -1 = none */
    int memo_line;
};

struct code_slot {
    uint64_t addr; /* 0 = empty */
    uint32_t id;
    uint64_t checked_walk; /* walk in which the header was last compared */
    struct code_sig sig;
};

struct sonde_pycode_cache {
    struct code_slot *slots; /* owned; open addressing, linear probing */
    uint32_t slot_cap;       /* power of two */
    uint32_t slot_used;
    struct code_info **blocks; /* owned; blocks of CODE_BLOCK_SIZE infos, so
                                  that sonde_pycode_t pointers stay put */
    uint32_t block_cap;
    uint32_t count;      /* ids handed out */
    char **strings;      /* owned; interned UTF-8 names */
    uint32_t string_cap; /* power of two, 0 when empty */
    uint32_t string_used;
    uint32_t header_len; /* bytes of code header to read */
    uint64_t walk;       /* current frame walk, see sonde_pycode_new_walk */
};

/* ---- small helpers ------------------------------------------------------- */

static uint64_t code_rd64(const uint8_t *bytes, int32_t at)
{
    uint64_t value = 0;
    if (at >= 0) memcpy(&value, bytes + at, sizeof value);
    return value;
}

static int32_t code_rd32(const uint8_t *bytes, int32_t at)
{
    int32_t value = 0;
    if (at >= 0) memcpy(&value, bytes + at, sizeof value);
    return value;
}

static uint64_t code_hash_addr(uint64_t addr)
{
    addr ^= addr >> 33;
    addr *= 0xff51afd7ed558ccdull;
    addr ^= addr >> 33;
    return addr;
}

static uint64_t code_hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static struct code_info *code_info_at(struct sonde_pycode_cache *cache, uint32_t id)
{
    return &cache->blocks[id >> CODE_BLOCK_SHIFT][id & (CODE_BLOCK_SIZE - 1)];
}

static void code_sig_from(const sonde_pyoffsets_t *off, const uint8_t *header, struct code_sig *sig)
{
    memset(sig, 0, sizeof *sig);
    sig->type = code_rd64(header, off->ob_type);
    sig->filename = code_rd64(header, off->code_filename);
    sig->name = code_rd64(header, off->code_name);
    sig->qualname = code_rd64(header, off->code_qualname);
    sig->linetable = code_rd64(header, off->code_linetable);
    sig->bytecode = code_rd64(header, off->code_code);
    if (off->code_code_adaptive >= 0) sig->n_units = code_rd64(header, off->ob_size);
    sig->firstlineno = code_rd32(header, off->code_firstlineno);
}

static uint32_t code_header_len(const sonde_pyoffsets_t *off)
{
    int32_t fields[] = {off->ob_type,   off->ob_size,          off->code_filename,
                        off->code_name, off->code_qualname,    off->code_linetable,
                        off->code_code, off->code_firstlineno, off->code_monitoring};
    int32_t end = 0;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(fields); i++)
        if (fields[i] >= 0 && fields[i] + 8 > end) end = fields[i] + 8;
    return (uint32_t)end;
}

/* ---- interned strings ---------------------------------------------------- */

static int code_strings_grow(struct sonde_pycode_cache *cache)
{
    uint32_t cap = cache->string_cap ? cache->string_cap * 2 : 256;
    char **strings = calloc(cap, sizeof *strings);
    if (strings == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < cache->string_cap; i++) {
        char *s = cache->strings[i];
        if (s == NULL) continue;
        uint32_t j = (uint32_t)code_hash_str(s) & (cap - 1);
        while (strings[j])
            j = (j + 1) & (cap - 1);
        strings[j] = s;
    }
    free(cache->strings);
    cache->strings = strings;
    cache->string_cap = cap;
    return 0;
}

/* Returns the interned copy of s, or NULL when out of memory. */
static const char *code_intern(struct sonde_pycode_cache *cache, const char *s)
{
    if (2 * (cache->string_used + 1) > cache->string_cap && code_strings_grow(cache) != 0)
        return NULL;
    uint32_t mask = cache->string_cap - 1;
    uint32_t j = (uint32_t)code_hash_str(s) & mask;
    for (; cache->strings[j]; j = (j + 1) & mask)
        if (strcmp(cache->strings[j], s) == 0) return cache->strings[j];
    char *copy = strdup(s);
    if (copy == NULL) return NULL;
    cache->strings[j] = copy;
    cache->string_used++;
    return copy;
}

/* ---- address table --------------------------------------------------------- */

static struct code_slot *code_slot_find(struct sonde_pycode_cache *cache, uint64_t addr)
{
    uint32_t mask = cache->slot_cap - 1;
    for (uint32_t j = (uint32_t)code_hash_addr(addr) & mask;; j = (j + 1) & mask) {
        struct code_slot *slot = &cache->slots[j];
        if (slot->addr == addr || slot->addr == 0) return slot;
    }
}

static int code_slots_grow(struct sonde_pycode_cache *cache)
{
    uint32_t cap = cache->slot_cap * 2;
    struct code_slot *slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return -ENOMEM;
    struct code_slot *old = cache->slots;
    uint32_t old_cap = cache->slot_cap;
    cache->slots = slots;
    cache->slot_cap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].addr) *code_slot_find(cache, old[i].addr) = old[i];
    free(old);
    return 0;
}

/* Hands out the next id; its info is zeroed. */
static int code_new_id(struct sonde_pycode_cache *cache, uint32_t *id)
{
    if (cache->count >= CODE_MAX_IDS) return -ENOSPC;
    uint32_t block = cache->count >> CODE_BLOCK_SHIFT;
    if (block >= cache->block_cap) {
        uint32_t cap = cache->block_cap ? cache->block_cap * 2 : 16;
        struct code_info **blocks = realloc(cache->blocks, cap * sizeof *blocks);
        if (blocks == NULL) return -ENOMEM;
        memset(blocks + cache->block_cap, 0, (cap - cache->block_cap) * sizeof *blocks);
        cache->blocks = blocks;
        cache->block_cap = cap;
    }
    if (cache->blocks[block] == NULL) {
        cache->blocks[block] = calloc(CODE_BLOCK_SIZE, sizeof(struct code_info));
        if (cache->blocks[block] == NULL) return -ENOMEM;
    }
    *id = cache->count++;
    return 0;
}

/* ---- reading the parts of a code object ------------------------------------ */

/* Reads a bytes object into a new buffer (at least one byte allocated). */
static int code_read_bytes(sonde_pyproc_t *proc, uint64_t addr, size_t max, uint8_t **out,
                           size_t *len)
{
    const sonde_pyoffsets_t *off = proc->off;
    int64_t size = 0;

    *out = NULL;
    *len = 0;
    int rc = sonde_mem_read(&proc->mem, addr + (uint64_t)off->bytes_ob_size, &size, sizeof size);
    if (rc != 0) return rc;
    if (size < 0 || (uint64_t)size > max) return -E2BIG;
    uint8_t *buf = malloc((size_t)size + 1);
    if (buf == NULL) return -ENOMEM;
    rc = sonde_mem_read(&proc->mem, addr + (uint64_t)off->bytes_ob_sval, buf, (size_t)size);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = (size_t)size;
    return 0;
}

/* Checks that `type` is the code type: against proc->code_type_addr, or,
 * when that is unknown, by its tp_name, learning the address. */
static int code_check_type(sonde_pyproc_t *proc, uint64_t type)
{
    char name[CODE_TYPE_NAME_MAX] = {0};
    uint64_t name_addr = 0;

    if (proc->code_type_addr) return type == proc->code_type_addr ? 0 : -EINVAL;
    if (sonde_mem_read(&proc->mem, type + (uint64_t)proc->off->type_tp_name, &name_addr,
                       sizeof name_addr) != 0 ||
        sonde_mem_read(&proc->mem, name_addr, name, 5) != 0 || memcmp(name, "code", 5) != 0)
        return -EINVAL;
    proc->code_type_addr = type;
    return 0;
}

/* Reads the opcodes hidden by INSTRUMENTED_LINE / INSTRUMENTED_INSTRUCTION
 * (3.12+). Leaves the arrays NULL when the code is not instrumented or the
 * data cannot be read. */
static void code_read_monitoring(sonde_pyproc_t *proc, const uint8_t *header, const uint8_t *code,
                                 uint32_t n_units, uint8_t **orig_line, size_t *line_stride,
                                 uint8_t **orig_instr)
{
    const sonde_pyoffsets_t *off = proc->off;
    uint8_t data[CODE_MONITORING_READ];
    bool has_line = false, has_instr = false;

    *orig_line = *orig_instr = NULL;
    if (off->code_monitoring < 0 || off->op_instrumented_line < 0) return;
    for (uint32_t i = 0; i < n_units; i++) {
        has_line |= code[2 * i] == off->op_instrumented_line;
        has_instr |= code[2 * i] == off->op_instrumented_instruction;
    }
    uint64_t monitoring = code_rd64(header, off->code_monitoring);
    if ((!has_line && !has_instr) || monitoring == 0) return;
    if (off->monitoring_per_instruction_opcodes + 8 > CODE_MONITORING_READ ||
        off->monitoring_lines + 8 > CODE_MONITORING_READ ||
        sonde_mem_read(&proc->mem, monitoring, data, CODE_MONITORING_READ) != 0)
        return;
    uint64_t lines = code_rd64(data, off->monitoring_lines);
    uint64_t per_instr = code_rd64(data, off->monitoring_per_instruction_opcodes);
    if (has_line && lines) {
        size_t stride = off->line_data_size > 0 ? (size_t)off->line_data_size : 0;
        uint64_t entries =
            lines + (uint64_t)(off->line_data_entries > 0 ? off->line_data_entries : 0);
        uint8_t first = 0;
        if (sonde_mem_read(&proc->mem, lines, &first, 1) != 0) first = 0;
        if (off->line_data_bytes_per_entry >= 0 ||
            (off->minor == 13 && first >= CODE_LINE_ENTRY_MIN && first <= CODE_LINE_ENTRY_MAX)) {
            /* 3.14+, and 3.13 from the micro that took CPython gh-127953:
             * a byte of entry size first (a 3.13.0 table starts with the
             * opcode hidden at unit 0, RESUME, never line-instrumented: 0) */
            stride = first;
            entries = lines + 1;
            if (off->line_data_bytes_per_entry >= 0)
                entries = lines + (uint64_t)off->line_data_entries;
        }
        if (stride >= 1 && stride <= CODE_LINE_ENTRY_MAX) {
            size_t len = (size_t)n_units * stride;
            *orig_line = malloc(len ? len : 1);
            if (*orig_line && sonde_mem_read(&proc->mem, entries, *orig_line, len) != 0) {
                free(*orig_line);
                *orig_line = NULL;
            }
            *line_stride = stride;
        }
    }
    if (has_instr && per_instr) {
        *orig_instr = malloc(n_units ? n_units : 1);
        if (*orig_instr && sonde_mem_read(&proc->mem, per_instr, *orig_instr, n_units) != 0) {
            free(*orig_instr);
            *orig_instr = NULL;
        }
    }
}

/* Reads the bytecode snapshot and fills info->call_bits / n_units. */
static int code_classify(sonde_pyproc_t *proc, uint64_t addr, const uint8_t *header,
                         const struct code_sig *sig, struct code_info *info)
{
    const sonde_pyoffsets_t *off = proc->off;
    uint8_t *code = NULL, *orig_line = NULL, *orig_instr = NULL;
    size_t code_len = 0;
    int rc = 0;

    if (off->code_code >= 0) {
        rc = code_read_bytes(proc, sig->bytecode, SONDE_PY_MAX_CODE, &code, &code_len);
        if (rc != 0) goto error;
    } else {
        if (sig->n_units > SONDE_PY_MAX_CODE / 2) {
            rc = -E2BIG;
            goto error;
        }
        code_len = (size_t)sig->n_units * 2;
        code = malloc(code_len + 1);
        if (code == NULL) {
            rc = -ENOMEM;
            goto error;
        }
        rc = sonde_mem_read(&proc->mem, addr + (uint64_t)off->code_code_adaptive, code, code_len);
        if (rc != 0) goto error;
    }
    info->n_units = (uint32_t)(code_len / 2);
    info->call_bits = malloc(((size_t)info->n_units + 7) / 8 + 1);
    if (info->call_bits == NULL) {
        rc = -ENOMEM;
        goto error;
    }
    size_t line_stride = 1;
    code_read_monitoring(proc, header, code, info->n_units, &orig_line, &line_stride, &orig_instr);
    sonde_pycode_call_bits(off, code, info->n_units, orig_line, line_stride, orig_instr,
                           info->call_bits);
error:
    free(orig_line);
    free(orig_instr);
    free(code);
    return rc;
}

/* Resolves a code object not in the cache (or changed) into a new id. */
static int code_resolve(sonde_pyproc_t *proc, uint64_t addr, const uint8_t *header,
                        const struct code_sig *sig, uint32_t *id_out)
{
    struct sonde_pycode_cache *cache = proc->codes;
    const sonde_pyoffsets_t *off = proc->off;
    char text[SONDE_PY_MAX_STRING + 1];
    struct code_info info;
    int rc = 0;

    memset(&info, 0, sizeof info);
    rc = code_check_type(proc, sig->type);
    if (rc != 0) goto error;
    rc = sonde_pystr_read(&proc->mem, off, sig->filename, text, sizeof text);
    if (rc < 0) goto error;
    info.pub.filename = code_intern(cache, text);
    rc = sonde_pystr_read(&proc->mem, off, sig->qualname ? sig->qualname : sig->name, text,
                          sizeof text);
    if (rc < 0) goto error;
    info.pub.name = code_intern(cache, text);
    if (info.pub.filename == NULL || info.pub.name == NULL) {
        rc = -ENOMEM;
        goto error;
    }
    info.pub.addr = addr;
    info.pub.firstlineno = (int)sig->firstlineno;
    info.minor = off->minor;
    info.memo_offset = -1;
    rc = code_read_bytes(proc, sig->linetable, SONDE_PY_MAX_LINETABLE, &info.linetable,
                         &info.linetable_len);
    if (rc != 0) goto error;
    rc = code_classify(proc, addr, header, sig, &info);
    if (rc != 0) goto error;
    rc = code_new_id(cache, id_out);
    if (rc != 0) goto error;
    *code_info_at(cache, *id_out) = info;
    return 0;

error:
    free(info.linetable);
    free(info.call_bits);
    return rc < 0 ? rc : -EINVAL;
}

/* ---- interface --------------------------------------------------------------- */

/* Creates proc->codes for proc->off. Returns 0 or -ENOMEM. */
int sonde_pycode_cache_new(sonde_pyproc_t *proc)
{
    struct sonde_pycode_cache *cache = calloc(1, sizeof *cache);
    if (cache == NULL) return -ENOMEM;
    cache->slots = calloc(CODE_INITIAL_SLOTS, sizeof *cache->slots);
    if (cache->slots == NULL) {
        free(cache);
        return -ENOMEM;
    }
    cache->slot_cap = CODE_INITIAL_SLOTS;
    cache->header_len = code_header_len(proc->off);
    cache->walk = 1;
    proc->codes = cache;
    return 0;
}

/* Frees proc->codes and everything it owns; safe when it is NULL. */
void sonde_pycode_cache_free(sonde_pyproc_t *proc)
{
    struct sonde_pycode_cache *cache = proc->codes;
    if (cache == NULL) return;
    for (uint32_t id = 0; id < cache->count; id++) {
        struct code_info *info = code_info_at(cache, id);
        free(info->linetable);
        free(info->call_bits);
    }
    for (uint32_t b = 0; b < cache->block_cap; b++)
        free(cache->blocks[b]);
    for (uint32_t i = 0; i < cache->string_cap; i++)
        free(cache->strings[i]);
    free(cache->blocks);
    free(cache->strings);
    free(cache->slots);
    free(cache);
    proc->codes = NULL;
}

/* Resolves the code object at addr (see pyread_internal.h). */
int sonde_pycode_get(sonde_pyproc_t *proc, uint64_t addr, sonde_pycode_hit_t *hit)
{
    struct sonde_pycode_cache *cache = proc->codes;
    uint8_t header[SONDE_PYREAD_CODE_HEADER_MAX];
    struct code_sig sig;
    uint32_t id = 0;

    if (cache == NULL || cache->header_len > SONDE_PYREAD_CODE_HEADER_MAX) return -EINVAL;
    struct code_slot *slot = code_slot_find(cache, addr);
    if (slot->addr == addr && slot->checked_walk == cache->walk) {
        /* already compared in this walk: a frame holds a strong reference
         * to its code, so the object is the one we checked */
        hit->code_id = slot->id;
        hit->info = code_info_at(cache, slot->id);
        return 0;
    }
    int rc = sonde_mem_read(&proc->mem, addr, header, cache->header_len);
    if (rc != 0) return rc;
    code_sig_from(proc->off, header, &sig);
    if (proc->code_type_addr && sig.type != proc->code_type_addr) return -EINVAL;

    if (slot->addr == addr && memcmp(&slot->sig, &sig, sizeof sig) == 0) {
        slot->checked_walk = cache->walk;
        hit->code_id = slot->id;
        hit->info = code_info_at(cache, slot->id);
        return 0;
    }
    rc = code_resolve(proc, addr, header, &sig, &id);
    if (rc != 0) return rc;
    if (slot->addr != addr) {
        if (2 * (cache->slot_used + 1) > cache->slot_cap) {
            rc = code_slots_grow(cache);
            if (rc != 0) return rc;
        }
        slot = code_slot_find(cache, addr);
        cache->slot_used++;
    }
    slot->addr = addr;
    slot->id = id;
    slot->sig = sig;
    slot->checked_walk = cache->walk;
    hit->code_id = id;
    hit->info = code_info_at(cache, id);
    return 0;
}

/* Starts a new frame walk (pyread_internal.h). */
void sonde_pycode_new_walk(sonde_pyproc_t *proc)
{
    if (proc->codes) proc->codes->walk++;
}

/* Line of byte offset `offset` (pyread_internal.h). */
int sonde_pycode_line(const sonde_pycode_hit_t *hit, int64_t offset)
{
    struct code_info *info = (struct code_info *)hit->info;

    /* a frame not started is on its first line; a negative one (hostile
     * memory, found by tests/fuzz/fuzz_pyread.c) is no line */
    if (offset < 0) return info->pub.firstlineno >= 0 ? info->pub.firstlineno : -1;
    if (offset > UINT32_MAX) return -1;
    if (offset == info->memo_offset) return info->memo_line;
    int line = sonde_linetable_lookup(info->minor, info->linetable, info->linetable_len,
                                      info->pub.firstlineno, (uint32_t)offset);
    info->memo_offset = offset;
    info->memo_line = line;
    return line;
}

/* Whether the instruction at byte offset `offset` calls (pyread_internal.h). */
bool sonde_pycode_in_call(const sonde_pycode_hit_t *hit, int64_t offset)
{
    const struct code_info *info = hit->info;

    if (offset < 0 || offset / 2 >= info->n_units) return false;
    uint32_t unit = (uint32_t)(offset / 2);
    return (info->call_bits[unit >> 3] >> (unit & 7)) & 1;
}

/* The cached facts for a code id; NULL if out of range. */
const sonde_pycode_t *sonde_pyproc_code(const sonde_pyproc_t *proc, uint32_t code_id)
{
    struct sonde_pycode_cache *cache = proc->codes;
    if (cache == NULL || code_id >= cache->count) return NULL;
    return &code_info_at(cache, code_id)->pub;
}

/* Number of code ids handed out so far. */
uint32_t sonde_pyproc_code_count(const sonde_pyproc_t *proc)
{
    return proc->codes ? proc->codes->count : 0;
}
