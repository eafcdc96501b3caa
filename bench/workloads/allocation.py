"""Allocation-heavy: building and dropping many small and large objects."""
def churn(rounds):
    for r in range(rounds):
        objs = [{"i": i, "s": "x" * (i % 50), "l": [i] * (i % 8)} for i in range(100_000)]
        big = [bytearray(1 << 16) for _ in range(200)]
        del objs, big

churn(36)
