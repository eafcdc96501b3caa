"""python3 -m sonde ...: runs the sonde command installed with this package
(<prefix>/bin/sonde for the package in <prefix>/lib/sonde, in a venv's or
~/.local's site-packages, or `make install`'s <prefix>/lib/sonde/sonde) with
this interpreter."""
import sys
from sonde._sonde import main
sys.exit(main(sys.argv))
