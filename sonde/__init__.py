"""sonde: a profiler for Python. The implementation is in C (sonde._sonde)."""
from sonde._sonde import __version__, profile, start, stop  # noqa: F401
