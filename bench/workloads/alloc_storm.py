"""Allocation storm: millions of small objects (tuples, floats, ints, small
dicts), some kept for a while and most dropped at once: the hottest path of
the allocator shim (Python's small-object wrappers)."""


def storm(rounds):
    kept = []
    for r in range(rounds):
        batch = [(i, i * 0.5, {"k": i}) for i in range(200_000)]
        kept.append(batch[::50])
        if len(kept) > 10:
            kept.pop(0)
        del batch
    return len(kept)


storm(12)
