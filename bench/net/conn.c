/* conn.c - TCP connection setup and teardown.
 *
 * net.connect.<where>  connect() on a fresh socket until it returns
 *                      established (SYN, SYN-ACK, ACK); the socket is made
 *                      before the window, the peer accepts in the background
 * net.close.<where>    teardown seen from both sides: shutdown(SHUT_WR)
 *                      sends our FIN; the peer (close-watch) sees end of
 *                      stream and closes its side; the window ends when its
 *                      FIN reaches us (read returns 0), then close()
 * One connection per sample. A run opens many connections: on a busy
 * machine TIME_WAIT sockets accumulate, which is the normal cost of it.
 */
#include "common_net.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

static const struct osm_opt opts[] = { NET_OPTS, { 0 } };

static const struct osm_probe_info info = {
    .name = "net_conn",
    .summary = "TCP connect until established, and teardown until the peer has closed too.",
    .default_samples = 100,
    .one_event = "one connection",
    .opts = opts,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    struct net_target t;
    net_target_open(&t);
    struct osm_meas mc, mx;
    char id[64];
    snprintf(id, sizeof id, "net.connect.%s", t.where);
    osm_meas_init(&mc, id, o.samples);
    mc.single_shot = true;
    snprintf(id, sizeof id, "net.close.%s", t.where);
    osm_meas_init(&mx, id, o.samples);
    mx.single_shot = true;
    for (size_t i = 0; i < o.warmup + o.samples; i++) {
        int fd = socket(t.addr.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            osm_die("socket: %s", strerror(errno));
        struct timeval tv = { (time_t)(net_timeout_ms / 1000), (suseconds_t)(net_timeout_ms % 1000) * 1000 };
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds a blocking connect */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        struct osm_window w;
        bool d1, d2;
        osm_window_open_blocking(&w);
        int r = connect(fd, (struct sockaddr *)&t.addr.ss, t.addr.len);
        uint64_t tc = osm_window_close(&w, &d1);
        if (r != 0) {
            net_target_close(&t);
            osm_die("connecting to %s: %s", t.addr.text, osm_net_why(errno, (int)net_timeout_ms));
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (osm_net_hello(fd, OSM_NET_CLOSE) != 0)
            osm_die("sending the close-watch header failed");
        char c;
        osm_window_open_blocking(&w);
        shutdown(fd, SHUT_WR);
        ssize_t n = read(fd, &c, 1);
        uint64_t tx = osm_window_close(&w, &d2);
        close(fd);
        if (n != 0)
            osm_die("teardown: expected the peer's end of stream, got %s",
                    n < 0 ? osm_net_why(errno, (int)net_timeout_ms) : "data");
        if (i >= o.warmup) {
            osm_meas_add(&mc, (double)tc - osm_timer.overhead, d1);
            osm_meas_add(&mx, (double)tx - osm_timer.overhead, d2);
        }
    }
    const char *peer = net_peer_arg ? net_peer_arg : "local netpeer";
    struct osm_meas *both[2] = { &mc, &mx };
    for (int k = 0; k < 2; k++) {
        osm_param_str(both[k], "peer", peer);
        osm_param_str(both[k], "where", t.where);
    }
    osm_param_str(&mx, "what", "shutdown(SHUT_WR) until the peer's FIN");
    mc.overhead_subtracted = mx.overhead_subtracted = osm_timer.overhead;
    osm_emit(&mc);
    osm_emit(&mx);
    osm_meas_free(&mc);
    osm_meas_free(&mx);
    net_target_close(&t);
    return 0;
}
