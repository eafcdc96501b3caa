"""check_layers: the seams of src/ that the compiler does not check.

    python3 tools/check_layers.py [--self-test] [SRC_DIR]

`make check-layers` runs it (and `make test` first of all); it prints one
line per breach, FILE:LINE: what, and fails when there is any. Plain text
over the sources (comments removed, string literals kept apart), no build:
it takes well under a second.

The rules (docs/ARCHITECTURE.md, "Layers"):
  - The operating system is reached through src/prim/ only: no file outside
    it calls prctl, ptrace, process_vm_readv/writev, setns, unshare,
    perf_event_open or syscall, includes their headers (<sys/prctl.h>,
    <sys/ptrace.h>, <sys/syscall.h>, <linux/...>), tests __linux__, or
    names a path under /proc in a string literal (a /proc reader).
  - Layers point one way: src/core/ includes nothing outside src/core/;
    src/prim/ includes nothing outside src/prim/ and src/core/.
  - A folder's *_internal.h is included from that folder only.
  - Folders call one another one way: a call from a file of folder A to a
    sonde_* function defined in folder B makes A depend on B, and these
    dependencies form no cycle (a header that declares another folder's
    functions would hide one from the include rule; callbacks handed down
    as function pointers are how a lower folder reaches a higher one).
Comments do not count: a banner may say what /proc file a prim function
reads. --self-test feeds the rules breaches and near misses, so that a
check that could no longer fail is caught.
"""

import os
import re
import sys

OS_CALLS = ("prctl", "ptrace", "process_vm_readv", "process_vm_writev", "setns", "unshare",
            "perf_event_open", "syscall")
OS_HEADERS = re.compile(r"^(sys/prctl\.h|sys/ptrace\.h|sys/syscall\.h|linux/.*)$")
CALL = re.compile(r"\b(%s)\s*\(" % "|".join(OS_CALLS))
LINUX_TEST = re.compile(r"\b__linux__\b")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]*)[>"]')
# Folders below everything, and what each may include besides itself.
LAYERS = {"core": (), "prim": ("core",)}


def split_code(text):
    """Returns (code, strings): text with comments blanked and string and
    character literals emptied (newlines kept, so line numbers hold), and
    the list of (line, contents) of the string literals."""
    code, strings = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            code.append("\n" * text.count("\n", i, end) or " ")
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            code.append(" ")
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                strings.append((line, text[i + 1:j]))
            code.append(c + c)
            i = j + 1
        else:
            if c == "\n":
                line += 1
            code.append(c)
            i += 1
    return "".join(code), strings


def check_file(rel, text):
    """Breaches of one file: a list of "rel:line: what"."""
    parts = rel.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] == "src" else None
    in_prim = folder == "prim"
    code, strings = split_code(text)
    lines = text.split("\n")
    found = []
    for number, row in enumerate(code.split("\n"), 1):
        if INCLUDE.match(row):
            found += check_include(rel, number, folder, lines[number - 1])
            continue
        if in_prim:
            continue
        for call in CALL.finditer(row):
            found.append("%s:%d: %s() outside src/prim/ (call the prim.h function that wraps it)"
                         % (rel, number, call.group(1)))
        if LINUX_TEST.search(row):
            found.append("%s:%d: __linux__ tested outside src/prim/" % (rel, number))
    if not in_prim:
        for number, literal in strings:
            if literal.startswith("/proc"):
                found.append('%s:%d: "%s" read outside src/prim/ (the /proc readers are '
                             "prim.h's)" % (rel, number, literal))
    return found


def check_include(rel, number, folder, row):
    """Breaches of the include on line number, row (as written: the code
    row has its string literal emptied)."""
    match = INCLUDE.match(row)
    if not match:
        return []
    kind, path = match.group(1), match.group(2)
    found = []
    if kind == "<":
        if folder != "prim" and OS_HEADERS.match(path):
            found.append("%s:%d: <%s> included outside src/prim/" % (rel, number, path))
        return found
    target = os.path.normpath(os.path.join(os.path.dirname(rel), path))
    tparts = target.split("/")
    tfolder = tparts[1] if len(tparts) > 2 and tparts[0] == "src" else None
    if folder in LAYERS and tfolder != folder and tfolder not in LAYERS[folder]:
        found.append("%s:%d: src/%s/ includes %s, above it (%s)"
                     % (rel, number, folder, target,
                        "core includes only core" if folder == "core"
                        else "prim includes only prim and core"))
    if tparts[-1].endswith("_internal.h") and tfolder != folder:
        found.append("%s:%d: %s is internal to src/%s/" % (rel, number, target, tfolder))
    return found


# A function definition at the start of a line (its name sonde_*), and a call.
DEFINITION = re.compile(r"^(?:[A-Za-z_][\w \t*]*[ \t*])?(sonde_\w+)\s*\([^;{]*\)\s*\{", re.M)
CALL_SONDE = re.compile(r"\b(sonde_\w+)\s*\(")


def folder_of(rel):
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "src" else None


