/* pstats_file.c — the pstats file of `sonde trace -o` and Profile.dump_stats.
 *
 * Owns: the layout of a pstats file, which is marshal.dump of one dict
 * and nothing else (no header):
 *   {(file, line, name): (cc, nc, tt, ct, {(file, line, name): (nc, cc, tt, ct)})}
 * Note the caller tuples put the total count first, the entries the
 * primitive count. Built-ins are ('~', 0, '<built-in method ...>').
 * Encoding by src/core/marshal.c. Pure C, no Python; called at report
 * time with or without the GIL.
 */
#include "pstats.h"

#include "../core/marshal.h"

static void pstats_key(sonde_buf_t *out, const sonde_trace_row_t *row)
{
    sonde_marshal_tuple(out, 3);
    sonde_marshal_str(out, row->file, row->file_len);
    sonde_marshal_int(out, row->line);
    sonde_marshal_str(out, row->name, row->name_len);
}

int sonde_trace_pstats_marshal(const sonde_trace_stats_t *s, sonde_buf_t *out)
{
    if (s->n_rows == 0) return -ENODATA;
    sonde_marshal_dict_begin(out);
    for (size_t i = 0; i < s->n_rows; i++) {
        const sonde_trace_row_t *row = &s->rows[i];
        pstats_key(out, row);
        sonde_marshal_tuple(out, 5);
        sonde_marshal_int(out, (int64_t)row->cc);
        sonde_marshal_int(out, (int64_t)row->nc);
        sonde_marshal_float(out, row->tt);
        sonde_marshal_float(out, row->ct);
        sonde_marshal_dict_begin(out);
        for (size_t k = 0; k < row->n_callers; k++) {
            const sonde_trace_caller_t *c = &row->callers[k];
            pstats_key(out, &s->rows[c->row]);
            sonde_marshal_tuple(out, 4);
            sonde_marshal_int(out, (int64_t)c->nc);
            sonde_marshal_int(out, (int64_t)c->cc);
            sonde_marshal_float(out, c->tt);
            sonde_marshal_float(out, c->ct);
        }
        sonde_marshal_dict_end(out);
    }
    sonde_marshal_dict_end(out);
    return sonde_buf_error(out);
}
