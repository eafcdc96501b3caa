# Imported by the interpreter at start-up under `sonde run` / `sonde trace`:
# starts profiling and removes every trace of itself (see src/ext/boot.c).
import sys
_parent = __file__.rsplit("/", 3)[0]  # <parent>/sonde/_boot/sitecustomize.py
sys.path.insert(0, _parent)
try:
    from sonde._sonde import _boot
except ImportError as error:
    import os
    if "SONDE_RUN_MODE" not in os.environ:
        raise
    sys.stderr.write("sonde: cannot load sonde's extension for %s: %s (build sonde for this "
                     "interpreter with 'make PYTHON=%s')\n" % (sys.executable, error, sys.executable))
    sys.stderr.flush()
    os._exit(2)
finally:
    sys.path.remove(_parent)
_boot()
