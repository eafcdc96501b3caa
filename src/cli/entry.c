/* entry.c — main() of build/bin/sonde.
 *
 * Owns: nothing but the process entry; everything is in sonde_cli_main so
 * that `python3 -m sonde` runs the very same code.
 */
#include "cli.h"

int main(int argc, char **argv) { return sonde_cli_main(argc, argv); }
