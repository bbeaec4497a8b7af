/* prober.h - the system prober: a thread that samples /proc/stat,
 * /proc/diskstats, /proc/vmstat, /proc/interrupts, /proc/net/dev and
 * /proc/meminfo at an interval while a run is measured, and reports rates
 * (CPU utilization, interrupts/s, context switches/s, the target device's
 * utilization and queue, paging, swapping, network bytes/s and packets/s
 * per NIC, free, buffered, shared and swap memory: SPEK's prober). */
#ifndef IOGEN_PROBER_H
#define IOGEN_PROBER_H

#include "json.h"

#include <stdbool.h>

#define PROBER_MAX_NICS 16

/* Rates between two samples (whole_run: the first and the last). */
struct prober_rates {
    double t, dt;
    double cpu_busy_pct, cpu_user_pct, cpu_sys_pct, cpu_iowait_pct, cpu_irq_pct, cpu_steal_pct;
    double intr_per_s, irq_lines_per_s, ctxt_per_s;
    double disk_reads_per_s, disk_writes_per_s, disk_util_pct, disk_queue;
    double pgpgin_kib_per_s, pgpgout_kib_per_s, pgmajfault_per_s, pswpin_per_s, pswpout_per_s;
    double net_rx_bytes_per_s, net_tx_bytes_per_s, net_packets_per_s, net_errors_per_s;
    int nnics;
    struct { char name[32]; double rx_packets_per_s, tx_packets_per_s, errors_per_s; } nic[PROBER_MAX_NICS];
    unsigned long long mem_free_kib, mem_available_kib, mem_cached_kib, mem_buffers_kib, mem_shared_kib;
    unsigned long long swap_total_kib, swap_free_kib;
};

struct prober;
/* The whole run's rates; false when there are not two samples. */
bool prober_whole(const struct prober *p, struct prober_rates *out);
/* Called in the prober's thread right after each sample: r NULL after the
 * first, else the rates since the sample before (iogen --status streams
 * them). The prober's lock is held: it must not call back into the prober. */
typedef void (*prober_tick)(void *ctx, const struct prober_rates *r);
/* disk: the device name as in /proc/diskstats ("vda", "loop0"), or "".
 * Samples every interval_s on one fixed schedule from the first sample
 * (a late sample does not push the later ones back), and once more at
 * prober_stop. tick: NULL, or called after each sample. */
struct prober *prober_start(double interval_s, const char *disk, prober_tick tick, void *ctx);
void prober_stop(struct prober *p);
/* Writes the member "system": {...} (p NULL: with no samples). */
void prober_json(const struct prober *p, struct json *j);
/* Writes rates as one JSON object (a sample of "system"). */
void prober_rates_json(struct json *j, const struct prober_rates *r);
/* Frees p without writing anything. */
void prober_free(struct prober *p);

#endif
