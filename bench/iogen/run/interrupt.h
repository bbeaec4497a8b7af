/* interrupt.h - SIGINT and SIGTERM end the runs: the handler sets one flag
 * (the only state iogen's parts share outside what main passes them), which
 * every wait and loop of a run reads. interrupt.c holds both. */
#ifndef IOGEN_INTERRUPT_H
#define IOGEN_INTERRUPT_H

#include <signal.h>

extern volatile sig_atomic_t interrupted;

/* SIGINT and SIGTERM set `interrupted`. */
void interrupt_catch(void);

#endif
