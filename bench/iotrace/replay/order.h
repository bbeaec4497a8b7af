/* When a replayed thread may start: once every call, of any thread in any
 * process, that ended before its first call began has been replayed (the
 * data a forked child or a new thread found is there, whatever the
 * scheduler does). Near-linear: O(1) amortized per call and per thread
 * after one sort, however many processes and threads the trace has. */
#ifndef IOTRACE_ORDER_H
#define IOTRACE_ORDER_H

#include <stddef.h>

#include "iotrace.h"

/* Before the replaying processes are forked: the calls in the order of
 * their ends, each thread's need, the shared frontier and gates. */
void order_init(const struct trace *t, const struct layout *L);
/* Thread g of the layout waits for its gate. */
void order_wait(size_t g);
/* Row `row` was replayed: the frontier moves, the gates it reaches open. */
void order_done(size_t row);

#endif
