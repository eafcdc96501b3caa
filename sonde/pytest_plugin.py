"""pytest plugin: `pytest --sonde` profiles the test session with sonde.

Glue only: options, hooks and calls into sonde._sonde, where the profiler,
the per-test figures and every report are (C). Registered by the package's
`pytest11` entry point (`sonde = sonde.pytest_plugin`), or `-p
sonde.pytest_plugin`. Without --sonde, --sonde-output or --sonde-per-test
it does nothing but add its options.
"""
import os
import sys

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("sonde", "profiling with sonde")
    group.addoption("--sonde", action="store_true",
                    help="profile the test session with sonde; the report goes to "
                         "stderr at the end (or to --sonde-output)")
    group.addoption("--sonde-output", metavar="FILE",
                    help="write the report to FILE (implies --sonde); its ending "
                         "picks the format as with `sonde run -o`")
    # The formats are the registry's (src/report/format.c), which
    # `sonde run --help` lists: no copy here to fall behind.
    group.addoption("--sonde-format", metavar="FORMAT",
                    help="the report's format (implies --sonde): any that `sonde run "
                         "--format` takes (`sonde run --help` lists them)")
    group.addoption("--sonde-per-test", action="store_true",
                    help="(implies --sonde) add the slowest tests, each with its "
                         "lines of most time, to the terminal summary")
    group.addoption("--sonde-slowest", metavar="N", type=int, default=5,
                    help="how many tests --sonde-per-test shows (5)")


def pytest_configure(config):
    opt = config.option
    if not (opt.sonde or opt.sonde_output or opt.sonde_format or opt.sonde_per_test):
        return
    config.pluginmanager.register(SondeSession(config), "sonde-session")


class SondeSession:
    """The profiled session: started at configure, reported at unconfigure
    (after pytest's own output, as `sonde run` reports after the program)."""

    def __init__(self, config):
        from sonde import _sonde
        self._sonde = _sonde
        self.per_test = config.option.sonde_per_test
        self.slowest = config.option.sonde_slowest
        options = {}
        if config.option.sonde_output:
            options["outfile"] = config.option.sonde_output
        if config.option.sonde_format:
            options["format"] = config.option.sonde_format
        # The command that started pytest (`pytest`, `pytest-3`, a venv's
        # bin/pytest) is a real file outside site-packages: without this,
        # pytest's own work would be charged to its one line.
        if sys.argv and sys.argv[0] and os.path.isfile(sys.argv[0]):
            options["profile_exclude"] = [sys.argv[0]]
        try:
            _sonde.start(**options)
        except (ValueError, TypeError, OSError, RuntimeError) as e:
            raise pytest.UsageError(str(e)) from None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.per_test:
            self._sonde._span_begin(item.nodeid)
        try:
            yield
        finally:
            if self.per_test:
                self._sonde._span_end()

    def pytest_terminal_summary(self, terminalreporter, config):
        if not self.per_test:
            return
        text = self._sonde._spans_text(self.slowest, 3, config.get_terminal_writer().fullwidth)
        if text:
            terminalreporter.write_sep("=", "sonde: slowest tests, with their lines of most time")
            for line in text.splitlines():
                terminalreporter.write_line(line)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        try:
            self._sonde.stop()
        except Exception as e:  # never lose pytest's exit status for a report
            sys.stderr.write("%s\n" % e if str(e).startswith("sonde: ") else "sonde: %s\n" % e)
