/* opts.h - what osm_init (args.c) shares of opts.c's parser: not for probes, which declare rows and
 * call osm_init, nor for other programs, which call osm_parse_command (both in osm.h). */
#ifndef OSM_OPTS_H
#define OSM_OPTS_H

#include "osm.h"

enum { OSM_DEF_LEN = 256, OSM_NAME_LEN = 64 };

/* Each row's default as --help says it (the variable's value now, or the row's words), one per row:
 * taken before any option is parsed; free() it. */
char (*osm_opt_defaults(const struct osm_opt *rows))[OSM_DEF_LEN];
/* The rows' lines of --help, with those defaults. */
void osm_opt_help(const struct osm_opt *rows, char (*defs)[OSM_DEF_LEN]);
/* The row named name (without --), or NULL. */
const struct osm_opt *osm_opt_find(const struct osm_opt *rows, const char *name);
/* One option's value into its row's variable, within the row's limits (*seen set where the row has it). */
void osm_opt_set(const struct osm_opt *r, const char *val);
/* arg, which must be "--NAME" or "--NAME=VALUE": NAME into name; the '=' or NULL. */
const char *osm_opt_name(const char *arg, char name[OSM_NAME_LEN]);
/* The value of the option at argv[*i]: after its '=' (eq), or the next word (*i moves past it), where it
 * takes one; NULL where it takes none. A missing or unwanted value is a usage error. */
const char *osm_opt_value(int argc, char **argv, int *i, const char *name, const char *eq, bool takes);

#endif
