"""code_truth.py — ground truth for tests/unit/test_pyread_code.c.

Runs under any supported CPython (src/pyread/pyversions.h). Compiles
functions full of calls of every kind (plain, method, keyword,
*args/**kwargs, builtins that 3.11+ specialises such as
len/isinstance/str/type/list.append, class creation, 300-argument calls that
need EXTENDED_ARG), runs them until the adaptive interpreter has specialised
them, and prints for each code object:

    code NAME ADAPTIVE_HEX ORIG_HEX
    expect BITS

ADAPTIVE_HEX is the bytecode as it sits in memory (co_code before 3.11,
_co_code_adaptive from 3.11: specialised, and from 3.12 also instrumented
when the record is one of the "traced" ones), ORIG_HEX the opcodes hidden
by INSTRUMENTED_LINE / INSTRUMENTED_INSTRUCTION, one per code unit ("-"
when none), standing in for the code's _co_monitoring data. BITS has one
character per 2-byte code unit, 1 where the unit belongs to a call-family
instruction (its EXTENDED_ARG prefixes and inline caches included). The
truth comes from the interpreter itself: instruction boundaries and names
from dis on the de-optimised co_code, call-family names from
tools/gen_offsets/call_opcodes.txt.
"""
import dis
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CALL_NAMES = set()
with open(os.path.join(HERE, "..", "..", "tools", "gen_offsets", "call_opcodes.txt")) as f:
    for line in f:
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            CALL_NAMES.add(line)

MANY_ARGS = ", ".join("a%d" % i for i in range(300))

SOURCE = '''
import functools

class Point:
    def __init__(self, x):
        self.x = x
    def norm(self):
        return abs(self.x)

def sink(*args, **kwargs):
    return len(args) + len(kwargs)

def calls(x, items, point):
    a = len(items)
    b = isinstance(x, int)
    c = str(x)
    d = type(x)
    e = tuple(items)
    items.append(x)
    items.pop()
    f = point.norm()
    g = Point(x)
    h = sink(x, key=x)
    i = sink(*items, **{"k": 1})
    j = max(x, 1)
    k = sorted(items, key=abs)
    l = functools.reduce(lambda p, q: p + q, items, 0)
    return a, b, c, d, e, f, g, h, i, j, k, l

def many(%s):
    return sink(%s)

def no_calls(x):
    y = x + 1
    for i in range(0):
        y -= i
    return y * 2 if y else -y
''' % (MANY_ARGS, MANY_ARGS)


def walk(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from walk(const)


def adaptive_bytes(code):
    if sys.version_info >= (3, 11):
        return bytes(code._co_code_adaptive)
    return code.co_code


def expected_bits(code):
    """One flag per code unit, from dis on the de-optimised bytecode."""
    size = len(code.co_code) // 2
    instructions = list(dis.get_instructions(code))
    flags = [False] * size
    start = 0
    for k, ins in enumerate(instructions):
        end = instructions[k + 1].offset // 2 if k + 1 < len(instructions) else size
        if ins.opname == "EXTENDED_ARG":
            continue  # its units go with the instruction it extends
        is_call = ins.opname in CALL_NAMES
        for unit in range(start, end):
            flags[unit] = is_call
        start = end
    return "".join("1" if f else "0" for f in flags)


def hidden_opcodes(code, adaptive):
    """What INSTRUMENTED_LINE / INSTRUMENTED_INSTRUCTION hide, per unit."""
    hiders = {dis.opmap.get("INSTRUMENTED_LINE"), dis.opmap.get("INSTRUMENTED_INSTRUCTION")}
    hiders.discard(None)
    if not any(adaptive[i] in hiders for i in range(0, len(adaptive), 2)):
        return "-"
    # The de-optimised co_code has the base instruction at every unit; any
    # member of the family classifies the same.
    return bytes(code.co_code[i] for i in range(0, len(code.co_code), 2)).hex()


def emit(codes, label, out):
    for code in codes:
        adaptive = adaptive_bytes(code)
        out.append("code %s%s %s %s" % (code.co_name, label, adaptive.hex(),
                                        hidden_opcodes(code, adaptive)))
        out.append("expect %s" % expected_bits(code))


def exercise(namespace):
    point = namespace["Point"](3)
    for i in range(3000):
        namespace["calls"](i, [1, 2, 3], point)
        namespace["no_calls"](i)
    namespace["many"](*range(300))


def main():
    out = ["minor %d" % sys.version_info[1]]
    module = compile(SOURCE, "<calls>", "exec")
    namespace = {}
    exec(module, namespace)
    exercise(namespace)
    codes = [c for c in walk(module) if c.co_name != "<module>"]
    # exec() compiled new code objects from `module`'s constants: use the
    # ones the functions actually run.
    live = [namespace[n].__code__ for n in ("calls", "many", "no_calls", "sink")]
    live.append(namespace["Point"].norm.__code__)
    live.append(namespace["Point"].__init__.__code__)
    emit(live, "", out)
    if sys.version_info >= (3, 12):
        # Instrument everything (INSTRUMENTED_CALL, INSTRUMENTED_LINE...),
        # then also per-instruction events (INSTRUMENTED_INSTRUCTION).
        sys.settrace(lambda frame, event, arg: None)
        sys.setprofile(lambda frame, event, arg: None)
        exercise(namespace)
        sys.settrace(None)
        sys.setprofile(None)
        emit(live, "+traced", out)
        monitoring = sys.monitoring
        monitoring.use_tool_id(3, "code_truth")
        monitoring.set_events(3, monitoring.events.INSTRUCTION | monitoring.events.CALL)
        monitoring.register_callback(3, monitoring.events.INSTRUCTION, lambda *a: None)
        exercise(namespace)
        emit(live, "+instructions", out)
        monitoring.set_events(3, 0)
        monitoring.free_tool_id(3)
    del codes
    sys.stdout.write("\n".join(out) + "\n")


main()
