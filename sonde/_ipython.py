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
import tempfile

from sonde import _sonde


def _split_line(line):
    """(option words, the rest of the line as typed) for `%sonde OPTIONS CODE`:
    the options end where `sonde run`'s parser says (C: _option_words)."""
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    words, ends = [], []
    for word in iter(lexer.get_token, None):
        words.append(word)
        ends.append(stream.tell())
    n = _sonde._option_words(words)
    return words[:n], (line[ends[n - 1]:] if n else line).strip()


def _in_notebook(shell):
    """A Jupyter kernel's shell has a kernel; the terminal's has none."""
    return getattr(shell, "kernel", None) is not None


def _profile(shell, options, code):
    """Runs code as a cell under sonde and displays the report."""
    notebook = _in_notebook(shell)
    fd, path = tempfile.mkstemp(prefix="sonde-", suffix=".html" if notebook else ".txt")
    os.close(fd)
    try:
        # the kernel's own threads, idle in poll, are not the cell's
        _sonde.start(outfile=path, format="html" if notebook else "text", options=options,
                     other_threads=False)
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
            if cell is None:
                options, code = _split_line(line)
            else:
                options, code = shlex.split(line), cell
            _profile(shell, options, code)
        except (ValueError, TypeError, RuntimeError) as e:  # the options, as C checked them
            raise UsageError(str(e)) from None

    shell.register_magic_function(sonde, "line_cell", "sonde")
