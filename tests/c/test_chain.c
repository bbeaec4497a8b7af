/* test_chain.c - the pointer chains the memory probes walk
 * (osm_chain_build): each is one cycle through every element, and each
 * order visits them as it says. Run by tests/test_common_chain.py. */
#include "osm.h"
#include "osmmem.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Follows the chain from buf; fills seq[] with the element indices in visit
 * order (at most cap); returns the steps taken back to buf, or 0 if an
 * element was visited twice first (not one cycle through all). */
static size_t walk(char *buf, size_t n, size_t stride, size_t *seq)
{
    char *seen = calloc(n, 1);
    void **p = (void **)buf;
    size_t steps = 0;
    do {
        size_t e = (size_t)((char *)p - buf) / stride;
        if (e >= n || seen[e]) {
            free(seen);
            return 0;
        }
        seen[e] = 1;
        seq[steps++] = e;
        p = (void **)*p;
    } while ((char *)p != buf && steps < n + 1);
    free(seen);
    return steps;
}

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = 64, stride = 128, size = pages * page;
    size_t n = size / stride, per_page = page / stride;
    char *buf = aligned_alloc(page, size + page);
    size_t *seq = malloc((n + 1) * sizeof *seq);
    static const char *const names[] = { "random", "sequential", "pagewise" };
    for (int o = OSM_CHAIN_RANDOM; o <= OSM_CHAIN_PAGEWISE; o++) {
        osm_chain_build(buf, size, stride, (enum osm_chain_order)o, 42);
        size_t steps = walk(buf, n, stride, seq);
        check(steps == n, names[o], "one cycle through all %zu elements: %zu steps back to the start", n, steps);
    }

    /* pagewise: every load on another page; the pages in one order that
     * repeats each pass, not the address order; each pass one element
     * further into each page, so a page's elements are all visited */
    osm_chain_build(buf, size, stride, OSM_CHAIN_PAGEWISE, 42);
    walk(buf, n, stride, seq);
    size_t same_page = 0, order_breaks = 0, ascending = 0;
    for (size_t k = 0; k + 1 < n; k++)
        same_page += seq[k] / per_page == seq[k + 1] / per_page;
    for (size_t k = 0; k + pages < n; k++)
        order_breaks += seq[k] / per_page != seq[k + pages] / per_page;
    for (size_t k = 0; k + 1 < pages; k++)
        ascending += seq[k + 1] / per_page > seq[k] / per_page;
    check(same_page == 0, "pagewise other page", "%zu of %zu consecutive loads on the same page", same_page, n - 1);
    check(order_breaks == 0, "pagewise page order", "the page order repeats each pass (%zu breaks)", order_breaks);
    check(ascending < pages - 1 - 8 && ascending > 8, "pagewise random pages",
          "%zu of %zu steps between pages go up (address order: all)", ascending, pages - 1);

    /* a size of part pages: the random order, still one cycle */
    osm_chain_build(buf, size - stride, stride, OSM_CHAIN_PAGEWISE, 42);
    check(walk(buf, n - 1, stride, seq) == n - 1, "pagewise part pages", "falls back to one random cycle");
    free(seq);
    free(buf);
    return check_summary();
}
