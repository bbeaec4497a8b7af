/* prober.h - the system prober: a thread that samples /proc/stat,
 * /proc/diskstats, /proc/vmstat, /proc/interrupts, /proc/net/dev and
 * /proc/meminfo at an interval while a run is measured, and reports rates
 * (CPU utilization, interrupts/s, context switches/s, the target device's
 * utilization and queue, paging, network bytes/s, free memory). */
#ifndef IOGEN_PROBER_H
#define IOGEN_PROBER_H

#include "json.h"

struct prober;
/* disk: the device name as in /proc/diskstats ("vda", "loop0"), or "". */
struct prober *prober_start(double interval_s, const char *disk);
void prober_stop(struct prober *p);
/* Writes the member "system": {...} (p NULL: with no samples). */
void prober_json(const struct prober *p, struct json *j);
/* Frees p without writing anything. */
void prober_free(struct prober *p);

#endif
