/* calls.c — which code units of a bytecode snapshot are call-family
 * instructions.
 *
 * Owns: sonde_pycode_call_bits. Called by code.c once per code object it
 * resolves (never per sample), and by the unit test. Pure: no reads, no
 * allocation; nothing here runs in a signal handler. Walks the code units
 * instruction by instruction: an EXTENDED_ARG prefix belongs to the
 * instruction it extends; from 3.11 a specialised or instrumented opcode is
 * mapped to its base instruction (generated base_op table), whose inline
 * cache entries (cache_units) are skipped and belong to it; from 3.12 an
 * INSTRUMENTED_LINE / INSTRUMENTED_INSTRUCTION is first replaced by the
 * opcode it hides, when the caller could read the monitoring data. Every
 * unit of a call-family instruction, prefixes and caches included, gets its
 * bit: a frame's instruction pointer may rest on any of them (3.11/3.12 leave
 * prev_instr on the last cache entry of a CALL that pushed a Python frame).
 */
#include "pyread_internal.h"

#include <string.h>

static int calls_real_op(const sonde_pyoffsets_t *off, const uint8_t *code, uint32_t unit,
                         const uint8_t *orig_line, size_t line_stride, const uint8_t *orig_instr)
{
    int op = code[2 * unit];
    /* LINE wraps INSTRUCTION wraps INSTRUMENTED_X wraps X: at most two hops */
    for (int hop = 0; hop < 2; hop++) {
        if (op == off->op_instrumented_line && orig_line)
            op = orig_line[unit * line_stride];
        else if (op == off->op_instrumented_instruction && orig_instr)
            op = orig_instr[unit];
        else
            break;
    }
    return op;
}

/* Computes the in_call bitmap of a bytecode snapshot (pyread_internal.h). */
void sonde_pycode_call_bits(const sonde_pyoffsets_t *off, const uint8_t *code, uint32_t n_units,
                            const uint8_t *orig_line, size_t line_stride, const uint8_t *orig_instr,
                            uint8_t *bits)
{
    memset(bits, 0, ((size_t)n_units + 7) / 8);
    for (uint32_t unit = 0; unit < n_units;) {
        uint32_t start = unit;
        int op = calls_real_op(off, code, unit, orig_line, line_stride, orig_instr);
        while (off->base_op[op] == off->op_extended_arg && unit + 1 < n_units) {
            unit++;
            op = calls_real_op(off, code, unit, orig_line, line_stride, orig_instr);
        }
        int base = off->base_op[op];
        uint32_t end = unit + 1 + off->cache_units[base];
        if (end > n_units) end = n_units;
        if (sonde_pyop_is_call(off, (unsigned)op) || sonde_pyop_is_call(off, (unsigned)base))
            for (uint32_t u = start; u < end; u++)
                bits[u >> 3] |= (uint8_t)(1u << (u & 7));
        unit = end;
    }
}
