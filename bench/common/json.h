/*
 * json.h - the one JSON writer of osmeter's C side: every probe's line
 * (emit.c), iogen's result, its --dump-spec, the system prober and iotrace.
 *
 * A writer goes to a FILE or into a growing buffer (a part built first and
 * placed later: a probe's params). Commas are its business: a value written
 * after another in an array or an object gets one. Strings are always
 * escaped: quote, backslash, control characters; bytes that are not valid
 * UTF-8 (paths are bytes) become \udcXX, the lone-surrogate convention that
 * Python's surrogateescape reads back into the same bytes. Numbers: a
 * non-finite double is null, a whole number below 2^53 is written exactly,
 * any other double with 9 significant digits. A write error (a full disk, a
 * closed pipe) ends the program with a message and status 1: output is
 * never silently cut.
 */
#ifndef OSM_JSON_H
#define OSM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
    FILE *f;             /* the destination, or NULL: the buffer */
    char *buf;           /* the buffer's text (NUL-terminated) */
    size_t len, cap;
    int depth;
    bool comma[JSON_MAX_DEPTH]; /* the next value at this depth needs a comma first */
    bool after_key;      /* a key was written: its value follows without a comma */
};

void json_to_file(struct json *j, FILE *f);
void json_to_buf(struct json *j);
void json_free(struct json *j); /* a buffer writer's memory */

void json_obj(struct json *j);
void json_obj_end(struct json *j);
void json_arr(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);

void json_str(struct json *j, const char *s);
void json_strn(struct json *j, const char *s, size_t n);
void json_num(struct json *j, double v);
void json_fixed(struct json *j, double v, int decimals); /* a double with so many decimals */
void json_int(struct json *j, long long v);
void json_uint(struct json *j, unsigned long long v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* Text that is already JSON (a value built by a buffer writer). */
void json_raw(struct json *j, const char *text);

/* key and value in one call */
void json_kstr(struct json *j, const char *key, const char *v);
void json_knum(struct json *j, const char *key, double v);
void json_kfixed(struct json *j, const char *key, double v, int decimals);
void json_kint(struct json *j, const char *key, long long v);
void json_kuint(struct json *j, const char *key, unsigned long long v);
void json_kbool(struct json *j, const char *key, bool v);

/* Ends a JSON line on a file writer: a newline, then the stream flushed;
 * a failed write ends the program (status 1) naming `what`. */
void json_line_end(struct json *j, const char *what);
/* The same check for any stream osmeter writes results to. */
void json_check_stream(FILE *f, const char *what);

#endif
