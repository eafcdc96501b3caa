/* gen_offsets.c — prints the struct sonde_pyoffsets initializer for the
 * CPython whose headers it is compiled against.
 *
 * Owns: nothing at run time; this is a build tool. run.sh compiles it once
 * per installed interpreter with -DPy_BUILD_CORE and that interpreter's
 * include/ and include/internal/ directories, runs it, and concatenates the
 * output into src/pyread/pyoffsets_gen.h. It never links libpython: it only
 * evaluates offsetof/sizeof and the opcode tables in the headers. run.sh
 * also generates two includes from the version's own opcode headers:
 * calls.inc (CALL_OP(name) for every call-family name the version defines,
 * from call_opcodes.txt) and instrumented.inc (INSTRUMENTED_OP(instr, base)
 * for every INSTRUMENTED_X whose X exists).
 */
#define Py_BUILD_CORE 1
#include "Python.h"
#include "frameobject.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../../src/pyread/pyversions.h"

#if !SONDE_PY_SUPPORTED(PY_MAJOR_VERSION, PY_MINOR_VERSION)
#error "gen_offsets supports the versions of src/pyread/pyversions.h"
#endif

#if PY_VERSION_HEX < 0x03090000
#include "internal/pycore_pystate.h"
#else
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
#define NEED_OPCODE_TABLES
#include "internal/pycore_opcode.h"
#elif PY_VERSION_HEX >= 0x030D0000
#define NEED_OPCODE_METADATA
#include "internal/pycore_opcode_metadata.h"
#endif
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030E0000
#include "internal/pycore_gil.h"
#endif
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_ceval.h" /* _PY_EVAL_PLEASE_STOP_BIT */
#include "internal/pycore_debug_offsets.h"
#include "internal/pycore_instruments.h"
#include "internal/pycore_interpframe.h"
#include "internal/pycore_stackref.h"
#endif
#if PY_VERSION_HEX >= 0x030C0000
#include "internal/pycore_obmalloc.h"
#endif
#include "opcode.h"

#define ABSENT (-1L)
#define OFF(type, member) ((long)offsetof(type, member))

static void field(const char *name, long value)
{
    printf("    .%s = %ld,\n", name, value);
}

/* Bit position of a one-bit-wide probe set in a 32-bit word. */
static long lowest_bit(const void *word)
{
    uint32_t v = 0;
    memcpy(&v, word, sizeof v);
    for (long bit = 0; bit < 32; bit++)
        if (v & (1u << bit)) return bit;
    return ABSENT;
}

static void unicode_fields(void)
{
    PyASCIIObject probe;
    const char *state = (const char *)&probe + offsetof(PyASCIIObject, state);

    field("unicode_length", OFF(PyASCIIObject, length));
    field("unicode_state", OFF(PyASCIIObject, state));
    memset(&probe, 0, sizeof probe);
    probe.state.kind = 1;
    field("unicode_kind_shift", lowest_bit(state));
    memset(&probe, 0, sizeof probe);
    probe.state.compact = 1;
    field("unicode_compact_shift", lowest_bit(state));
    memset(&probe, 0, sizeof probe);
    probe.state.ascii = 1;
    field("unicode_ascii_shift", lowest_bit(state));
#if PY_VERSION_HEX < 0x030C0000
    memset(&probe, 0, sizeof probe);
    probe.state.ready = 1;
    field("unicode_ready_shift", lowest_bit(state));
    field("unicode_wstr", OFF(PyASCIIObject, wstr));
    field("unicode_wstr_length", OFF(PyCompactUnicodeObject, wstr_length));
#else
    field("unicode_ready_shift", ABSENT);
    field("unicode_wstr", ABSENT);
    field("unicode_wstr_length", ABSENT);
#endif
    field("unicode_ascii_size", (long)sizeof(PyASCIIObject));
    field("unicode_compact_size", (long)sizeof(PyCompactUnicodeObject));
    field("unicode_data_any", OFF(PyUnicodeObject, data.any));
    field("wchar_size", (long)sizeof(wchar_t));
}

