/* top_view.c: the screen of `dnprof top` (top.h), with ncurses: the header,
 * one table at a time (methods by CPU, allocations, exceptions by type, throw
 * sites, lock waits), the keys that switch, sort and freeze it, and a line of
 * keys at the bottom. It needs 80x24; it redraws for the size it has when the
 * terminal is resized (KEY_RESIZE), and says so in place of the tables while
 * it is smaller. NO_COLOR (or a terminal without colours): attributes only. */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"

#define MIN_COLS 80
#define MIN_LINES 24

struct top_view {
    SCREEN *scr;
    int color;
    int frozen, help;
    top_show show;
    const top_model *last;
    char status[128];
};

static const char *const TITLE[TOP_NTABLES] = {"methods by CPU (samples)", "allocations by type",
                                               "exceptions by type", "exceptions by throw site",
                                               "lock waits by site"};

top_view *top_view_open(FILE *tty_in, FILE *tty_out, int no_color) {
    top_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->scr = newterm(NULL, tty_out ? tty_out : stdout, tty_in ? tty_in : stdin);
    if (!v->scr) {
        free(v);
        fprintf(stderr, "dnprof: cannot drive this terminal (TERM=%s): set TERM to one terminfo knows, or use -b\n",
                getenv("TERM") ? getenv("TERM") : "");
        return NULL;
    }
    set_term(v->scr);
    raw(); /* Ctrl-C is a key: q's twin, and no signal reaches a program started by top */
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    if (!no_color && has_colors()) {
        start_color();
        use_default_colors();
        init_pair(1, COLOR_CYAN, -1);
        init_pair(2, COLOR_YELLOW, -1);
        init_pair(3, COLOR_RED, -1);
        v->color = 1;
    }
    v->show.rows = 0;
    return v;
}

int top_view_frozen(const top_view *v) {
    return v->frozen;
}

static void put_line(int y, const char *text, attr_t a) {
    attron(a);
    mvaddnstr(y, 0, text, COLS);
    attroff(a);
}

static attr_t pair(const top_view *v, int p) {
    return v->color ? COLOR_PAIR(p) : A_NORMAL;
}

static void draw_help(void) {
    static const char *const lines[] = {
        "dnprof top: keys",
        "",
        "  c   methods by CPU: self and total samples, last interval and since start",
        "  a   allocations by type (sampled by the runtime: estimated bytes, objects)",
        "  e   exceptions by type, per second",
        "  t   exceptions by throw site",
        "  l   lock waits by site (dnprof top --locks)",
        "  s   sort by the other column (self/total, bytes/objects, count/wait)",
        "  i   the last interval, or everything since the start",
        "  f   freeze the screen (the data goes on being read)",
        "  ?   this help; any key closes it",
        "  q   quit (Ctrl-C too): by attach, detach and leave the program running",
    };
    erase();
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        mvaddnstr(2 + (int)i, 2, lines[i], COLS - 4);
}

/* The since-start self samples of name (CPU table). */
static uint64_t since_self(const top_model *m, const char *name) {
    const top_table *t = &m->all.t[TOP_CPU];
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name))
            return t->rows[i].a;
    return 0;
}

static void draw_rows(top_view *v, const top_model *m, int y0) {
    const top_interval *iv = v->show.since_start ? &m->all : &m->cur;
    int table = v->show.table, room = LINES - 1 - (y0 + 1);
    const top_row *rows[256];
    size_t n = top_table_sorted(&iv->t[table], v->show.col, rows, room > 0 ? (size_t)(room < 256 ? room : 256) : 0);
    char head[256], line[1024];
    int namew = COLS - 30 > 10 ? COLS - 30 : 10;
    uint64_t whole = table == TOP_CPU ? iv->samples : table == TOP_ALLOC ? iv->alloc_bytes
                                    : table == TOP_LOCKS ? iv->lock_count : iv->exceptions;
    double secs = iv->duration_ns ? (double)iv->duration_ns / 1e9 : 1;
    const char *sorted = v->show.col ? "v" : "^";
    switch (table) {
    case TOP_CPU:
        snprintf(head, sizeof head, "%6s%s %6s%s %7s %7s  %s", "self%", v->show.col ? " " : sorted, "total%",
                 v->show.col ? sorted : " ", "all%", "samples", "method");
        break;
    case TOP_ALLOC: snprintf(head, sizeof head, "%7s %11s %9s  %s", "bytes%", "bytes/s", "objects", "type"); break;
    case TOP_LOCKS: snprintf(head, sizeof head, "%7s %11s %9s  %s", "count%", "per s", "wait ms", "site"); break;
    default:
        snprintf(head, sizeof head, "%7s %11s %9s  %s", "count%", "per s", "count", table == TOP_EXC ? "type" : "site");
    }
    attron(A_REVERSE);
    mvhline(y0, 0, ' ', COLS);
    mvaddnstr(y0, 0, head, COLS);
    attroff(A_REVERSE);
    for (size_t i = 0; i < n; i++) {
        const top_row *r = rows[i];
        char b[32];
        switch (table) {
        case TOP_CPU:
            snprintf(line, sizeof line, "%6.1f%% %6.1f%% %6.1f%% %7llu  %.*s", top_pct(r->a, whole),
                     top_pct(r->b < whole ? r->b : whole, whole), top_pct(since_self(m, r->name), m->all.samples), (unsigned long long)r->a,
                     namew, r->name);
            break;
        case TOP_ALLOC:
            top_fmt_bytes((uint64_t)((double)r->a / secs), b, sizeof b);
            snprintf(line, sizeof line, "%6.1f%% %11s %9llu  %.*s", top_pct(r->a, whole), b,
                     (unsigned long long)r->b, namew, r->name);
            break;
        case TOP_LOCKS:
            snprintf(line, sizeof line, "%6.1f%% %11.1f %9.1f  %.*s", top_pct(r->a, whole), (double)r->a / secs,
                     (double)r->b / 1e6, namew, r->name);
            break;
        default:
            snprintf(line, sizeof line, "%6.1f%% %11.1f %9llu  %.*s", top_pct(r->a, whole), (double)r->a / secs,
                     (unsigned long long)r->a, namew, r->name);
        }
        mvaddnstr(y0 + 1 + (int)i, 0, line, COLS);
    }
    if (!n)
        mvaddnstr(y0 + 1, 2, table == TOP_LOCKS && !m->locks_on ? "lock contention is not recorded: dnprof top --locks"
                                                                : "(nothing in this interval)", COLS - 2);
}

