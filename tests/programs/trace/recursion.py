"""Deep, mutual and indirect recursion (sonde trace: counts vs cProfile)."""
import sys

def down(n):
    return 0 if n == 0 else 1 + down(n - 1)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def is_even(n):
    return True if n == 0 else is_odd(n - 1)

def is_odd(n):
    return False if n == 0 else is_even(n - 1)

def a(n):
    return b(n) if n > 0 else 0

def b(n):
    return len([n]) + a(n - 1)

def walk(tree):
    return 1 + sum(walk(child) for child in tree)

def main():
    sys.setrecursionlimit(5000)
    down(900)
    fib(18)
    for i in range(20):
        is_even(i)
    a(50)
    walk([[[], []], [[[]]], []])
    sorted(range(30), key=lambda x: fib(x % 5))

main()