static void runtime_fields(void)
{
    field("ob_type", OFF(PyObject, ob_type));
    field("ob_size", OFF(PyVarObject, ob_size));
    field("type_tp_name", OFF(PyTypeObject, tp_name));

    field("runtime_interpreters_head", OFF(_PyRuntimeState, interpreters.head));
    field("runtime_interpreters_main", OFF(_PyRuntimeState, interpreters.main));
#if PY_VERSION_HEX < 0x030C0000
    field("gil_model", 1); /* SONDE_PYGIL_GILSTATE */
    field("runtime_gilstate_tstate_current", OFF(_PyRuntimeState, gilstate.tstate_current));
    field("interp_ceval_gil", ABSENT);
    field("gil_locked", ABSENT);
    field("gil_last_holder", ABSENT);
    field("gil_interval", OFF(_PyRuntimeState, ceval.gil.interval));
#else
    field("gil_model", 2); /* SONDE_PYGIL_INTERP */
    field("runtime_gilstate_tstate_current", ABSENT);
    field("interp_ceval_gil", OFF(PyInterpreterState, ceval.gil));
    field("gil_locked", OFF(struct _gil_runtime_state, locked));
    field("gil_last_holder", OFF(struct _gil_runtime_state, last_holder));
    field("gil_interval", OFF(struct _gil_runtime_state, interval));
#endif

    field("interp_next", OFF(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030B0000
    field("interp_threads_head", OFF(PyInterpreterState, tstate_head));
#else
    field("interp_threads_head", OFF(PyInterpreterState, threads.head));
#endif

    field("tstate_next", OFF(PyThreadState, next));
    field("tstate_interp", OFF(PyThreadState, interp));
    field("tstate_thread_id", OFF(PyThreadState, thread_id));
#if PY_VERSION_HEX < 0x030B0000
    field("tstate_native_thread_id", ABSENT);
#else
    field("tstate_native_thread_id", OFF(PyThreadState, native_thread_id));
#endif
}

static void frame_fields(void)
{
#if PY_VERSION_HEX < 0x030B0000
    field("frame_model", 1); /* SONDE_PYFRAMES_OBJECT */
    field("instr_kind", PY_VERSION_HEX < 0x030A0000 ? 1 : 2);
    field("tstate_frame", OFF(PyThreadState, frame));
    field("cframe_current_frame", ABSENT);
    field("frame_back", OFF(PyFrameObject, f_back));
    field("frame_code", OFF(PyFrameObject, f_code));
    field("frame_instr", OFF(PyFrameObject, f_lasti));
    field("frame_owner", ABSENT);
    field("frame_owner_cstack", ABSENT);
#else
    field("frame_back", OFF(_PyInterpreterFrame, previous));
    field("frame_owner", OFF(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030D0000
    field("frame_model", 2); /* SONDE_PYFRAMES_CFRAME */
    field("instr_kind", 3);  /* SONDE_PYINSTR_PREV_PTR */
    field("tstate_frame", OFF(PyThreadState, cframe));
    field("cframe_current_frame", OFF(_PyCFrame, current_frame));
    field("frame_code", OFF(_PyInterpreterFrame, f_code));
    field("frame_instr", OFF(_PyInterpreterFrame, prev_instr));
#else
    field("frame_model", 3); /* SONDE_PYFRAMES_DIRECT */
    field("instr_kind", 4);  /* SONDE_PYINSTR_PTR */
    field("tstate_frame", OFF(PyThreadState, current_frame));
    field("cframe_current_frame", ABSENT);
    field("frame_code", OFF(_PyInterpreterFrame, f_executable));
    field("frame_instr", OFF(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_VERSION_HEX < 0x030C0000
    field("frame_owner_cstack", ABSENT);
#elif PY_VERSION_HEX < 0x030E0000
    field("frame_owner_cstack", FRAME_OWNED_BY_CSTACK);
#else
    /* 3.14+: INTERPRETER (entry frames), and CSTACK in 3.14 after it */
    field("frame_owner_cstack", FRAME_OWNED_BY_INTERPRETER);
#endif
#endif
}

/* Fields added with 3.14 support, printed for every version. */
static void frame_fields_3_14(void)
{
#if PY_VERSION_HEX >= 0x030E0000
    /* f_executable is a _PyStackRef: PyStackRef_AsPyObjectBorrow clears these */
    field("frame_code_tag_bits", (long)Py_TAG_BITS);
#else
    field("frame_code_tag_bits", 0);
#endif
}

/* PEP 768 (3.14+): where a debugger asks a thread to run a Python file
 * at its next safe point, and whether the interpreter allows it. */
static void remote_exec_fields(void)
{
#if PY_VERSION_HEX >= 0x030E0000
    field("tstate_eval_breaker", OFF(PyThreadState, eval_breaker));
    field("tstate_remote_support", OFF(PyThreadState, remote_debugger_support));
    field("interp_remote_debug", OFF(PyInterpreterState, config.remote_debug));
    field("remote_pending_call", OFF(_PyRemoteDebuggerSupport, debugger_pending_call));
    field("remote_script_path", OFF(_PyRemoteDebuggerSupport, debugger_script_path));
    field("remote_script_path_size", (long)_Py_MAX_SCRIPT_PATH_SIZE);
    field("eval_please_stop_bit", (long)_PY_EVAL_PLEASE_STOP_BIT);
#else
    field("tstate_eval_breaker", ABSENT);
    field("tstate_remote_support", ABSENT);
    field("interp_remote_debug", ABSENT);
    field("remote_pending_call", ABSENT);
    field("remote_script_path", ABSENT);
    field("remote_script_path_size", 0);
    field("eval_please_stop_bit", 0);
#endif
}

static void code_fields(void)
{
    field("code_filename", OFF(PyCodeObject, co_filename));
    field("code_name", OFF(PyCodeObject, co_name));
    field("code_firstlineno", OFF(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX < 0x030A0000
    field("code_linetable", OFF(PyCodeObject, co_lnotab));
#else
    field("code_linetable", OFF(PyCodeObject, co_linetable));
#endif
#if PY_VERSION_HEX < 0x030B0000
    field("code_qualname", ABSENT);
    field("code_code", OFF(PyCodeObject, co_code));
    field("code_code_adaptive", ABSENT);
#else
    field("code_qualname", OFF(PyCodeObject, co_qualname));
    field("code_code", ABSENT);
    field("code_code_adaptive", OFF(PyCodeObject, co_code_adaptive));
#endif
#if PY_VERSION_HEX < 0x030C0000
    field("code_monitoring", ABSENT);
    field("monitoring_lines", ABSENT);
    field("monitoring_per_instruction_opcodes", ABSENT);
    field("line_data_size", ABSENT);
    field("line_data_original_opcode", ABSENT);
#else
    field("code_monitoring", OFF(PyCodeObject, _co_monitoring));
    field("monitoring_lines", OFF(_PyCoMonitoringData, lines));
    field("monitoring_per_instruction_opcodes", OFF(_PyCoMonitoringData, per_instruction_opcodes));
#if !defined(SONDE_LINE_DATA_PER_ENTRY)
    field("line_data_size", (long)sizeof(_PyCoLineInstrumentationData));
    field("line_data_original_opcode", OFF(_PyCoLineInstrumentationData, original_opcode));
#else
    /* 3.14+ and later 3.13 micros (run.sh defines SONDE_LINE_DATA_PER_ENTRY
     * when the headers say so): a byte of entry size, then entries
     * starting with the opcode */
    field("line_data_size", ABSENT);
    field("line_data_original_opcode", 0);
#endif
#endif
    field("bytes_ob_size", OFF(PyVarObject, ob_size));
    field("bytes_ob_sval", OFF(PyBytesObject, ob_sval));
}

/* Fields added with 3.14 support, printed for every version. */
static void code_fields_3_14(void)
{
#if defined(SONDE_LINE_DATA_PER_ENTRY)
    field("line_data_bytes_per_entry", OFF(_PyCoLineInstrumentationData, bytes_per_entry));
    field("line_data_entries", OFF(_PyCoLineInstrumentationData, data));
#elif PY_VERSION_HEX >= 0x030C0000
    field("line_data_bytes_per_entry", ABSENT);
    field("line_data_entries", 0);
#else
    field("line_data_bytes_per_entry", ABSENT);
    field("line_data_entries", ABSENT);
#endif
    /* what the allocator shim assumes (src/shim/shim.h) */
    field("pyalloc_size", (long)sizeof(PyMemAllocatorEx));
    field("pyarena_size", (long)sizeof(PyObjectArenaAllocator));
#ifdef SMALL_REQUEST_THRESHOLD
    field("pymalloc_small_request", SMALL_REQUEST_THRESHOLD);
#else
    field("pymalloc_small_request", ABSENT); /* not in this version's headers */
#endif
}

/* ---- opcodes ------------------------------------------------------------ */

static unsigned char call_family[32];
static unsigned char base_op[256];
static unsigned char cache_units[256];

static void add_call(long op, const char *name)
{
    if (op < 0 || op > 255) {
        fprintf(stderr, "gen_offsets: %s = %ld is not an opcode byte\n", name, op);
        return;
    }
    call_family[op >> 3] |= (unsigned char)(1u << (op & 7));
    printf(" %s", name);
}

static void print_bytes(const char *name, const unsigned char *bytes, int n)
{
    printf("    .%s = {", name);
    for (int i = 0; i < n; i++)
        printf("%s%u,", i % 16 == 0 ? "\n        " : " ", bytes[i]);
    printf("\n    },\n");
}

static void opcode_fields(void)
{
    for (int op = 0; op < 256; op++)
        base_op[op] = (unsigned char)op;
#if PY_VERSION_HEX >= 0x030B0000
    for (int op = 0; op < 256; op++) {
        if (_PyOpcode_Deopt[op] != 0 || op == 0) base_op[op] = _PyOpcode_Deopt[op];
        cache_units[op] = _PyOpcode_Caches[op];
    }
#define INSTRUMENTED_OP(instr, base) (base_op[instr] = (unsigned char)(base))
#include "instrumented.inc"
#undef INSTRUMENTED_OP
#ifdef ENTER_EXECUTOR
    /* 3.13 only installs executors over JUMP_BACKWARD. */
    base_op[ENTER_EXECUTOR] = JUMP_BACKWARD;
#endif
#endif

    printf("    /* call family:");
#define CALL_OP(name) add_call((long)(name), #name)
#include "calls.inc"
#undef CALL_OP
    printf(" */\n");
    print_bytes("call_family", call_family, 32);
    print_bytes("base_op", base_op, 256);
    print_bytes("cache_units", cache_units, 256);
    field("op_extended_arg", EXTENDED_ARG);
#ifdef INSTRUMENTED_LINE
    field("op_instrumented_line", INSTRUMENTED_LINE);
    field("op_instrumented_instruction", INSTRUMENTED_INSTRUCTION);
#else
    field("op_instrumented_line", ABSENT);
    field("op_instrumented_instruction", ABSENT);
#endif
}

/* ---- _Py_DebugOffsets (3.13+) -------------------------------------------- */

static int n_checks;

static void check(const char *what, long at, long expect)
{
    printf("        {%ld, %ld}, /* %s */\n", at, expect, what);
    n_checks++;
}

static void debug_fields(void)
{
#if PY_VERSION_HEX >= 0x030D0000
#define DBG(member) OFF(_Py_DebugOffsets, member)
    field("debug_version", DBG(version));
    printf("    .debug_checks = {\n");
    check("free_threaded", DBG(free_threaded), 0);
    check("interpreters_head", DBG(runtime_state.interpreters_head),
          OFF(_PyRuntimeState, interpreters.head));
    check("interp next", DBG(interpreter_state.next), OFF(PyInterpreterState, next));
    check("threads_head", DBG(interpreter_state.threads_head),
          OFF(PyInterpreterState, threads.head));
    check("ceval_gil", DBG(interpreter_state.ceval_gil), OFF(PyInterpreterState, ceval.gil));
    check("gil locked", DBG(interpreter_state.gil_runtime_state_locked),
          OFF(PyInterpreterState, _gil.locked));
    check("gil holder", DBG(interpreter_state.gil_runtime_state_holder),
          OFF(PyInterpreterState, _gil.last_holder));
    check("tstate next", DBG(thread_state.next), OFF(PyThreadState, next));
    check("tstate interp", DBG(thread_state.interp), OFF(PyThreadState, interp));
    check("current_frame", DBG(thread_state.current_frame), OFF(PyThreadState, current_frame));
    check("thread_id", DBG(thread_state.thread_id), OFF(PyThreadState, thread_id));
    check("native_thread_id", DBG(thread_state.native_thread_id),
          OFF(PyThreadState, native_thread_id));
    check("previous", DBG(interpreter_frame.previous), OFF(_PyInterpreterFrame, previous));
    check("executable", DBG(interpreter_frame.executable), OFF(_PyInterpreterFrame, f_executable));
    check("instr_ptr", DBG(interpreter_frame.instr_ptr), OFF(_PyInterpreterFrame, instr_ptr));
    check("owner", DBG(interpreter_frame.owner), OFF(_PyInterpreterFrame, owner));
    check("co_filename", DBG(code_object.filename), OFF(PyCodeObject, co_filename));
    check("co_name", DBG(code_object.name), OFF(PyCodeObject, co_name));
    check("co_qualname", DBG(code_object.qualname), OFF(PyCodeObject, co_qualname));
    check("co_linetable", DBG(code_object.linetable), OFF(PyCodeObject, co_linetable));
    check("co_firstlineno", DBG(code_object.firstlineno), OFF(PyCodeObject, co_firstlineno));
    check("co_code_adaptive", DBG(code_object.co_code_adaptive),
          OFF(PyCodeObject, co_code_adaptive));
    check("ob_type", DBG(pyobject.ob_type), OFF(PyObject, ob_type));
    check("tp_name", DBG(type_object.tp_name), OFF(PyTypeObject, tp_name));
    check("bytes ob_size", DBG(bytes_object.ob_size), OFF(PyBytesObject, ob_base.ob_size));
    check("bytes ob_sval", DBG(bytes_object.ob_sval), OFF(PyBytesObject, ob_sval));
    check("unicode state", DBG(unicode_object.state), OFF(PyASCIIObject, state));
    check("unicode length", DBG(unicode_object.length), OFF(PyASCIIObject, length));
    check("asciiobject_size", DBG(unicode_object.asciiobject_size), (long)sizeof(PyASCIIObject));
    printf("    },\n");
    field("n_debug_checks", n_checks);
#undef DBG
#else
    field("debug_version", ABSENT);
    field("n_debug_checks", 0);
#endif
}

/* ---- where _Py_DebugOffsets keeps what it covers (3.13+) ----------------- */

static int n_debug_fields;

/* The sonde field `name` is the uint64 at byte `at` of the target's
 * _Py_DebugOffsets, less the one at `minus_at` when that is >= 0. */
static void debug_field(const char *name, long at, long minus_at)
{
    printf("        {%ld, %ld, SONDE_PYDEBUG_FIELD(%s)},\n", at, minus_at, name);
    n_debug_fields++;
}

static void debug_field_map(void)
{
#if PY_VERSION_HEX >= 0x030D0000
#define DBG(member) OFF(_Py_DebugOffsets, member)
    printf("    .debug_fields = {\n");
    debug_field("runtime_interpreters_head", DBG(runtime_state.interpreters_head), ABSENT);
    debug_field("interp_next", DBG(interpreter_state.next), ABSENT);
    debug_field("interp_threads_head", DBG(interpreter_state.threads_head), ABSENT);
    debug_field("interp_ceval_gil", DBG(interpreter_state.ceval_gil), ABSENT);
    /* offsets inside PyInterpreterState: made relative to its _gil */
    debug_field("gil_locked", DBG(interpreter_state.gil_runtime_state_locked),
                DBG(interpreter_state.gil_runtime_state));
    debug_field("gil_last_holder", DBG(interpreter_state.gil_runtime_state_holder),
                DBG(interpreter_state.gil_runtime_state));
    debug_field("tstate_next", DBG(thread_state.next), ABSENT);
    debug_field("tstate_interp", DBG(thread_state.interp), ABSENT);
    debug_field("tstate_frame", DBG(thread_state.current_frame), ABSENT);
    debug_field("tstate_thread_id", DBG(thread_state.thread_id), ABSENT);
    debug_field("tstate_native_thread_id", DBG(thread_state.native_thread_id), ABSENT);
    debug_field("frame_back", DBG(interpreter_frame.previous), ABSENT);
    debug_field("frame_code", DBG(interpreter_frame.executable), ABSENT);
    debug_field("frame_instr", DBG(interpreter_frame.instr_ptr), ABSENT);
    debug_field("frame_owner", DBG(interpreter_frame.owner), ABSENT);
    debug_field("code_filename", DBG(code_object.filename), ABSENT);
    debug_field("code_name", DBG(code_object.name), ABSENT);
    debug_field("code_qualname", DBG(code_object.qualname), ABSENT);
    debug_field("code_linetable", DBG(code_object.linetable), ABSENT);
    debug_field("code_firstlineno", DBG(code_object.firstlineno), ABSENT);
    debug_field("code_code_adaptive", DBG(code_object.co_code_adaptive), ABSENT);
    debug_field("ob_type", DBG(pyobject.ob_type), ABSENT);
    debug_field("type_tp_name", DBG(type_object.tp_name), ABSENT);
    debug_field("bytes_ob_size", DBG(bytes_object.ob_size), ABSENT);
    debug_field("bytes_ob_sval", DBG(bytes_object.ob_sval), ABSENT);
    debug_field("unicode_state", DBG(unicode_object.state), ABSENT);
    debug_field("unicode_length", DBG(unicode_object.length), ABSENT);
    debug_field("unicode_ascii_size", DBG(unicode_object.asciiobject_size), ABSENT);
#if PY_VERSION_HEX >= 0x030E0000
    debug_field("tstate_eval_breaker", DBG(debugger_support.eval_breaker), ABSENT);
    debug_field("tstate_remote_support", DBG(debugger_support.remote_debugger_support), ABSENT);
    debug_field("interp_remote_debug", DBG(debugger_support.remote_debugging_enabled), ABSENT);
    debug_field("remote_pending_call", DBG(debugger_support.debugger_pending_call), ABSENT);
    debug_field("remote_script_path", DBG(debugger_support.debugger_script_path), ABSENT);
    debug_field("remote_script_path_size", DBG(debugger_support.debugger_script_path_size), ABSENT);
#endif
    printf("    },\n");
    field("debug_size", (long)sizeof(_Py_DebugOffsets));
#undef DBG
#else
    field("debug_size", 0);
#endif
    field("n_debug_fields", n_debug_fields);
}

int main(void)
{
    printf("/* CPython %s, from its own headers */\n", PY_VERSION);
    printf("static const struct sonde_pyoffsets sonde_pyoffsets_%d_%d = {\n", PY_MAJOR_VERSION,
           PY_MINOR_VERSION);
    field("major", PY_MAJOR_VERSION);
    field("minor", PY_MINOR_VERSION);
    field("generated_micro", PY_MICRO_VERSION);
    runtime_fields();
    frame_fields();
    code_fields();
    unicode_fields();
    opcode_fields();
    debug_fields();
    frame_fields_3_14();
    code_fields_3_14();
    remote_exec_fields();
    debug_field_map();
    printf("};\n\n");
    return 0;
}
