"""C functions and methods: module functions, methods of built-in types,
unbound method calls, class methods of built-in types, callbacks from C."""
import collections
import functools
import io
import itertools
import json
import math
import time


class Bag(list):
    pass


def work():
    items = []
    for i in range(50):
        items.append(i)
    bag = Bag()
    bag.append(1)
    bag.extend([2, 3])
    list.append(items, 99)
    d = {}
    for i in range(20):
        d.get(i, 0)
        d.setdefault(i % 5, []).append(i)
    s = ",".join(str(i) for i in range(10))
    s.split(",")
    s.upper()
    str.lower(s)
    len(items)
    max(items)
    min(items)
    sum(items)
    abs(-3)
    isinstance(d, dict)
    sorted(items, reverse=True)
    math.sqrt(16.0)
    math.floor(2.5)
    time.perf_counter()
    dict.fromkeys("abc")
    int.from_bytes(b"\x01\x02", "big")
    collections.Counter("hello").most_common(1)
    functools.reduce(lambda a, b: a + b, range(10))
    list(itertools.chain([1], [2]))
    buf = io.StringIO()
    buf.write("x")
    buf.getvalue()
    json.dumps({"a": [1, 2]})
    getattr(d, "keys")()
    hasattr(d, "x")
    object.__new__(object)
    [].sort(key=len)
    return items


def main():
    for _ in range(3):
        work()


main()
