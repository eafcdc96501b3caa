"""Native-heavy: sorting, hashing and compressing in C."""
import hashlib
import random
import zlib

random.seed(1)
values = [random.random() for _ in range(400_000)]
blob = bytes(random.getrandbits(8) for _ in range(1 << 18)) * 16
for _ in range(20):
    sorted(values)
    hashlib.sha256(blob).digest()
    zlib.compress(blob, 6)
