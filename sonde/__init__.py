"""sonde: a profiler for Python. The implementation is in C (sonde._sonde)."""
from sonde._sonde import __version__, profile, start, stop  # noqa: F401
from sonde._sonde import Profile, run, runctx  # noqa: F401


def load_ipython_extension(shell):
    """`%load_ext sonde`: registers the %%sonde and %sonde magics."""
    from sonde._ipython import load_ipython_extension as load
    load(shell)
