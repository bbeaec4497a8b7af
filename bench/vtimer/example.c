/* example.c - profiling a code path with vtimer: a loop that computes and
 * then waits. The physical timer sees both; the virtual one only the
 * computing. Build: make (build/bin/vtimer_example), or in your project:
 *   cc -O2 -Ibuild/include my.c build/lib/libvtimer.a -pthread
 */
#include "vtimer.h"

#include <stdio.h>
#include <time.h>

static volatile double sink;

static void compute(int n)
{
    double x = 1;
    for (int i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

int main(void)
{
    vt_timer *phys, *virt;
    int r;
    if ((r = vt_alloc(&phys, VT_PHYSICAL, VT_PRIVATE)) || (r = vt_alloc(&virt, VT_VIRTUAL, VT_PRIVATE))) {
        fprintf(stderr, "vt_alloc: %s\n", vt_strerror(r));
        return 1;
    }
    for (int round = 0; round < 5; round++) {
        vt_start(phys);
        vt_start(virt);
        compute(2000000);                                  /* on the CPU */
        nanosleep(&(struct timespec){ 0, 20000000 }, NULL); /* off it: 20 ms */
        vt_stop(virt);
        vt_stop(phys);
    }
    uint64_t p, v;
    vt_read(phys, &p);
    vt_read(virt, &v);
    printf("5 rounds of compute + 20 ms sleep: physical %.1f ms, virtual %.1f ms (virtual time by %s)\n", p / 1e6,
           v / 1e6, vt_mode());
    vt_free(phys);
    vt_free(virt);
    return 0;
}
