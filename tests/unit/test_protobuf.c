/* test_protobuf.c — unit tests of the protobuf encoder (src/core/protobuf.c)
 * and of the pprof writer's document (src/report/pprof.c).
 *
 * The encoder's bytes are checked against the wire format's own examples
 * (varint 150 = 96 01, field 1 = 08 96 01, a string "testing" in field 2 =
 * 12 07 74 65 73 74 69 6e 67) and its edges (0, 127, 128, 2^64-1, -1 as
 * ten bytes, packed fields). The writer's output, read back here with a
 * small reader, has string_table[0] == "", the sample types in order, one
 * location per line, and falls back to plain protobuf when the compress
 * callback answers -ENOSYS; another callback error is the writer's.
 */
#include "core/protobuf.h"
#include "report/report.h"

#include "check.h"

#include <stdint.h>

static char *pb_hex(const sonde_buf_t *b)
{
    char *hex = malloc(b->len * 2 + 1);
    if (!hex) exit(2);
    for (size_t i = 0; i < b->len; i++)
        sprintf(hex + 2 * i, "%02x", (unsigned char)b->data[i]);
    hex[b->len * 2] = 0;
    return hex;
}

static void expect(sonde_buf_t *b, const char *want, const char *name)
{
    char *hex = pb_hex(b);
    check(strcmp(hex, want) == 0, name, "got %s, want %s", hex, want);
    free(hex);
    sonde_buf_free(b);
}

/* ---- a reader for the checks ------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p, *end;
    bool bad;
} reader_t;

static uint64_t rd_varint(reader_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return v;
    }
    r->bad = true;
    return 0;
}

/* Next field: its number, and for length-delimited ones the bytes. */
static bool rd_field(reader_t *r, uint32_t *field, uint64_t *value, reader_t *sub)
{
    if (r->p >= r->end || r->bad) return false;
    uint64_t key = rd_varint(r);
    *field = (uint32_t)(key >> 3);
    if ((key & 7) == SONDE_PB_VARINT) {
        *value = rd_varint(r);
    } else if ((key & 7) == SONDE_PB_LEN) {
        uint64_t len = rd_varint(r);
        if (len > (uint64_t)(r->end - r->p)) return !(r->bad = true);
        sub->p = r->p;
        sub->end = r->p + len;
        sub->bad = false;
        r->p += len;
    } else {
        return !(r->bad = true);
    }
    return !r->bad;
}

static void test_encoder(void)
{
    sonde_buf_t b = SONDE_BUF_INIT;
    sonde_pb_varint(&b, 150);
    expect(&b, "9601", "varint_150");
    sonde_pb_varint(&b, 0);
    sonde_pb_varint(&b, 127);
    sonde_pb_varint(&b, 128);
    expect(&b, "007f8001", "varint_edges");
    sonde_pb_varint(&b, UINT64_MAX);
    expect(&b, "ffffffffffffffffff01", "varint_max");
    sonde_pb_uint(&b, 1, 150);
    expect(&b, "089601", "field_1_150");
    sonde_pb_int(&b, 2, -1);
    expect(&b, "10ffffffffffffffffff01", "int64_minus_one");
    sonde_pb_bytes(&b, 2, "testing", 7);
    expect(&b, "120774657374696e67", "string_testing");
    sonde_pb_bytes(&b, 6, "", 0);
    expect(&b, "3200", "empty_string");
    uint64_t values[] = {3, 270, 86942};
    sonde_pb_packed(&b, 4, values, 3);
    expect(&b, "2206038e029ea705", "packed");
    sonde_pb_packed(&b, 4, values, 0);
    expect(&b, "", "packed_empty_is_nothing");
    sonde_buf_t msg = SONDE_BUF_INIT;
    sonde_pb_uint(&msg, 1, 150);
    sonde_pb_message(&b, 3, &msg);
    expect(&b, "1a03089601", "nested_message");
    sonde_buf_free(&msg);
}

/* ---- the pprof document ------------------------------------------------------------- */

static int compress_absent(const void *data, size_t len, sonde_buf_t *out, void *arg)
{
    return -ENOSYS;
}

static int compress_fails(const void *data, size_t len, sonde_buf_t *out, void *arg)
{
    sonde_buf_puts(out, "partial");
    return -EIO;
}

