/* engine.c - the engines iogen knows, by name. A new engine is its
 * engine_<name>.c (with its options' table, if any) and its name in the
 * ENGINES line here. */
#include "engine.h"

#include <string.h>

#define ENGINES(X) X(uring) X(aio) X(psync) X(nop)

#define DECLARE(name) extern const struct engine_ops engine_##name;
#define ENTRY(name) &engine_##name,
ENGINES(DECLARE)
static const struct engine_ops *const engines[] = { ENGINES(ENTRY) NULL };

const struct engine_ops *const engine_default = &engine_uring;

const struct engine_ops *engine_usable_default(const char **why)
{
    static char buf[256];
    const struct engine_ops *const order[] = { &engine_uring, &engine_aio, &engine_psync };
    size_t n = 0;
    buf[0] = 0;
    *why = NULL;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        const char *no = order[k]->unavailable ? order[k]->unavailable() : NULL;
        if (!no) {
            if (n)
                *why = buf;
            return order[k];
        }
        int w = snprintf(buf + n, sizeof buf - n, "%s%s: %s", n ? "; " : "", order[k]->name, no);
        if (w > 0)
            n = n + (size_t)w < sizeof buf ? n + (size_t)w : sizeof buf - 1;
    }
    *why = buf;
    return &engine_psync; /* plain threads need nothing of the kernel's */
}

const struct engine_ops *engine_find(const char *name)
{
    for (const struct engine_ops *const *e = engines; *e; e++)
        if (!strcmp((*e)->name, name) || ((*e)->alias && !strcmp((*e)->alias, name)))
            return *e;
    return NULL;
}

const char *engine_names(void)
{
    static char buf[256];
    if (!buf[0]) {
        size_t n = 0;
        for (const struct engine_ops *const *e = engines; *e; e++) {
            size_t len = strlen((*e)->name);
            const char *sep = !e[1] ? (e == engines ? "" : " or ") : (e == engines ? "" : ", ");
            if (n + strlen(sep) + len + 1 >= sizeof buf)
                break;
            strcpy(buf + n, sep);
            n += strlen(sep);
            strcpy(buf + n, (*e)->name);
            n += len;
        }
    }
    return buf;
}

const struct engine_ops *engine_at(size_t i)
{
    return i < sizeof engines / sizeof engines[0] ? engines[i] : NULL;
}

const struct engine_option *engine_option_find(const char *name, size_t len, const struct engine_options **table)
{
    for (const struct engine_ops *const *e = engines; *e; e++)
        for (const struct engine_option *o = (*e)->options ? (*e)->options->table : NULL; o && o->name; o++)
            if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
                *table = (*e)->options;
                return o;
            }
    return NULL;
}
