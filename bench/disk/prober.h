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
/* disk: the device name as in /proc/diskstats ("vda", "loop0"), or "". */
struct prober *prober_start(double interval_s, const char *disk);
void prober_stop(struct prober *p);
/* Writes the member "system": {...} (p NULL: with no samples). */
void prober_json(const struct prober *p, struct json *j);
/* Frees p without writing anything. */
void prober_free(struct prober *p);

#endif
