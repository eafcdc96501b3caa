/* entry.c — main() of build/bin/sonde.
 *
 * Owns: nothing but the process entry; the dispatcher is sonde_cli_main
 * (main.c). Only the command links src/cli/ and src/attach/: `python3 -m
 * sonde` execs this program (src/ext/module.c).
 */
#include "cli.h"

int main(int argc, char **argv)
{
    return sonde_cli_main(argc, argv);
}
