"""Puts a benchmark's generated section into docs/PERFORMANCE.md.

Each generator (run.py, attach.py, trace.py, tachyon.py) owns one section,
kept between two marker comments that name it:

    <!-- bench/run.py: generated, begin -->
    ...
    <!-- bench/run.py: generated, end -->

put_section replaces what lies between its own markers and leaves the rest
of the file as it was: the hand-written sections (measurements made by
hand, before/after tables of an issue) survive `make bench`. A file
without the section gets it at its end; a file that does not exist yet
is made with a title.
"""
import os

TITLE = "# Performance\n"


def _markers(owner):
    return ("<!-- %s: generated, begin -->" % owner, "<!-- %s: generated, end -->" % owner)


def put_section(path, owner, text):
    """Writes text (no markers) as owner's section of the file at path,
    atomically (a temporary file renamed over it). Returns "replaced" or
    "added"."""
    begin, end = _markers(owner)
    block = "%s\n%s\n%s" % (begin, text.strip("\n"), end)
    try:
        with open(path) as f:
            old = f.read()
    except FileNotFoundError:
        old = TITLE
    start = old.find(begin)
    stop = old.find(end, start + len(begin)) if start >= 0 else -1
    if start >= 0 and stop >= 0:
        new, how = old[:start] + block + old[stop + len(end):], "replaced"
    else:
        new, how = old.rstrip("\n") + "\n\n" + block + "\n", "added"
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)
    return how


def _self_test():
    import tempfile
    d = tempfile.mkdtemp()
    p = os.path.join(d, "P.md")
    assert put_section(p, "bench/a.py", "A1") == "added"
    with open(p, "a") as f:
        f.write("\nhand-written\n")
    assert put_section(p, "bench/b.py", "B1") == "added"
    assert put_section(p, "bench/a.py", "A2\n") == "replaced"
    text = open(p).read()
    assert "A1" not in text and "A2" in text and "B1" in text and "hand-written" in text, text
    assert text.index("A2") < text.index("hand-written") < text.index("B1"), text
    print("bench/doc.py self-test passed")


if __name__ == "__main__":
    _self_test()
