/* rtt.c - round-trip time, TCP and UDP.
 *
 * net.rtt.tcp.<where>  a --size-byte message (default 1) to netpeer's echo
 *                      and back, TCP_NODELAY, on one connection
 * net.rtt.udp.<where>  the same as a datagram
 * A sample is --iterations round trips (default 100), timer overhead
 * subtracted, per round trip. Both ends run on the pinned CPU for the
 * loopback figures (the local netpeer inherits the pinning). UDP waits at
 * most 1 s for an answer; a lost datagram fails the probe rather than
 * silently bending the figure.
 */
#include "common_net.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static uint64_t msg_size = 1;

static const struct osm_opt opts[] = {
    NET_OPTS,
    OSM_OPT_U64("size", msg_size, 1, 65000, "message size in bytes (UDP at most 65000)"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "net_rtt",
    .summary = "TCP and UDP round-trip time to netpeer (loopback, or --peer HOST:PORT).",
    .default_samples = 50,
    .default_iterations = 100,
    .opts = opts,
};

static char *buf;

static void tcp_rounds(int fd, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (osm_net_write_full(fd, buf, msg_size) != 0 || osm_net_read_full(fd, buf, msg_size) != 0)
            osm_die("TCP echo failed: %s", osm_net_why(errno, (int)net_timeout_ms));
}

static void udp_rounds(int fd, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (send(fd, buf, msg_size, 0) != (ssize_t)msg_size)
            osm_die("UDP send: %s", osm_net_why(errno, (int)net_timeout_ms));
        ssize_t r = recv(fd, buf, msg_size, 0);
        if (r != (ssize_t)msg_size)
            osm_die("UDP echo: %s", r < 0 ? (errno == EAGAIN ? "no answer within 1 s (datagram lost?)" : strerror(errno))
                                           : "a datagram of the wrong size");
    }
}

static void measure(const char *id, int fd, void (*rounds)(int, uint64_t), const struct osm_opts *o,
                    const char *where, const char *proto)
{
    struct osm_meas m;
    osm_meas_init(&m, id, o->samples);
    rounds(fd, o->iterations * o->warmup);
    for (size_t i = 0; i < o->samples; i++) {
        struct osm_window w;
        bool d;
        osm_window_open_blocking(&w);
        rounds(fd, o->iterations);
        uint64_t t = osm_window_close(&w, &d);
        osm_sample_ops(o->iterations);
        osm_meas_add(&m, ((double)t - osm_timer.overhead) / (double)o->iterations, d);
    }
    m.overhead_subtracted = osm_timer.overhead / (double)o->iterations;
    osm_param_str(&m, "protocol", proto);
    osm_param_num(&m, "message_bytes", (double)msg_size);
    osm_param_num(&m, "round_trips_per_sample", (double)o->iterations);
    osm_param_str(&m, "peer", net_peer_arg ? net_peer_arg : "local netpeer");
    osm_param_str(&m, "where", where);
    osm_emit(&m);
    osm_meas_free(&m);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    struct net_target t;
    net_target_open(&t);
    buf = calloc(1, msg_size);
    char id[64];

    int fd = net_connect_or_die(&t, SOCK_STREAM);
    if (osm_net_hello(fd, OSM_NET_ECHO) != 0)
        osm_die("sending the echo header failed");
    snprintf(id, sizeof id, "net.rtt.tcp.%s", t.where);
    measure(id, fd, tcp_rounds, &o, t.where, "tcp");
    close(fd);

    fd = net_connect_or_die(&t, SOCK_DGRAM);
    struct timeval tv = { 1, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    snprintf(id, sizeof id, "net.rtt.udp.%s", t.where);
    measure(id, fd, udp_rounds, &o, t.where, "udp");
    close(fd);
    net_target_close(&t);
    free(buf);
    return 0;
}