void top_view_draw(top_view *v, const top_model *m, const char *status) {
    if (m)
        v->last = m;
    if (status)
        snprintf(v->status, sizeof v->status, "%s", status);
    m = v->last;
    erase();
    if (COLS < MIN_COLS || LINES < MIN_LINES) {
        mvprintw(0, 0, "dnprof top needs %dx%d; this terminal is %dx%d", MIN_COLS, MIN_LINES, COLS, LINES);
        refresh();
        return;
    }
    if (v->help) {
        draw_help();
        refresh();
        return;
    }
    char h[TOP_HEADER_LINES][512], title[256];
    if (m && m->intervals) {
        top_header(m, h);
        put_line(0, h[0], A_BOLD | pair(v, 1));
        put_line(1, h[1], A_NORMAL);
        put_line(2, h[2], m->gc_on || m->all.gc_seen ? A_NORMAL : A_DIM);
        put_line(3, h[3], m->gc_on || m->all.gc_seen ? A_NORMAL : A_DIM);
        put_line(4, h[4], m->locks_on || m->tp_threads >= 0 ? A_NORMAL : A_DIM);
        snprintf(title, sizeof title, "%s - %s%s  (interval %llu, %.2f s, %llu samples)%s", TITLE[v->show.table],
                 v->show.since_start ? "since start" : "last interval", v->frozen ? " [frozen]" : "",
                 (unsigned long long)m->intervals, (double)m->cur.duration_ns / 1e9,
                 (unsigned long long)m->cur.samples, m->cur.dropped ? " [windows dropped]" : "");
        put_line(TOP_HEADER_LINES + 1, title, A_BOLD | pair(v, 2));
        draw_rows(v, m, TOP_HEADER_LINES + 2);
    } else {
        put_line(0, "dnprof top: waiting for the first interval...", A_BOLD);
    }
    const char *keys = "c:cpu a:alloc e:exceptions t:sites l:locks s:sort i:since f:freeze ?:help q:quit";
    attron(A_REVERSE);
    mvhline(LINES - 1, 0, ' ', COLS);
    mvaddnstr(LINES - 1, 0, v->status[0] ? v->status : keys, COLS);
    attroff(A_REVERSE);
    refresh();
}

int top_view_key(top_view *v, int ms) {
    timeout(ms);
    int c = getch();
    if (c == ERR)
        return 0;
    if (v->help) { /* any key closes the help */
        v->help = 0;
        top_view_draw(v, NULL, NULL);
        return 0;
    }
    switch (c) {
    case 'q':
    case 'Q':
    case 3: return 1; /* Ctrl-C, raw */
    case 'c': v->show.table = TOP_CPU; v->show.col = 0; break;
    case 'a': v->show.table = TOP_ALLOC; v->show.col = 0; break;
    case 'e': v->show.table = TOP_EXC; v->show.col = 0; break;
    case 't': v->show.table = TOP_SITE; v->show.col = 0; break;
    case 'l': v->show.table = TOP_LOCKS; v->show.col = 0; break;
    case 's': v->show.col = !v->show.col; break;
    case 'i': v->show.since_start = !v->show.since_start; break;
    case 'f': v->frozen = !v->frozen; break;
    case '?':
    case 'h': v->help = 1; break;
    case KEY_RESIZE: break;
    default: return 0;
    }
    top_view_draw(v, NULL, NULL);
    return 0;
}

void top_view_close(top_view *v, const char *last_line) {
    if (last_line && v->last) {
        top_view_draw(v, NULL, last_line);
        napms(1500); /* the view says it before it goes */
    }
    endwin();
    delscreen(v->scr);
    free(v);
}
