/* screen.c — the live view's full screen (ncurses), on its own thread.
 *
 * Owns: the terminal while the view runs: drawing the tables (table.c)
 * from the view's profiles (view.c, read under its lock), the keys, the
 * help, pausing, resizes and colours. Started and stopped by view.c from
 * the command's main thread; everything else runs on the screen's thread,
 * the only one that calls ncurses. A resize is seen by polling the
 * terminal's size each wake-up (and by ncurses' own KEY_RESIZE): no signal
 * handler of sonde's. A terminal that hung up (reads fail at once) ends
 * the view as q does, silently. Colours only when the terminal has them and
 * NO_COLOR is unset or empty.
 */
#include "live_internal.h"

#include "../prim/prim.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define SCREEN_WAKE_MS 100   /* a key or a resize is seen within this */
#define SCREEN_HEAD 3        /* lines above the table: title, state, header */
#define SCREEN_DEAD_AFTER 20 /* reads failing at once in a row: the terminal hung up */

enum { PAIR_HEAD = 1, PAIR_PYTHON, PAIR_NATIVE, PAIR_SYSTEM, PAIR_MEMORY, PAIR_STATUS };

struct sonde_live_screen {
    SCREEN *term;
    FILE *in, *out; /* owned: the terminal, for ncurses */
    pthread_t thread;
    bool started;
    atomic_bool stop;
    bool colour;
    /* the screen's thread's own from here */
    sonde_live_query_t q; /* q.thread: resolved from sel_* at each draw */
    /* the thread shown (sel_on), by its ids and name: its index changes
     * from one interval to the next */
    bool sel_on;
    int sel_pid, sel_tid;
    char sel_name[128];
    bool paused, help;
    size_t scroll;
    uint64_t shown;                         /* the view's generation drawn */
    sonde_profile_t frozen_now, frozen_all; /* copies while paused */
    sonde_live_rows_t rows;
    int lines, cols;
    sonde_buf_t text;
};

/* ---- drawing ------------------------------------------------------------------------ */

/* The thread filter as the state line says it. */
static void screen_thread_name(const struct sonde_live_screen *s, const sonde_profile_t *now,
                               char *buf, size_t len)
{
    size_t n = now ? now->n_threads : 0;
    if (!s->sel_on) {
        snprintf(buf, len, "all (%zu)", n);
    } else if (s->q.thread < 0) {
        snprintf(buf, len, "%.40s (tid %d): not in the last interval", s->sel_name, s->sel_tid);
    } else if (s->sel_tid) {
        snprintf(buf, len, "%d/%zu %.40s (tid %d)", s->q.thread + 1, n, s->sel_name, s->sel_tid);
    } else {
        snprintf(buf, len, "%d/%zu %.40s", s->q.thread + 1, n, s->sel_name);
    }
}

/* Selects thread index t of now (-1: all threads). */
static void screen_select(struct sonde_live_screen *s, const sonde_profile_t *now, int t)
{
    s->sel_on = now && t >= 0 && (size_t)t < now->n_threads;
    if (!s->sel_on) return;
    s->sel_pid = now->thread_ids ? now->thread_ids[t].pid : 0;
    s->sel_tid = now->thread_ids ? now->thread_ids[t].tid : 0;
    snprintf(s->sel_name, sizeof s->sel_name, "%s", now->thread_names[t]);
}

static void screen_line(int y, const char *text, size_t len, int cols)
{
    move(y, 0);
    clrtoeol();
    addnstr(text, (int)(len < (size_t)cols ? len : (size_t)cols));
}

static const char *const screen_help[] = {
    "keys",
    "  1-7        sort by NOW%, ALL%, PY%, NAT%, SYS% (6, 7: ALLOC MB, PEAK MB, with memory)",
    "  < >        sort by the column on the left, on the right",
    "  l f TAB    the line table, the function table, the other one",
    "  c          PY% NAT% SYS% and ALLOC MB over the last interval / since the start",
    "  t T a      the next thread, the previous one, all threads",
    "  space p    pause the screen (sampling goes on)",
    "  up down    PgUp PgDn Home: scroll",
    "  h ?        this help (any key closes it)",
    "  q          ",
    "",
    "NOW%: share of the last interval's time; ALL%: share of the time since",
    "the start. PY% NAT% SYS%: the line's Python, native and system time,",
    "shares of the whole window's time. Memory columns when memory is profiled.",
};

