"""IPython's %%sonde and %sonde magics (`%load_ext sonde`).

Thin glue: the cell runs in the notebook's own namespace (IPython's
run_cell) between sonde.start() and sonde.stop(), whose C code checks the
options (`sonde run`'s) and writes the report to a temporary file; this
shows that report: the HTML page in an iframe (srcdoc) in a notebook, the
text report in a terminal.
"""
import html
import io
import os
import shlex
import sys
import tempfile

from sonde import _sonde


def _split_line(line):
    """(option words, the rest of the line as typed) for `%sonde OPTIONS CODE`:
    the options end where `sonde run`'s parser says (C: _option_words)."""
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    words, ends = [], []
    while True:
        try:
            word = lexer.get_token()
        except ValueError:  # the statement's own quotes: no option is past them
            break
        if word is None:
            break
        words.append(word)
        ends.append(stream.tell())
    n = _sonde._option_words(words)
    return words[:n], (line[ends[n - 1]:] if n else line).strip()


def _in_notebook(shell):
    """A Jupyter kernel's shell has a kernel; the terminal's has none."""
    return getattr(shell, "kernel", None) is not None


def _magic_cell(shell):
    """The name IPython compiled the cell holding %%sonde under (found on the
    stack among the cells its compiler cached), or None: that cell's one
    line, the call of the magic, is not the user's code to profile."""
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename not in names:
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else None


def _title(magic, code):
    """The report's header for code profiled by magic: its first line that
    is not blank, not the kernel's command line."""
    first = next((text.strip() for text in code.splitlines() if text.strip()), "")
    return "%s %s" % (magic, first[:77] + "..." if len(first) > 80 else first)


def _profile(shell, options, code, exclude=None, magic="%%sonde"):
    """Runs code as a cell under sonde and displays the report; exclude: a
    file name not to profile."""
    notebook = _in_notebook(shell)
    fd, path = tempfile.mkstemp(prefix="sonde-", suffix=".html" if notebook else ".txt")
    os.close(fd)
    try:
        # the kernel's own threads, idle in poll, are not the cell's
        _sonde.start(outfile=path, format="html" if notebook else "text", options=options,
                     other_threads=False, profile_exclude=[exclude] if exclude else None,
                     program=_title(magic, code))
        try:
            shell.run_cell(code, store_history=False)
        finally:
            _sonde.stop()
        with open(path, encoding="utf-8", errors="replace") as f:
            report = f.read()
    finally:
        os.unlink(path)
    if not report:  # under `sonde run`, start() and stop() do nothing
        return
    if notebook:
        from IPython.display import display
        frame = ('<iframe srcdoc="%s" style="width:100%%;height:640px;border:1px solid #ccc">'
                 "</iframe>" % html.escape(report, quote=True))
        display({"text/html": frame, "text/plain": "<sonde report>"}, raw=True)
    else:
        print(report, end="")


def load_ipython_extension(shell):
    """Registers %%sonde and %sonde with shell."""
    def sonde(line, cell=None):
        """%%sonde [options]: profiles the cell; %sonde [options] statement: the
        statement. The options are `sonde run`'s (--profile-all, --interval S,
        --cpu-percent-threshold P, --all-lines, --stacks, ...)."""
        from IPython.core.error import UsageError
        try:
            if cell is None:  # the cell around %sonde may hold the code it calls
                options, code = _split_line(line)
                _profile(shell, options, code, magic="%sonde")
            else:
                _profile(shell, shlex.split(line), cell, _magic_cell(shell))
        except (ValueError, TypeError, RuntimeError) as e:  # the options, as C checked them
            raise UsageError(str(e)) from None

    shell.register_magic_function(sonde, "line_cell", "sonde")
