/* signal.c - signals.
 *
 * cpu.signal.install  sigaction() installing a handler (alternating between
 *                     two, so every call changes the disposition), per call
 * cpu.signal.install.old  the same, the old action read back too (as
 *                     lmbench's lat_sig install: sigaction(sig, &sa, &old))
 * cpu.signal.deliver  kill(getpid(), SIGUSR1) to a handler and back: the
 *                     kill system call, delivery on its return to user
 *                     space, the handler, and sigreturn; per signal
 * cpu.signal.send     kill(getpid(), 0): the sending system call alone (the
 *                     permission check, no signal)
 * cpu.signal.catch    deliver - send, window by window: what catching adds
 *                     to sending, lmbench's "signal handler overhead"
 *                     (lat_sig catch subtracts kill(me, 0) the same way)
 * Batched; the timer's overhead per window subtracted; deliver and send
 * windows alternate.
 */
#include "osm.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t caught;

static void h1(int sig) { (void)sig; caught++; }
static void h2(int sig) { (void)sig; caught++; }

/* ctx: where to put the old action, or NULL */
static void body_install(void *ctx, uint64_t n)
{
    struct sigaction sa[2];
    memset(sa, 0, sizeof sa);
    sa[0].sa_handler = h1;
    sa[1].sa_handler = h2;
    for (uint64_t i = 0; i < n; i++)
        if (sigaction(SIGUSR2, &sa[i & 1], ctx) != 0)
            osm_die("sigaction: %m");
}

static void body_send(void *ctx, uint64_t n)
{
    pid_t self = *(pid_t *)ctx;
    for (uint64_t i = 0; i < n; i++)
        kill(self, 0);
}

static void body_deliver(void *ctx, uint64_t n)
{
    pid_t self = *(pid_t *)ctx;
    for (uint64_t i = 0; i < n; i++)
        kill(self, SIGUSR1);
}

static const struct osm_probe_info info = {
    .name = "cpu_signal",
    .summary = "Signal handler installation (sigaction) and delivery to oneself (kill).",
    .default_samples = 100,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    struct osm_meas m, inst[2];
    static struct sigaction old;
    osm_meas_init(&inst[0], "cpu.signal.install", o.samples);
    osm_meas_init(&inst[1], "cpu.signal.install.old", o.samples);
    const osm_body ib[2] = { body_install, body_install };
    void *const ic[2] = { NULL, &old };
    osm_run_interleaved(2, inst, ib, ic, o.iterations, o.samples, NULL);
    osm_param_str(&inst[1], "old_action", "read back (sigaction's third argument), as lmbench's lat_sig install");
    for (int k = 0; k < 2; k++) {
        osm_emit(&inst[k]);
        osm_meas_free(&inst[k]);
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h1;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        osm_die("sigaction: %m");
    pid_t self = getpid();
    caught = 0;
    body_deliver(&self, 10);
    if (caught != 10)
        osm_die("sent 10 signals to myself, the handler saw %d", (int)caught);
    struct osm_meas pair[2];
    osm_meas_init(&pair[0], "cpu.signal.deliver", o.samples);
    osm_meas_init(&pair[1], "cpu.signal.send", o.samples);
    const osm_body bodies[2] = { body_deliver, body_send };
    void *const ctxs[2] = { &self, &self };
    osm_run_interleaved(2, pair, bodies, ctxs, o.iterations, o.samples, NULL);
    osm_meas_init(&m, "cpu.signal.catch", o.samples);
    for (size_t i = 0; i < pair[0].n && i < pair[1].n; i++)
        osm_meas_add(&m, pair[0].v[i] - pair[1].v[i], pair[0].disturbed[i] || pair[1].disturbed[i]);
    osm_param_str(&pair[0], "signal", "SIGUSR1");
    osm_param_str(&pair[1], "signal", "0 (no signal: the send path only)");
    osm_param_str(&m, "method", "cpu.signal.deliver - cpu.signal.send, window by window (lmbench's lat_sig catch)");
    for (int k = 0; k < 2; k++) {
        osm_emit(&pair[k]);
        osm_meas_free(&pair[k]);
    }
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