static void screen_draw_help(struct sonde_live_screen *s, const sonde_live_t *v, int y)
{
    for (size_t i = 0; i < SONDE_ARRAY_LEN(screen_help) && y < s->lines - 1; i++, y++) {
        sonde_buf_reset(&s->text);
        sonde_buf_puts(&s->text, screen_help[i]);
        if (i == 9) sonde_buf_puts(&s->text, v->quit_say);
        screen_line(y, s->text.data ? s->text.data : "", s->text.len, s->cols);
    }
    for (; y < s->lines - 1; y++) {
        move(y, 0);
        clrtoeol();
    }
}

/* Colours the figures of a drawn row. */
static void screen_colour_row(struct sonde_live_screen *s, int y, bool memory)
{
    static const struct {
        sonde_live_col_t col;
        short pair;
    } cols[] = {{SONDE_LIVE_COL_PYTHON, PAIR_PYTHON},
                {SONDE_LIVE_COL_NATIVE, PAIR_NATIVE},
                {SONDE_LIVE_COL_SYSTEM, PAIR_SYSTEM},
                {SONDE_LIVE_COL_ALLOC, PAIR_MEMORY},
                {SONDE_LIVE_COL_PEAK, PAIR_MEMORY}};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(cols); i++) {
        size_t x, w;
        if (!sonde_live_col_span(cols[i].col, memory, &x, &w) || x + w > (size_t)s->cols) continue;
        mvchgat(y, (int)x, (int)w, A_NORMAL, cols[i].pair, NULL);
    }
}

/* Draws everything from now and all (the view's lock held, or the
 * frozen copies). */
static void screen_draw(struct sonde_live_screen *s, const sonde_live_t *v,
                        const sonde_profile_t *now, const sonde_profile_t *all, double from_sec,
                        double to_sec, const char *ending)
{
    s->q.thread =
        s->sel_on && now ? sonde_live_thread_find(now, s->sel_pid, s->sel_tid, s->sel_name) : -1;
    (void)sonde_live_rows_build(&s->rows, now, all, &s->q);
    if (s->sel_on && s->q.thread < 0) s->rows.n = 0; /* the thread ended: none of its rows */
    if (!s->rows.memory && s->q.sort >= SONDE_LIVE_COL_ALLOC) { /* one thread: no memory */
        s->q.sort = SONDE_LIVE_COL_NOW;
        (void)sonde_live_rows_build(&s->rows, now, all, &s->q);
    }
    char thread[160];
    screen_thread_name(s, now, thread, sizeof thread);

    sonde_buf_reset(&s->text);
    sonde_buf_printf(&s->text, "sonde  %.0f s  last interval %.1f-%.1f s%s  %s", all->elapsed_sec,
                     from_sec, to_sec, s->paused ? "  PAUSED" : "", v->title);
    screen_line(0, s->text.data ? s->text.data : "", s->text.len, s->cols);
    if (s->colour) mvchgat(0, 0, -1, A_BOLD, 0, NULL);

    sonde_buf_reset(&s->text);
    sonde_buf_printf(&s->text, "%s by %s  thread: %s  split over: %s  h: help  q: %s",
                     s->q.table == SONDE_LIVE_LINES ? "lines" : "functions",
                     sonde_live_col_title(s->q.sort), thread,
                     s->q.cumulated ? "all" : "last interval", v->quit_say);
    screen_line(1, s->text.data ? s->text.data : "", s->text.len, s->cols);

    sonde_buf_reset(&s->text);
    sonde_live_format_header(&s->text, &s->q, s->rows.memory, (size_t)s->cols);
    screen_line(2, s->text.data ? s->text.data : "", s->text.len, s->cols);
    mvchgat(2, 0, -1, A_REVERSE, s->colour ? PAIR_HEAD : 0, NULL);

    int body = s->lines - SCREEN_HEAD - 1;
    if (s->help) {
        screen_draw_help(s, v, SCREEN_HEAD);
    } else {
        if (body < 0) body = 0;
        if (s->scroll + (size_t)body > s->rows.n)
            s->scroll = s->rows.n > (size_t)body ? s->rows.n - (size_t)body : 0;
        for (int i = 0; i < body; i++) {
            size_t r = s->scroll + (size_t)i;
            move(SCREEN_HEAD + i, 0);
            clrtoeol();
            if (r >= s->rows.n) {
                if (r == 0) addstr("(no samples on the program's lines yet)");
                continue;
            }
            sonde_buf_reset(&s->text);
            sonde_live_format_row(&s->text, &s->rows, &s->rows.rows[r], &s->q, s->rows.memory,
                                  (size_t)s->cols);
            addnstr(s->text.data ? s->text.data : "", (int)s->text.len);
            if (s->colour) screen_colour_row(s, SCREEN_HEAD + i, s->rows.memory);
        }
    }
    sonde_buf_reset(&s->text);
    if (ending[0])
        sonde_buf_puts(&s->text, ending);
    else
        sonde_buf_printf(
            &s->text, "%zu %s; rows %zu-%zu", s->rows.n,
            s->q.table == SONDE_LIVE_LINES ? "lines" : "functions", s->rows.n ? s->scroll + 1 : 0,
            s->scroll + (size_t)body < s->rows.n ? s->scroll + (size_t)body : s->rows.n);
    screen_line(s->lines - 1, s->text.data ? s->text.data : "", s->text.len, s->cols);
    if (ending[0]) mvchgat(s->lines - 1, 0, -1, A_REVERSE, s->colour ? PAIR_STATUS : 0, NULL);
    refresh();
}

