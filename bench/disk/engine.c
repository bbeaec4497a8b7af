/* engine.c - the engines iogen knows, by name. A new engine is its
 * engine_<name>.c and one line here. */
#include "engine.h"

#include <string.h>

extern const struct engine_ops engine_uring, engine_aio, engine_psync, engine_nop;

static const struct engine_ops *const engines[] = { &engine_uring, &engine_aio, &engine_psync, &engine_nop, NULL };

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

void engine_list(FILE *f, bool markdown)
{
    if (markdown)
        fprintf(f, "| engine | how |\n|---|---|\n");
    for (const struct engine_ops *const *e = engines; *e; e++)
        fprintf(f, markdown ? "| `%s` | %s%s |\n" : "  %-8s %s%s\n", (*e)->name, (*e)->summary,
                *e == engine_default ? " (default)" : "");
}
