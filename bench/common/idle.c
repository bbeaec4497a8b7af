/* idle.c - what a CPU did besides running the probe: how often it entered its
 * idle states (cpuidle's sysfs counters), how many interrupts it took. */
#include "osm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries into the CPU's idle states so far (cpuidle's sysfs counters): those
 * of the states that halt it, every state but POLL, in *halts, POLL's in
 * *polls. In a guest a halt is a VM exit: whoever wakes that CPU waits for
 * the host to resume it. -1 where the CPU has no cpuidle states in sysfs. */
int osm_idle_entries(int cpu, long long *halts, long long *polls)
{
    *halts = *polls = 0;
    int states = 0;
    for (int k = 0;; k++) {
        char path[96], name[32] = "";
        long long usage = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/name", cpu, k);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        bool named = fscanf(f, "%31s", name) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/usage", cpu, k);
        if (!named || !(f = fopen(path, "r")))
            return -1;
        bool read = fscanf(f, "%lld", &usage) == 1;
        fclose(f);
        if (!read)
            return -1;
        if (!strcmp(name, "POLL"))
            *polls += usage;
        else
            *halts += usage;
        states++;
    }
    return states ? 0 : -1;
}

long long osm_cpu_interrupts(int cpu)
{
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f)
        return -1;
    char *line = NULL, want[24];
    size_t cap = 0;
    int col = -1;
    snprintf(want, sizeof want, "CPU%d", cpu);
    if (getline(&line, &cap, f) > 0) { /* the header names the online CPUs' columns */
        int k = 0;
        for (char *w = strtok(line, " \t\n"); w; w = strtok(NULL, " \t\n"), k++)
            if (!strcmp(w, want)) {
                col = k;
                break;
            }
    }
    long long total = col < 0 ? -1 : 0;
    while (col >= 0 && getline(&line, &cap, f) > 0) {
        char *p = strchr(line, ':');
        if (!p)
            continue;
        p++;
        for (int k = 0; k <= col; k++) { /* a row of one count (ERR, MIS) is no CPU's: it stops short */
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p)
                break;
            if (k == col)
                total += (long long)v;
            p = end;
        }
    }
    free(line);
    fclose(f);
    return total;
}
