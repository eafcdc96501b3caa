/* message.c — what every command prints for itself: one-line errors and
 * help.
 *
 * Owns: sonde_cli_error ("sonde: <message>" on stderr, stdout flushed
 * first so that the two keep their order on one terminal) and
 * sonde_cli_help (a command's help, written by the caller's function, on
 * stdout). The command only; ordinary code.
 */
#include "cli.h"

#include "../core/buf.h"

#include <stdarg.h>
#include <stdio.h>

void sonde_cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("sonde: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int sonde_cli_help(void (*write)(sonde_buf_t *out))
{
    sonde_buf_t text = SONDE_BUF_INIT;
    write(&text);
    int rc = sonde_buf_error(&text);
    if (rc == 0) fputs(text.data ? text.data : "", stdout);
    sonde_buf_free(&text);
    if (rc < 0) sonde_cli_error("out of memory");
    return rc < 0 ? 1 : 0;
}
