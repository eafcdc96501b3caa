/* upload.c — one profile POSTed to a Pyroscope-compatible /ingest.
 *
 * Owns: struct sonde_upload (one libcurl easy handle reused, so that its
 * connection is kept between periods), the request: POST
 * URL/ingest?name=APP{k=v}&from=S&until=S&format=pprof&spyName=sonde
 * &sampleRate=HZ with a multipart/form-data body whose `profile` part is
 * the profile, the user's headers (from a file or SONDE_UPLOAD_HEADERS,
 * never the command line), and the limits every request has (connect and
 * total timeout, CURLOPT_NOSIGNAL since it runs on a thread). Also the
 * checks of the application name, tags and header lines. Part of the
 * `sonde` command only (libcurl never enters the profiled process), which
 * calls libcurl through the table curl_load.c fills. Called
 * on the upload thread (fleet.c); nothing here runs in a signal handler.
 */
#include "fleet.h"
#include "fleet_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define UPLOAD_SPY_NAME "sonde"
#define UPLOAD_MIN_TIMEOUT_MS 100

struct sonde_upload {
    CURL *curl;                 /* owned */
    struct curl_slist *headers; /* owned; NULL: none */
    char *url_base;             /* owned; ".../ingest" */
    char *name_escaped;         /* owned; the name, URL-encoded */
    char format[16];
    unsigned sample_rate;
    long timeout_ms;
    sonde_buf_t url;             /* scratch for each request's URL */
    char error[CURL_ERROR_SIZE]; /* libcurl's last message */
};

/* ---- checks ------------------------------------------------------------------------ */

/* Characters Pyroscope's name and label syntax reads as its own. */
static bool upload_plain(const char *s, bool label_key)
{
    if (!s[0]) return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (label_key && !(isalnum(*p) || *p == '_' || *p == '.')) return false;
        if (*p < 0x20 || *p == 0x7f || strchr("{},=\"", *p)) return false;
    }
    return true;
}

int sonde_upload_app_name(const char *app, const char *const *tags, int n_tags, sonde_buf_t *out,
                          char *err, size_t err_len)
{
    if (!upload_plain(app, false))
        return sonde_errf(err, err_len,
                          "--app-name '%s' must be non-empty, without { } , = \" or control "
                          "characters",
                          app);
    sonde_buf_puts(out, app);
    for (int i = 0; i < n_tags; i++) {
        const char *eq = strchr(tags[i], '=');
        char key[128];
        size_t key_len = eq ? (size_t)(eq - tags[i]) : 0;
        if (!eq || key_len == 0 || key_len >= sizeof key)
            return sonde_errf(err, err_len, "--tag needs KEY=VALUE, not '%s'", tags[i]);
        memcpy(key, tags[i], key_len);
        key[key_len] = 0;
        if (!upload_plain(key, true) || !upload_plain(eq + 1, false))
            return sonde_errf(err, err_len,
                              "--tag '%s': the key takes letters, digits, '_' and '.', the value "
                              "anything but { } , = \" and control characters",
                              tags[i]);
        sonde_buf_printf(out, "%c%s", i ? ',' : '{', tags[i]);
    }
    if (n_tags) sonde_buf_putc(out, '}');
    return sonde_buf_error(out);
}

/* Calls line(start, len) for each header line that is not blank or a
 * comment, up to a return value other than 0. */
static int upload_each_header(const char *headers, int (*line)(const char *s, size_t n, void *arg),
                              void *arg)
{
    for (const char *s = headers; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        const char *next = nl ? nl + 1 : s + n;
        while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        while (n && (*s == ' ' || *s == '\t'))
            s++, n--;
        if (n && *s != '#') {
            int rc = line(s, n, arg);
            if (rc) return rc;
        }
        s = next;
    }
    return 0;
}

typedef struct upload_check {
    int count;
    char *err;
    size_t err_len;
} upload_check_t;

