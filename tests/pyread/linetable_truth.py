"""linetable_truth.py — ground truth for tests/unit/test_linetable.c.

Runs under any supported CPython (src/pyread/pyversions.h). Compiles a set
of tricky functions (multi-line expressions, loops, try/except,
comprehensions, lines without code, line jumps over 127 and 255 in both
directions, decorators, long lines, huge line numbers), and for every code
object prints its raw line table and, for every instruction offset, the line
the interpreter itself reports: PyCode_Addr2Line through ctypes (the
function behind f_lineno in every version), cross-checked with co_lines() on
3.10+.

Output, one record per line, read by the C test on stdin:
    minor N
    code NAME FIRSTLINENO CODE_BYTES TABLE_HEX
    at OFFSET LINE          (LINE -1 = no line)
    warn TEXT               (the interpreter disagrees with itself)
"""
import ctypes
import sys

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int

BLANK_200 = "\n" * 200
BLANK_300 = "\n" * 300
LONG_SUM = " + ".join(["x"] * 400)
FAR_COLUMN = " " * 180

SOURCE = f'''
import functools

def simple(a, b):
    c = a + b

    d = c * 2
    return d

def multi_line(a, b):
    x = (a +
         b +
         a *
         b)
    y = dict(
        one=a,
        two=b,
    )
    return x, y

def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            continue
        total += i
    while total > 10:
        total -= 3
    return total

def handlers(f):
    try:
        f()
    except ValueError as e:
        print(e)
    except (KeyError, IndexError):
        pass
    else:
        return 1
    finally:
        print("done")
    with open(f) as fh:
        return fh.read()

def comprehensions(xs):
    a = [x * 2 for x in xs if x]
    b = {{x: y
         for x, y in zip(xs, xs)}}
    c = (x for x in xs)
    d = lambda q: q + 1
    return a, b, c, d

def jumps(a):
    a = 1
{BLANK_200}
    a = 2
{BLANK_300}
    a = 3
    return a

def backwards(a):
    return max(
        a,
{BLANK_300}
        a + 1)

def long_line(x):
    y = {LONG_SUM}
    return y

def far_column(x):
    y = 0;{FAR_COLUMN}y = x + x
    return (x
            + y)

@functools.lru_cache(maxsize=None)
@staticmethod
def decorated(
        a,
        b=3):
    return a

class Klass:
    def method(self):
        def inner():
            return self
        return inner

async def coro(x):
    await x
    async for y in x:
        pass
    async with x:
        return y

def gen(n):
    for i in range(n):
        yield i
    yield from range(n)

def empty():
    pass
'''

# A second source with huge line numbers (firstlineno over 65535).
SOURCE_FAR = "\n" * 70000 + '''
def far_away(a):
    b = a
    return b
'''


def walk(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from walk(const)


def table_of(code):
    if sys.version_info >= (3, 10):
        return code.co_linetable
    return code.co_lnotab


def lines_by_co_lines(code):
    truth = {}
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            truth[offset] = -1 if line is None else line
    return truth


def emit(code, out):
    table = table_of(code)
    size = len(code.co_code)
    out.append("code %s %d %d %s" % (code.co_name, code.co_firstlineno, size,
                                     table.hex() or "-"))
    from_lines = lines_by_co_lines(code) if sys.version_info >= (3, 10) else None
    for offset in range(0, size, 2):
        line = addr2line(code, offset)
        out.append("at %d %d" % (offset, line))
        if from_lines is not None and from_lines.get(offset, -1) != line:
            out.append("warn %s offset %d: PyCode_Addr2Line %d, co_lines %s" % (
                code.co_name, offset, line, from_lines.get(offset)))
    # Past the end. Before 3.10 the interpreter answers the last line; from
    # 3.10 no range covers it (co_lines); 3.11's PyCode_Addr2Line must not be
    # called there (it may index a cache array without a bound check).
    for offset in (size, size + 2, size + 1000):
        if sys.version_info < (3, 10):
            line = addr2line(code, offset)
        else:
            line = lines_by_co_lines(code).get(offset, -1)
        out.append("at %d %d" % (offset, line))


def main():
    out = ["minor %d" % sys.version_info[1]]
    for name, source in (("<tricky>", SOURCE), ("<far>", SOURCE_FAR)):
        module = compile(source, name, "exec")
        for code in walk(module):
            emit(code, out)
    sys.stdout.write("\n".join(out) + "\n")


main()