/* Draws the view: the frozen copies while paused, else the latest. */
static void screen_redraw(struct sonde_live_screen *s, sonde_live_t *v)
{
    pthread_mutex_lock(&v->lock);
    s->shown = v->generation;
    char ending[sizeof v->ending];
    memcpy(ending, v->ending, sizeof ending);
    if (s->paused) {
        double from = v->from_sec, to = v->to_sec;
        pthread_mutex_unlock(&v->lock);
        screen_draw(s, v, &s->frozen_now, &s->frozen_all, from, to, ending);
        return;
    }
    screen_draw(s, v, &v->now, &v->all, v->from_sec, v->to_sec, ending);
    pthread_mutex_unlock(&v->lock);
}

/* ---- keys ------------------------------------------------------------------------------ */

static void screen_pause(struct sonde_live_screen *s, sonde_live_t *v)
{
    sonde_profile_free(&s->frozen_now);
    sonde_profile_free(&s->frozen_all);
    s->paused = !s->paused;
    if (!s->paused) return;
    pthread_mutex_lock(&v->lock);
    if (sonde_profile_merge(&s->frozen_now, &v->now) != 0 ||
        sonde_profile_merge(&s->frozen_all, &v->all) != 0)
        s->paused = false; /* out of memory: the screen keeps moving */
    s->frozen_all.elapsed_sec = v->all.elapsed_sec;
    pthread_mutex_unlock(&v->lock);
}

