/* fuzz_trace.c - the I/O trace reader (bench/iotrace/format/trace.c) on any
 * bytes, as a merged trace and as a recorder's part. A libFuzzer target;
 * tests/fuzz/driver.c runs it without libFuzzer. */
#include "trace.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    for (int merged = 0; merged < 2; merged++) {
        struct trace t = {0};
        if (trace_parse((const char *)data, size, "fuzz", merged, &t, err, sizeof err) == 0) {
            FILE *null = fopen("/dev/null", "w");
            if (null) {
                trace_write(null, &t);
                fclose(null);
            }
            trace_free(&t);
        }
    }
    return 0;
}
