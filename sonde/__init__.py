"""sonde: a profiler for Python. The implementation is in C (sonde._sonde)."""
try:
    from sonde._sonde import __version__, profile, start, stop  # noqa: F401
except ModuleNotFoundError as _missing:
    # A checkout's source folder, first on sys.path when Python runs from
    # the repository's root (`PYTHONPATH=build/lib python3 -m sonde`): its
    # modules are the build's, in build/lib/sonde beside it.
    import os as _os
    _built = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))),
                           "build", "lib", "sonde")
    if _missing.name != "sonde._sonde" or not _os.path.isdir(_built):
        raise
    __path__.insert(0, _built)
    from sonde._sonde import __version__, profile, start, stop  # noqa: F401
from sonde._sonde import Profile, run, runctx  # noqa: E402,F401


def load_ipython_extension(shell):
    """`%load_ext sonde`: registers the %%sonde and %sonde magics."""
    from sonde._ipython import load_ipython_extension as load
    load(shell)
