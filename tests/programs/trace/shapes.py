"""Lambdas, comprehensions, closures, class and static methods, properties,
dunder methods called by the interpreter, super()."""
import functools


class Shape:
    count = 0

    def __init__(self, size):
        self.size = size
        Shape.count += 1

    def area(self):
        return self.size * self.size

    @property
    def double(self):
        return self.size * 2

    @classmethod
    def unit(cls):
        return cls(1)

    @staticmethod
    def describe(x):
        return "shape %s" % x

    def __len__(self):
        return self.size

    def __call__(self, factor):
        return self.area() * factor

    def __eq__(self, other):
        return self.size == other.size

    __hash__ = object.__hash__


class Square(Shape):
    def area(self):
        return super().area()


def outer(n):
    def inner(k):
        return k + n
    return [inner(i) for i in range(n)]


def main():
    shapes = [Shape(i) for i in range(10)]
    shapes += [Square(i) for i in range(5)]
    total = sum(s.area() for s in shapes)
    total += sum(map(lambda s: s.double, shapes))
    areas = {s.size: s.area() for s in shapes}
    sizes = {len(s) for s in shapes}
    Shape.unit()
    Square.unit()
    Shape.describe(3)
    shapes[0].describe(4)
    shapes[2](3)
    shapes[1] == shapes[2]
    key = lambda s: -s.size  # noqa: E731
    ordered = sorted(shapes, key=key)
    outer(6)
    functools.partial(Shape.describe, 5)()
    [x for x in range(3) if (lambda y: y > 0)(x)]
    return total, areas, sizes, ordered


main()
