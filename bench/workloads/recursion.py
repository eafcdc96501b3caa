"""Call-heavy recursion (fib)."""
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

for _ in range(20):
    fib(31)
