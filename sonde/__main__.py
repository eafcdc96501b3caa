"""python3 -m sonde ...: the same command as build/bin/sonde."""
import sys
from sonde._sonde import main
sys.exit(main(sys.argv))
