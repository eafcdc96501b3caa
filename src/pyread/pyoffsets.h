/* pyoffsets.h — per-version layouts of the CPython structures sonde reads.
 *
 * Owns: struct sonde_pyoffsets. The values are never written by hand: they
 * come from tools/gen_offsets/gen_offsets.c, compiled against each
 * interpreter's own (internal) headers, and are checked in as
 * pyoffsets_gen.h (included only by pyoffsets.c). Every offset is in bytes
 * from the start of the named structure; -1 means "this version has no such
 * field". Pure data: nothing here runs.
 */
#ifndef SONDE_PYOFFSETS_H
#define SONDE_PYOFFSETS_H

#include "pyread.h"
#include "pyversions.h"

#include <stddef.h>

/* How a thread state leads to its innermost frame and how frames link. */
enum sonde_pyframe_model {
    SONDE_PYFRAMES_OBJECT = 1, /* <=3.10: tstate->frame, PyFrameObject, f_back */
    SONDE_PYFRAMES_CFRAME = 2, /* 3.11, 3.12: tstate->cframe->current_frame,
                                  _PyInterpreterFrame, previous */
    SONDE_PYFRAMES_DIRECT = 3, /* 3.13+: tstate->current_frame, previous */
};

/* What the frame's instruction field holds. */
enum sonde_pyinstr_kind {
    SONDE_PYINSTR_LASTI_BYTES = 1, /* 3.8, 3.9: int f_lasti, byte offset */
    SONDE_PYINSTR_LASTI_UNITS = 2, /* 3.10: int f_lasti, in 2-byte code units */
    SONDE_PYINSTR_PREV_PTR = 3,    /* 3.11, 3.12: _Py_CODEUNIT *prev_instr (may
                                      point at an inline cache entry) */
    SONDE_PYINSTR_PTR = 4,         /* 3.13+: _Py_CODEUNIT *instr_ptr */
};

/* How to find the GIL holder. */
enum sonde_pygil_model {
    SONDE_PYGIL_GILSTATE = 1, /* <=3.11: _PyRuntime.gilstate.tstate_current */
    SONDE_PYGIL_INTERP = 2,   /* 3.12+: interp->ceval.gil -> locked, last_holder */
};

/* One check of the target's _Py_DebugOffsets (3.13+): the uint64 at byte
 * `at` of _Py_DebugOffsets must equal `expect`. */
struct sonde_pydebug_check {
    int32_t at;
    int64_t expect;
};

#define SONDE_PY_DEBUG_CHECKS 32

/* Where the target's _Py_DebugOffsets (3.13+) keeps one field sonde reads:
 * the sonde_pyoffsets field at byte `field` of the struct takes the uint64
 * at byte `at` of _Py_DebugOffsets, less the one at `minus_at` when >= 0
 * (the GIL's fields are given inside PyInterpreterState; sonde reads them
 * inside struct _gil_runtime_state). The layout of _Py_DebugOffsets itself
 * changes with each minor version, so each generated table carries its own
 * list. */
struct sonde_pydebug_field {
    int32_t at;
    int32_t minus_at;
    int32_t field;
};

#define SONDE_PYDEBUG_FIELD(name) ((int32_t)offsetof(struct sonde_pyoffsets, name))
#define SONDE_PY_DEBUG_FIELDS 40

struct sonde_pyoffsets {
    int major, minor;
    int generated_micro; /* micro version of the headers used */
    int frame_model;     /* enum sonde_pyframe_model */
    int instr_kind;      /* enum sonde_pyinstr_kind */
    int gil_model;       /* enum sonde_pygil_model */

    /* PyObject / PyVarObject / PyTypeObject */
    int32_t ob_type;
    int32_t ob_size;
    int32_t type_tp_name;

    /* _PyRuntimeState */
    int32_t runtime_interpreters_head;
    int32_t runtime_interpreters_main;
    int32_t runtime_gilstate_tstate_current; /* SONDE_PYGIL_GILSTATE only */

    /* PyInterpreterState */
    int32_t interp_next;
    int32_t interp_threads_head; /* tstate_head (<=3.10), threads.head */
    int32_t interp_ceval_gil;    /* SONDE_PYGIL_INTERP: ceval.gil pointer */
    int32_t gil_locked;          /* in struct _gil_runtime_state (int) */
    int32_t gil_last_holder;     /* in struct _gil_runtime_state (pointer) */
    int32_t gil_interval;        /* the switch interval (unsigned long, us): in
                                    _PyRuntimeState (SONDE_PYGIL_GILSTATE,
                                    ceval.gil.interval), else in struct
                                    _gil_runtime_state */

    /* PyThreadState */
    int32_t tstate_next;
    int32_t tstate_interp;
    int32_t tstate_thread_id;        /* unsigned long: the pthread_t */
    int32_t tstate_native_thread_id; /* unsigned long, 3.11+ */
    int32_t tstate_frame;            /* frame (<=3.10), cframe (3.11, 3.12),
                                        current_frame (3.13+) */
    int32_t cframe_current_frame;    /* _PyCFrame.current_frame (3.11, 3.12) */

