# Imported by the interpreter at start-up under `sonde run`: starts profiling
# and removes every trace of itself (see src/ext/boot.c).
from sonde._sonde import _boot
_boot()