/* Acts on one key. */
static void screen_key(struct sonde_live_screen *s, sonde_live_t *v, int key)
{
    atomic_fetch_add_explicit(&v->keys, 1, memory_order_acq_rel);
    if (s->help && key != KEY_RESIZE) {
        s->help = false;
        return;
    }
    pthread_mutex_lock(&v->lock);
    const sonde_profile_t *now = s->paused ? &s->frozen_now : &v->now;
    int n_threads = (int)now->n_threads;
    int current = s->sel_on ? sonde_live_thread_find(now, s->sel_pid, s->sel_tid, s->sel_name) : -1;
    if (key == 't') screen_select(s, now, current + 1 >= n_threads ? -1 : current + 1);
    if (key == 'T') screen_select(s, now, current < 0 ? n_threads - 1 : current - 1);
    if (key == 'a') s->sel_on = false;
    pthread_mutex_unlock(&v->lock);
    int body = s->lines - SCREEN_HEAD - 1;
    /* the memory columns come last, shown only with memory */
    int n_cols = s->rows.memory ? SONDE_LIVE_N_COLS : SONDE_LIVE_COL_ALLOC;
    switch (key) {
    case 'q':
    case 'Q':
        atomic_store_explicit(&v->quit, true, memory_order_release);
        if (v->opts.stop) *v->opts.stop = 1;
        break;
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
        if (key - '1' < n_cols) s->q.sort = (sonde_live_col_t)(key - '1');
        s->scroll = 0;
        break;
    case '<':
        s->q.sort = (sonde_live_col_t)((s->q.sort + n_cols - 1) % n_cols);
        s->scroll = 0;
        break;
    case '>':
        s->q.sort = (sonde_live_col_t)((s->q.sort + 1) % n_cols);
        s->scroll = 0;
        break;
    case 'l':
        s->q.table = SONDE_LIVE_LINES;
        s->scroll = 0;
        break;
    case 'f':
        s->q.table = SONDE_LIVE_FUNCS;
        s->scroll = 0;
        break;
    case '\t':
        s->q.table = s->q.table == SONDE_LIVE_LINES ? SONDE_LIVE_FUNCS : SONDE_LIVE_LINES;
        s->scroll = 0;
        break;
    case 'c':
        s->q.cumulated = !s->q.cumulated;
        break;
    case 't':
    case 'T':
    case 'a':
        s->scroll = 0; /* selected above, under the view's lock */
        break;
    case ' ':
    case 'p':
        screen_pause(s, v);
        break;
    case 'h':
    case '?':
        s->help = true;
        break;
    case KEY_DOWN:
    case 'j':
        s->scroll++;
        break;
    case KEY_UP:
    case 'k':
        if (s->scroll) s->scroll--;
        break;
    case KEY_NPAGE:
        s->scroll += body > 1 ? (size_t)body - 1 : 1;
        break;
    case KEY_PPAGE:
        s->scroll =
            s->scroll > (size_t)(body > 1 ? body - 1 : 1) ? s->scroll - (size_t)(body - 1) : 0;
        break;
    case KEY_HOME:
        s->scroll = 0;
        break;
    default:
        break;
    }
}

/* Follows the terminal's size (a resize while ncurses' own handler is not
 * the one installed is seen here). Returns whether it changed. */
