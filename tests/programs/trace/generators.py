"""Generators (send, throw, close, yield from) and asyncio coroutines."""
import asyncio


def count(n):
    for i in range(n):
        yield i


def echo():
    received = []
    try:
        while True:
            value = yield len(received)
            received.append(value)
    except GeneratorExit:
        pass


def delegate(n):
    yield from count(n)
    yield from count(n)


def squares(n):
    return sum(x * x for x in range(n))


def consume():
    total = 0
    for x in count(10):
        total += x
    list(count(5))
    g = echo()
    next(g)
    for i in range(4):
        g.send(i)
    g.close()
    list(delegate(3))
    it = count(100)
    next(it)
    next(it)
    try:
        it.throw(ValueError("stop"))
    except ValueError:
        pass
    squares(20)
    return total


async def leaf(i):
    await asyncio.sleep(0)
    return i * 2


async def branch(n):
    results = []
    for i in range(n):
        results.append(await leaf(i))
    return sum(results)


async def root():
    values = await asyncio.gather(branch(3), branch(4))
    return sum(values)


def main():
    consume()
    asyncio.run(root())


main()
