"""sonde: a profiler for Python. The implementation is in C (sonde._sonde)."""
from sonde._sonde import __version__, profile, start, stop  # noqa: F401
from sonde._sonde import Profile, run, runctx  # noqa: F401
