"""python3 -m sonde ...: runs the sonde command installed beside this package
(<prefix>/bin/sonde for <prefix>/lib/sonde) with this interpreter."""
import sys
from sonde._sonde import main
sys.exit(main(sys.argv))
