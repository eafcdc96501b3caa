"""Pure-Python CPU: arithmetic and string building in loops."""
def work(n):
    acc = 0
    parts = []
    for i in range(n):
        acc += (i * i) % 13
        if i % 1000 == 0:
            parts.append(str(acc))
    return acc, len("".join(parts))

for _ in range(36):
    work(1_000_000)