    /* PyFrameObject (<=3.10) or _PyInterpreterFrame (3.11+) */
    int32_t frame_back;          /* f_back / previous */
    int32_t frame_code;          /* f_code / f_executable */
    int32_t frame_code_tag_bits; /* 3.14+: f_executable is a _PyStackRef whose
                                    low bits (Py_TAG_BITS) are tags; else 0 */
    int32_t frame_instr;         /* f_lasti (int) / prev_instr / instr_ptr */
    int32_t frame_owner;         /* char owner, 3.11+ */
    int32_t frame_owner_cstack;  /* 3.12+: frames with owner >= this are not
                                    a Python function's (3.12, 3.13
                                    FRAME_OWNED_BY_CSTACK; 3.14+
                                    FRAME_OWNED_BY_INTERPRETER, then CSTACK
                                    in 3.14): skipped */

    /* PyCodeObject */
    int32_t code_filename;
    int32_t code_name;
    int32_t code_qualname;      /* 3.11+ */
    int32_t code_firstlineno;   /* int */
    int32_t code_linetable;     /* co_lnotab (<=3.9) / co_linetable */
    int32_t code_code;          /* co_code bytes object (<=3.10) */
    int32_t code_code_adaptive; /* inline bytecode (3.11+); length is
                                   ob_size code units */
    int32_t code_monitoring;    /* _co_monitoring (3.12+) */

    /* _PyCoMonitoringData (3.12+): resolving INSTRUMENTED_LINE and
     * INSTRUMENTED_INSTRUCTION to the opcode they hide */
    int32_t monitoring_lines;                   /* _PyCoLineInstrumentationData * */
    int32_t monitoring_per_instruction_opcodes; /* uint8_t * */
    int32_t line_data_size;                     /* sizeof(_PyCoLineInstrumentationData)
                                          (3.12, 3.13); -1 when the data says
                                          (3.14+: line_data_bytes_per_entry) */
    int32_t line_data_original_opcode;          /* in one entry */
    int32_t line_data_bytes_per_entry;          /* 3.14+: offset of the uint8 entry size */
    int32_t line_data_entries;                  /* offset of the first entry (3.12+) */

    /* PyBytesObject */
    int32_t bytes_ob_size;
    int32_t bytes_ob_sval;

    /* PyASCIIObject / PyCompactUnicodeObject / PyUnicodeObject */
    int32_t unicode_length;
    int32_t unicode_state;      /* 32-bit bitfield word */
    int32_t unicode_kind_shift; /* 3 bits */
    int32_t unicode_compact_shift;
    int32_t unicode_ascii_shift;
    int32_t unicode_ready_shift;  /* <=3.11 */
    int32_t unicode_ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data */
    int32_t unicode_compact_size; /* sizeof(PyCompactUnicodeObject) */
    int32_t unicode_data_any;     /* PyUnicodeObject.data.any (non-compact) */
    int32_t unicode_wstr;         /* <=3.11: wchar_t * of a not-ready string */
    int32_t unicode_wstr_length;  /* <=3.11: in PyCompactUnicodeObject */
    int32_t wchar_size;

    /* Opcodes. call_family: bit n set when opcode n calls a function
     * (including specialised and instrumented forms). base_op maps a
     * specialised or instrumented opcode to its base instruction (identity
     * before 3.11); cache_units gives the inline cache entries that follow a
     * base instruction (3.11+). */
    uint8_t call_family[32];
    uint8_t base_op[256];
    uint8_t cache_units[256];
    int32_t op_extended_arg;
    int32_t op_instrumented_line;        /* 3.12+ */
    int32_t op_instrumented_instruction; /* 3.12+ */

    /* _Py_DebugOffsets (3.13+; at offset 0 of _PyRuntime). The checks give
     * what the headers put there; for the fields in debug_fields the
     * target's values are used instead (proc.c), the other checks must
     * hold. */
    int32_t debug_version; /* offset of its version field, -1 = none */
    int n_debug_checks;
    struct sonde_pydebug_check debug_checks[SONDE_PY_DEBUG_CHECKS];
    int32_t debug_size; /* sizeof(_Py_DebugOffsets), 0 = none */
    int n_debug_fields;
    struct sonde_pydebug_field debug_fields[SONDE_PY_DEBUG_FIELDS];

    /* PEP 768 (3.14+; -1 before): PyThreadState.eval_breaker (uintptr_t)
     * and remote_debugger_support (_PyRemoteDebuggerSupport: int
     * debugger_pending_call, char debugger_script_path[size]),
     * PyInterpreterState.config.remote_debug (int), and the eval breaker's
     * bit that makes the thread look at the request. */
    int32_t tstate_eval_breaker;
    int32_t tstate_remote_support;
    int32_t interp_remote_debug;
    int32_t remote_pending_call;
    int32_t remote_script_path;
    int32_t remote_script_path_size;
    int32_t eval_please_stop_bit;

    /* What the allocator shim assumes (src/shim/shim.h), checked by a unit
     * test: sizeof(PyMemAllocatorEx), sizeof(PyObjectArenaAllocator), and
     * pymalloc's SMALL_REQUEST_THRESHOLD (-1 where the headers lack it). */
    int32_t pyalloc_size;
    int32_t pyarena_size;
    int32_t pymalloc_small_request;
};

static inline bool sonde_pyop_is_call(const sonde_pyoffsets_t *off, unsigned op)
{
    return (off->call_family[(op >> 3) & 31] >> (op & 7)) & 1;
}

#endif
