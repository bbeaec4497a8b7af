/* driver.c - runs a libFuzzer target without libFuzzer (gcc builds): mutates
 * the seed files for a number of seconds and feeds each mutant to
 * LLVMFuzzerTestOneInput. A sanitizer's report or a signal saves the input
 * that caused it into the crash directory first.
 *
 *   driver SECONDS CRASH_DIR SEED_FILE...
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_IN (1 << 16)
static uint8_t cur[MAX_IN];
static size_t cur_len;
static char crash_path[4096];

static void on_crash(int sig)
{
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, cur, cur_len);
        (void)w;
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const tokens[] = { "\n", "[", "]", "=", ",", " ", "'", "-1", "0", "4294967296", "99999999999",
                                      "100", "\xff", "\0", "[spec x]", "[worker w]", "[test]", "'End",
                                      "'ACCESS SPECIFICATIONS", "'MANAGER LIST", "\"" };

static void mutate(void)
{
    for (int n = 1 + (int)(rnd() % 6); n > 0; n--) {
        size_t pos = cur_len ? rnd() % (cur_len + 1) : 0;
        switch (rnd() % 5) {
        case 0: /* flip a bit */
            if (cur_len)
                cur[pos % cur_len] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1: { /* insert a token */
            const char *t = tokens[rnd() % (sizeof tokens / sizeof tokens[0])];
            size_t tl = strlen(t) ? strlen(t) : 1;
            if (cur_len + tl < MAX_IN) {
                memmove(cur + pos + tl, cur + pos, cur_len - pos);
                memcpy(cur + pos, t, tl);
                cur_len += tl;
            }
            break;
        }
        case 2: { /* delete a span */
            size_t k = 1 + rnd() % 16;
            if (pos + k <= cur_len) {
                memmove(cur + pos, cur + pos + k, cur_len - pos - k);
                cur_len -= k;
            }
            break;
        }
        case 3: { /* duplicate a span */
            size_t k = 1 + rnd() % 64;
            if (pos + k <= cur_len && cur_len + k < MAX_IN) {
                memmove(cur + pos + k, cur + pos, cur_len - pos);
                cur_len += k;
            }
            break;
        }
        default: /* truncate */
            cur_len = pos;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s SECONDS CRASH_DIR SEED_FILE...\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]);
    snprintf(crash_path, sizeof crash_path, "%s/crash-driver-%d", argv[2], (int)getpid());
    signal(SIGABRT, on_crash);
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGFPE, on_crash);
    int nseeds = argc - 3;
    static uint8_t seeds[64][MAX_IN];
    size_t seed_len[64];
    nseeds = nseeds > 64 ? 64 : nseeds;
    for (int i = 0; i < nseeds; i++) {
        FILE *f = fopen(argv[3 + i], "rb");
        seed_len[i] = f ? fread(seeds[i], 1, MAX_IN, f) : 0;
        if (f)
            fclose(f);
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long runs = 0;
    do {
        int s = (int)(rnd() % (uint64_t)nseeds);
        memcpy(cur, seeds[s], seed_len[s]);
        cur_len = seed_len[s];
        mutate();
        LLVMFuzzerTestOneInput(cur, cur_len);
        runs++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
    printf("driver: %lu inputs, no crash\n", runs);
    return 0;
}
