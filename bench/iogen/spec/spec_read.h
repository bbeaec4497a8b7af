/* spec_read.h - what the two file formats share (inside the generator,
 * not for probes): a line reader that names the file and line of every
 * error, number and name parsing, and the model's checks they apply. */
#ifndef IOGEN_SPEC_READ_H
#define IOGEN_SPEC_READ_H

#include "spec.h"

#include <stddef.h>
#include <stdio.h>

struct rd {
    FILE *f;
    const char *path;
    int lineno;
    bool pushed; /* give the current line again */
    char buf[4096];
    char *text; /* the line without surrounding blanks */
    char *err;
    size_t errlen;
};

/* An error at `line` of the file being read ("path:line: ..."); returns -1. */
int rd_fail_at(struct rd *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define rd_fail(r, ...) rd_fail_at((r), (r)->lineno, __VA_ARGS__)
int rd_open(struct rd *r, const char *path, char *err, size_t errlen);
/* 1: a line is in r->text; 0: end of file; -1: error (in r->err). */
int rd_next(struct rd *r);
void rd_back(struct rd *r); /* the next rd_next gives the same line again */
char *rd_trim(char *s);
/* Splits s in place at sep: ',' at every comma (fields trimmed, empty ones
 * kept); ' ' at runs of blanks. The number of fields, or max + 1. */
int rd_split(char *s, char sep, char **field, int max);
int rd_num(struct rd *r, const char *text, const char *what, bool size_suffix, uint64_t max, uint64_t *out);
int rd_num_u(struct rd *r, const char *text, const char *what, unsigned max, unsigned *out);
int rd_copy_name(struct rd *r, char *dst, size_t dstlen, const char *src, const char *what);
/* The model's checks of a spec just read, its errors placed at file lines. */
int rd_finish_spec(struct rd *r, const struct spec *s, int header_line, const int *line_at);

/* from spec.c */
int spec_find(const struct job *job, const char *name);
int spec_check_lines(const struct spec *s, int *bad, char *err, size_t errlen);

#endif