static void test_pprof_document(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_profile_add(&prof, "/app.py", "work", 3, 5, 700, 200, 0, 9);
    sonde_profile_add(&prof, "/app.py", "<module>", 1, 9, 0, 0, 100, 1);
    prof.elapsed_sec = 1.5;
    prof.interval_sec = 0.01;
    sonde_profile_finish(&prof);

    sonde_pprof_opts_t opts = {compress_absent, NULL, NULL, 1000};
    sonde_buf_t out = SONDE_BUF_INIT;
    check(sonde_report_pprof(&prof, &opts, &out) == 0, "pprof_plain_without_compressor", "rc");
    reader_t r = {(const uint8_t *)out.data, (const uint8_t *)out.data + out.len, false}, sub;
    uint32_t field;
    uint64_t value;
    int n_types = 0, n_samples = 0, n_locations = 0, n_functions = 0, n_strings = 0;
    bool first_empty = false;
    int64_t time_nanos = 0, duration = 0, period = 0;
    char strings[16][32];
    uint64_t type_names[8];
    while (rd_field(&r, &field, &value, &sub)) {
        if (field == 1 && n_types < 8) {
            uint32_t f;
            uint64_t v;
            reader_t s;
            while (rd_field(&sub, &f, &v, &s))
                if (f == 1) type_names[n_types] = v;
            n_types++;
        }
        n_samples += field == 2;
        n_locations += field == 4;
        n_functions += field == 5;
        if (field == 6) {
            size_t len = (size_t)(sub.end - sub.p);
            if (n_strings == 0) first_empty = len == 0;
            if (n_strings < 16)
                snprintf(strings[n_strings], sizeof strings[0], "%.*s", (int)len,
                         (const char *)sub.p);
            n_strings++;
        }
        if (field == 9) time_nanos = (int64_t)value;
        if (field == 10) duration = (int64_t)value;
        if (field == 12) period = (int64_t)value;
    }
    check(!r.bad && r.p == r.end, "pprof_reads_back", "stopped at %zd of %zu",
          (ssize_t)(r.p - (const uint8_t *)out.data), out.len);
    check(first_empty, "pprof_string_table_starts_empty", "%d strings", n_strings);
    check(n_types == 2 && n_strings > 2 && type_names[0] < 16 && type_names[1] < 16 &&
              strcmp(strings[type_names[0]], "samples") == 0 &&
              strcmp(strings[type_names[1]], "wall") == 0,
          "pprof_sample_types", "%d types", n_types);
    /* line 5: python and native (2 samples); line 9: system (1) */
    check(n_samples == 3 && n_locations == 2 && n_functions == 2, "pprof_one_frame_per_line",
          "%d samples, %d locations, %d functions", n_samples, n_locations, n_functions);
    check(time_nanos == 1000 && duration == 1500000000 && period == 10000000, "pprof_times",
          "time %lld, duration %lld, period %lld", (long long)time_nanos, (long long)duration,
          (long long)period);

    /* a stack split by kind: one sample per kind, each with a kind label */
    sonde_stack_frame_t frames[] = {{"<module>", "/app.py", 9}, {"work", "/app.py", 5}};
    sonde_ns_t kinds[SONDE_N_KINDS] = {600, 0, 300};
    int rc = sonde_profile_add_stack_kinds(&prof, frames, 2, -1, 3, kinds);
    check(rc == 0 && prof.n_stacks == 1 && prof.stacks[0].ns == 900, "stack_kinds_add_up",
          "rc %d, %zu stacks", rc, prof.n_stacks);
    sonde_buf_reset(&out);
    check(sonde_report_pprof(&prof, &opts, &out) == 0, "pprof_stacks", "rc");
    r = (reader_t){(const uint8_t *)out.data, (const uint8_t *)out.data + out.len, false};
    n_samples = 0;
    int n_kind_labels = 0;
    while (rd_field(&r, &field, &value, &sub)) {
        if (field != 2) continue;
        n_samples++;
        uint32_t f;
        uint64_t v;
        reader_t s;
        while (rd_field(&sub, &f, &v, &s))
            n_kind_labels += f == 3;
    }
    check(n_samples == 2 && n_kind_labels == 2, "pprof_stack_sample_per_kind",
          "%d samples, %d labels", n_samples, n_kind_labels);

    sonde_buf_reset(&out);
    sonde_buf_puts(&out, "before");
    opts.compress = compress_fails;
    check(sonde_report_pprof(&prof, &opts, &out) == -EIO && out.len == 6,
          "pprof_compress_error_leaves_out", "len %zu", out.len);
    sonde_buf_free(&out);
    sonde_profile_free(&prof);
}

int main(void)
{
    test_encoder();
    test_pprof_document();
    return check_exit_code();
}
