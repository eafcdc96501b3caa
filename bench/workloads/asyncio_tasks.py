"""asyncio: many small tasks passing messages through queues."""
import asyncio

async def producer(q, n):
    for i in range(n):
        await q.put(i)
    await q.put(None)

async def consumer(q):
    total = 0
    while True:
        item = await q.get()
        if item is None:
            return total
        total += item

async def main():
    for _ in range(16):
        queues = [asyncio.Queue(maxsize=64) for _ in range(20)]
        await asyncio.gather(*(producer(q, 12_000) for q in queues), *(consumer(q) for q in queues))

asyncio.run(main())
