/* idle.c - how often a CPU entered its idle states (cpuidle's sysfs counters). */
#include "osm.h"

#include <stdio.h>
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
