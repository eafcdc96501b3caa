"""Exceptions raised through several frames, from C functions, re-raised."""


class AppError(Exception):
    pass


def level3(n):
    if n % 3 == 0:
        raise AppError(n)
    return n


def level2(n):
    return level3(n) + 1


def level1(n):
    try:
        return level2(n)
    finally:
        cleanup()


def cleanup():
    pass


def parse(text):
    try:
        return int(text)
    except ValueError:
        return None


def lookup(d, k):
    try:
        return d[k]
    except KeyError:
        return missing(k)


def missing(k):
    return len(str(k))


def reraise(n):
    try:
        level1(n)
    except AppError as e:
        raise RuntimeError("wrapped") from e


def main():
    caught = 0
    for i in range(30):
        try:
            level1(i)
        except AppError:
            caught += 1
    for text in ["1", "x", "22", "", "3"]:
        parse(text)
    d = {"a": 1}
    for k in ["a", "b", "c"]:
        lookup(d, k)
    for i in range(6):
        try:
            reraise(i)
        except RuntimeError:
            pass
    try:
        sorted([3, "a"])
    except TypeError:
        pass
    return caught


main()
