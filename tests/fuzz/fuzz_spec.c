/* fuzz_spec.c - the workload parsers (native spec and Iometer .icf) on any
 * bytes: they must answer with a job or an error message, never crash,
 * never hang; and a job they read that --save-icf writes must read back
 * (the .icf writer and reader agree). A libFuzzer target; tests/fuzz/driver.c runs it without
 * libFuzzer. */
#include "spec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static struct job job;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("spec", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    FILE *null = fopen("/dev/null", "w");
    for (int k = 0; k < 2; k++) {
        int rc = k ? icf_parse_file(path, &job, err, sizeof err) : spec_parse_file(path, &job, err, sizeof err);
        if (rc == 0) {
            for (int i = 0; i < job.nspecs; i++)
                spec_validate(&job.specs[i], err, sizeof err);
            if (null)
                job_print_json(&job, null);
            char *text = NULL;
            size_t len = 0;
            FILE *mem = open_memstream(&text, &len);
            int w = mem ? icf_write(&job, NULL, 0, mem, err, sizeof err) : -1;
            if (mem)
                fclose(mem);
            int back = memfd_create("icf", MFD_CLOEXEC);
            if (w == 0 && back >= 0 && write(back, text, len) == (ssize_t)len) {
                static struct job again;
                char p2[64];
                snprintf(p2, sizeof p2, "/proc/self/fd/%d", back);
                if (icf_parse_file(p2, &again, err, sizeof err) != 0) {
                    fprintf(stderr, "an .icf iogen wrote does not read back: %s\n", err);
                    abort();
                }
            }
            if (back >= 0)
                close(back);
            free(text);
        }
    }
    if (null)
        fclose(null);
    close(fd);
    return 0;
}