static bool screen_follow_size(struct sonde_live_screen *s)
{
    struct winsize ws;
    if (ioctl(fileno(s->out), TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col &&
        (ws.ws_row != LINES || ws.ws_col != COLS))
        resizeterm(ws.ws_row, ws.ws_col);
    bool changed = s->lines != LINES || s->cols != COLS;
    s->lines = LINES;
    s->cols = COLS;
    if (changed) clear();
    return changed;
}

static void *screen_main(void *arg)
{
    sonde_live_t *v = arg;
    struct sonde_live_screen *s = v->screen;
    screen_follow_size(s);
    screen_redraw(s, v);
    int instant_errors = 0; /* getch failing at once: the terminal is gone */
    while (!atomic_load_explicit(&s->stop, memory_order_acquire) &&
           !atomic_load_explicit(&v->quit, memory_order_acquire)) {
        sonde_ns_t asked = sonde_prim_monotonic_ns();
        int key = getch();
        if (key == ERR && sonde_prim_monotonic_ns() - asked < SCREEN_WAKE_MS * 1000000ull / 10) {
            if (++instant_errors >= SCREEN_DEAD_AFTER) { /* hung up: as q, without a word */
                atomic_store_explicit(&v->quit, true, memory_order_release);
                if (v->opts.stop) *v->opts.stop = 1;
                break;
            }
            continue;
        }
        instant_errors = 0;
        bool redraw = screen_follow_size(s);
        if (key != ERR) {
            screen_key(s, v, key);
            redraw = true;
        }
        pthread_mutex_lock(&v->lock);
        if (v->generation != s->shown) redraw = true;
        pthread_mutex_unlock(&v->lock);
        if (redraw && !atomic_load_explicit(&v->quit, memory_order_acquire)) screen_redraw(s, v);
    }
    /* the terminal goes back as it was, from the thread that drew on it */
    curs_set(1);
    endwin();
    if (atomic_load_explicit(&v->quit, memory_order_acquire) && v->quit_line &&
        instant_errors < SCREEN_DEAD_AFTER) {
        fputs(v->quit_line, s->out);
        fflush(s->out);
    }
    atomic_store_explicit(&v->closed, true, memory_order_release);
    return NULL;
}

/* ---- start and stop --------------------------------------------------------------------- */

static void screen_free(struct sonde_live_screen *s)
{
    if (s->in) fclose(s->in);
    if (s->out) fclose(s->out);
    sonde_profile_free(&s->frozen_now);
    sonde_profile_free(&s->frozen_all);
    sonde_live_rows_free(&s->rows);
    sonde_buf_free(&s->text);
    free(s);
}

int sonde__live_screen_start(sonde_live_t *v)
{
    if (!isatty(v->opts.fd)) return -ENOTTY;
    struct sonde_live_screen *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->q = (sonde_live_query_t){SONDE_LIVE_LINES, -1, false, SONDE_LIVE_COL_NOW};
    sonde_profile_init(&s->frozen_now);
    sonde_profile_init(&s->frozen_all);
    /* keys from standard input when it is the terminal, else the
     * controlling terminal */
    int in_fd = isatty(0) ? dup(0) : open("/dev/tty", O_RDONLY | O_CLOEXEC);
    int out_fd = dup(v->opts.fd);
    if (in_fd >= 0) s->in = fdopen(in_fd, "r");
    if (out_fd >= 0) s->out = fdopen(out_fd, "w");
    if (!s->in || !s->out) {
        if (!s->in && in_fd >= 0) close(in_fd);
        if (!s->out && out_fd >= 0) close(out_fd);
        screen_free(s);
        return -ENOTTY;
    }
    /* wide characters in source lines; numbers keep C's format (only the
     * character type follows the user's locale) */
    setlocale(LC_CTYPE, "");
    s->term = newterm(NULL, s->out, s->in);
    if (!s->term) {
        screen_free(s);
        return -ENOTTY;
    }
    set_term(s->term);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    timeout(SCREEN_WAKE_MS);
    curs_set(0);
    const char *no_colour = getenv("NO_COLOR");
    s->colour = has_colors() && !(no_colour && no_colour[0]);
    if (s->colour) {
        start_color();
        use_default_colors();
        init_pair(PAIR_HEAD, COLOR_BLACK, COLOR_CYAN);
        init_pair(PAIR_PYTHON, COLOR_BLUE, -1);
        init_pair(PAIR_NATIVE, COLOR_GREEN, -1);
        init_pair(PAIR_SYSTEM, COLOR_YELLOW, -1);
        init_pair(PAIR_MEMORY, COLOR_MAGENTA, -1);
        init_pair(PAIR_STATUS, COLOR_BLACK, COLOR_YELLOW);
    }
    v->screen = s;
    int rc = pthread_create(&s->thread, NULL, screen_main, v);
    if (rc != 0) {
        endwin();
        delscreen(s->term);
        v->screen = NULL;
        screen_free(s);
        return -rc;
    }
    s->started = true;
    return 0;
}

void sonde__live_screen_stop(sonde_live_t *v)
{
    struct sonde_live_screen *s = v->screen;
    if (!s) return;
    atomic_store_explicit(&s->stop, true, memory_order_release);
    if (s->started) pthread_join(s->thread, NULL); /* it gave the terminal back */
    delscreen(s->term);
    v->screen = NULL;
    screen_free(s);
}
