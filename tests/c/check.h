/* check.h - the reporter the C test programs share: one "PASS name: ..." or
 * "FAIL name: ..." line per check; main() ends with check_summary(). */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int passed, failed, skipped;

static void check(bool ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4), unused));
static void check(bool ok, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %s: ", ok ? "PASS" : "FAIL", name);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    ok ? passed++ : failed++;
}

/* Prints the closing "N passed, N failed[, N skipped]" line; the exit status. */
static int check_summary(void) __attribute__((unused));
static int check_summary(void)
{
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