static int upload_check_line(const char *s, size_t n, void *arg)
{
    upload_check_t *c = arg;
    const char *colon = memchr(s, ':', n);
    if (!colon || colon == s)
        return sonde_errf(c->err, c->err_len, "header line %d is not 'Name: value'", c->count + 1);
    for (const char *p = s; p < colon; p++)
        if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_'))
            return sonde_errf(c->err, c->err_len, "header %d has a name with '%c'", c->count + 1,
                              *p);
    for (const char *p = colon; p < s + n; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return sonde_errf(c->err, c->err_len, "header %d has a control character",
                              c->count + 1);
    if (++c->count > SONDE_FLEET_MAX_HEADERS)
        return sonde_errf(c->err, c->err_len, "more than %d headers", SONDE_FLEET_MAX_HEADERS);
    return 0;
}

int sonde_upload_check_headers(const char *headers, char *err, size_t err_len)
{
    upload_check_t c = {0, err, err_len};
    int rc = upload_each_header(headers, upload_check_line, &c);
    return rc < 0 ? rc : c.count;
}

static int upload_add_header(const char *s, size_t n, void *arg)
{
    struct curl_slist **list = arg;
    char line[SONDE_FLEET_MAX_HEADER_BYTES + 1];
    if (n >= sizeof line) return -EINVAL;
    memcpy(line, s, n);
    line[n] = 0;
    struct curl_slist *grown = sonde__curl.slist_append(*list, line);
    if (!grown) return -ENOMEM;
    *list = grown;
    return 0;
}

/* ---- the handle -------------------------------------------------------------------- */

void sonde_upload_free(struct sonde_upload *u)
{
    if (!u) return;
    if (u->curl) sonde__curl.easy_cleanup(u->curl);
    sonde__curl.slist_free_all(u->headers);
    free(u->url_base);
    if (u->name_escaped) sonde__curl.free(u->name_escaped);
    sonde_buf_free(&u->url);
    free(u);
}

/* libcurl's socket, made close-on-exec at once: `sonde run --period`
 * forks and execs the program (and it its children) while this thread may
 * be connecting, and a connection to the backend must not be inherited. */
static curl_socket_t upload_open_socket(void *unused, curlsocktype purpose,
                                        struct curl_sockaddr *addr)
{
    (void)unused;
    (void)purpose;
    return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

int sonde_upload_new(const sonde_upload_opts_t *opts, struct sonde_upload **out)
{
    char err[160];
    int rc = -ENOMEM;
    *out = NULL;
    if (strncmp(opts->url, "http://", 7) != 0 && strncmp(opts->url, "https://", 8) != 0)
        return -EINVAL;
    if (sonde_upload_check_headers(opts->headers, err, sizeof err) < 0) return -EINVAL;
    struct sonde_upload *u = calloc(1, sizeof *u);
    if (!u) return -ENOMEM;
    /* "http://host:4040" and "http://host:4040/" mean the server: its
     * /ingest; a URL with a path is taken as the endpoint itself. */
    const char *after_scheme = strstr(opts->url, "://") + 3;
    const char *path = strchr(after_scheme, '/');
    size_t len = strlen(opts->url);
    bool bare = !path || strcmp(path, "/") == 0;
    u->url_base = malloc(len + sizeof "/ingest");
    if (!u->url_base) goto error;
    snprintf(u->url_base, len + sizeof "/ingest", "%.*s%s",
             (int)(path ? (size_t)(path - opts->url) : len), opts->url, bare ? "/ingest" : path);
    u->name_escaped = sonde__curl.easy_escape(NULL, opts->name, 0);
    u->curl = sonde__curl.easy_init();
    if (!u->name_escaped || !u->curl) goto error;
    rc = upload_each_header(opts->headers, upload_add_header, &u->headers);
    if (rc < 0) goto error;
    snprintf(u->format, sizeof u->format, "%s", opts->format);
    u->sample_rate = opts->sample_rate;
    u->timeout_ms = (long)(opts->timeout_sec * 1000);
    if (u->timeout_ms < UPLOAD_MIN_TIMEOUT_MS) u->timeout_ms = UPLOAD_MIN_TIMEOUT_MS;
    *out = u;
    return 0;
error:
    sonde_upload_free(u);
    return rc;
}

/* The answer's body is not kept. */
static size_t upload_discard(char *data, size_t size, size_t n, void *arg)
{
    (void)data, (void)arg;
    return size * n;
}

int sonde_upload_post(struct sonde_upload *u, const void *data, size_t len, uint64_t from_sec,
                      uint64_t until_sec, long *status, char *why, size_t why_len)
{
    CURL *c = u->curl;
    curl_mime *mime = NULL;
    int rc = -ENOMEM;
    *status = 0;
    if (why && why_len) why[0] = 0;
    sonde_buf_reset(&u->url);
    sonde_buf_printf(
        &u->url,
        "%s%sname=%s&from=%llu&until=%llu&format=%s&spyName=" UPLOAD_SPY_NAME "&sampleRate=%u",
        u->url_base, strchr(u->url_base, '?') ? "&" : "?", u->name_escaped,
        (unsigned long long)from_sec, (unsigned long long)until_sec, u->format, u->sample_rate);
    if (sonde_buf_error(&u->url)) return -ENOMEM;
    sonde__curl.easy_reset(c); /* keeps the connection and caches */
    mime = sonde__curl.mime_init(c);
    curl_mimepart *part = mime ? sonde__curl.mime_addpart(mime) : NULL;
    if (!part || sonde__curl.mime_name(part, "profile") != CURLE_OK ||
        sonde__curl.mime_filename(part, "profile.pprof") != CURLE_OK ||
        sonde__curl.mime_type(part, "application/octet-stream") != CURLE_OK ||
        sonde__curl.mime_data(part, data, len) != CURLE_OK)
        goto done;
    u->error[0] = 0;
    sonde__curl.easy_setopt(c, CURLOPT_URL, u->url.data);
    sonde__curl.easy_setopt(c, CURLOPT_MIMEPOST, mime);
    sonde__curl.easy_setopt(c, CURLOPT_HTTPHEADER, u->headers);
    sonde__curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    sonde__curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, u->timeout_ms);
    sonde__curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, u->timeout_ms);
    sonde__curl.easy_setopt(c, CURLOPT_USERAGENT, "sonde/" SONDE_VERSION);
    sonde__curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, upload_discard);
    sonde__curl.easy_setopt(c, CURLOPT_ERRORBUFFER, u->error);
    sonde__curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    sonde__curl.easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, upload_open_socket);
    CURLcode cc = sonde__curl.easy_perform(c);
    if (cc != CURLE_OK) {
        if (why)
            snprintf(why, why_len, "%s", u->error[0] ? u->error : sonde__curl.easy_strerror(cc));
        rc = cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EAGAIN;
        goto done;
    }
    sonde__curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (*status >= 200 && *status < 300) {
        rc = 0;
    } else {
        if (why) snprintf(why, why_len, "HTTP status %ld", *status);
        bool later = *status == 408 || *status == 429 || *status >= 500 || *status < 200;
        rc = later ? -EAGAIN : -EBADMSG;
    }
done:
    sonde__curl.easy_setopt(c, CURLOPT_MIMEPOST, NULL);
    sonde__curl.mime_free(mime);
    return rc;
}