def check_calls(texts):
    """Cycles among the folders' calls, texts being {rel: text}: one breach
    per pair of folders that reach each other, naming a call each way."""
    codes = {rel: split_code(text)[0] for rel, text in texts.items()}
    defined = {}
    for rel, code in codes.items():
        if rel.endswith(".c"):
            for match in DEFINITION.finditer(code):
                defined.setdefault(match.group(1), set()).add(folder_of(rel))
    calls = {}  # (from folder, to folder) -> "rel:line: name" of the first call
    for rel in sorted(codes):
        here = folder_of(rel)
        for number, row in enumerate(codes[rel].split("\n"), 1):
            for match in CALL_SONDE.finditer(row):
                for there in defined.get(match.group(1), ()):
                    if here and there and there != here:
                        calls.setdefault((here, there), "%s:%d: %s()" % (rel, number,
                                                                        match.group(1)))
    edges = {}
    for here, there in calls:
        edges.setdefault(here, set()).add(there)

    def path(start, goal):
        seen, todo = {start: None}, [start]
        while todo:
            node = todo.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt not in seen:
                    seen[nxt] = node
                    todo.append(nxt)
        if goal not in seen:
            return None
        hops, node = [], goal
        while seen[node] is not None:
            hops.append((seen[node], node))
            node = seen[node]
        return hops[::-1]

    found = []
    folders = sorted(edges)
    for i, a in enumerate(folders):
        for b in folders[i + 1:]:
            there, back = path(a, b), path(b, a)
            if there and back:
                found.append("%s (and back: %s): src/%s/ and src/%s/ call each other; hand the "
                             "lower one a callback instead"
                             % (calls[there[0]], calls[back[0]], a, b))
    return found


def check_tree(src):
    root = os.path.dirname(os.path.abspath(src))
    found, texts = [], {}
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                texts[rel] = f.read()
            found += check_file(rel, texts[rel])
    return sorted(found) + check_calls(texts)


SELF_TESTS = [
    # (file, text, breaches expected)
    ("src/collect/x.c", '/* reads /proc/PID/stat; prctl(2) */\nint f(void);\n', 0),
    ("src/collect/x.c", '// ptrace(PTRACE_ATTACH) is not used\n', 0),
    ("src/collect/x.c", 'const char *m = "kernel.yama.ptrace_scope (see ptrace(2))";\n', 0),
    ("src/collect/x.c", 'int sonde_prim_ptrace_scope(void);\nint y = my_syscall_count;\n', 0),
    ("src/collect/x.c", 'void f(void) { prctl(PR_SET_DUMPABLE, 0); }\n', 1),
    ("src/ext/x.c", 'void f(void) { syscall (SYS_gettid); }\n', 1),
    ("src/pyread/x.c", 'n = process_vm_readv(pid, &l, 1, &r, 1, 0);\n', 1),
    ("src/collect/x.c", 'snprintf(p, sizeof p, "/proc/%d/stat", pid);\n', 1),
    ("src/cli/x.c", '#include <sys/prctl.h>\n#include <linux/perf_event.h>\n', 2),
    ("src/cli/x.c", '#ifdef __linux__\n#endif\n', 1),
    ("src/prim/x.c", '#include <sys/prctl.h>\nvoid f(void) { prctl(1); open("/proc/self"); }\n',
     0),
    ("src/core/x.c", '#include "../prim/prim.h"\n#include "buf.h"\n', 1),
    ("src/core/x.h", '#include "common.h"\n#include <stdio.h>\n', 0),
    ("src/prim/x.c", '#include "../core/buf.h"\n#include "../model/model.h"\n', 1),
    ("src/model/x.c", '#include "../prim/prim_internal.h"\n#include "model_internal.h"\n', 1),
    ("src/model/x.c", 'char c = \'"\'; const char *s = "a\\"/proc"; /* "/proc" */\n', 0),
]


# (files, breaches expected) for the call rule
CALL_SELF_TESTS = [
    ({"src/ext/a.c": "int sonde_a(void)\n{\n    return sonde_t();\n}\n",
      "src/trace/t.c": "int sonde_t(void)\n{\n    return 1;\n}\n"}, 0),
    ({"src/ext/a.c": "int sonde_a(void)\n{\n    return sonde_t();\n}\n",
      "src/trace/t.c": "int sonde_t(void)\n{\n    return sonde_a();\n}\n"}, 1),
    # through a third folder
    ({"src/ext/a.c": "int sonde_a(void)\n{\n    return sonde_t();\n}\n",
      "src/trace/t.c": "int sonde_t(void)\n{\n    return sonde_r();\n}\n",
      "src/report/r.c": "static int\nsonde_r(void)\n{\n    return sonde_a();\n}\n"}, 3),
    # a call in a comment is none; a header that declares the other folder's
    # function depends on it (the way a cycle was once hidden)
    ({"src/ext/a.c": "int sonde_a(void)\n{\n    return sonde_t();\n}\n",
      "src/trace/t.h": "int sonde_a(void);\n",
      "src/trace/t.c": "/* sonde_a() calls us */\nint sonde_t(void)\n{\n    return 0;\n}\n"},
     1),
]


def self_test():
    bad = 0
    for texts, expected in CALL_SELF_TESTS:
        found = check_calls(texts)
        if len(found) != expected:
            bad += 1
            print("check_layers self-test: calls %r: %d breaches, expected %d: %s"
                  % (sorted(texts), len(found), expected, found))
    for rel, text, expected in SELF_TESTS:
        found = check_file(rel, text)
        if len(found) != expected:
            bad += 1
            print("check_layers self-test: %s %r: %d breaches, expected %d: %s"
                  % (rel, text, len(found), expected, found))
    return bad


def main(argv):
    args = [a for a in argv if a != "--self-test"]
    if len(args) != len(argv) and self_test():
        return 1
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "src")
    found = check_tree(src)
    for line in found:
        print(line)
    if found:
        print("check_layers: %d breach(es) of the seams (tools/check_layers.py says the rules)"
              % len(found))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
