/* common_net.h - the options every network probe takes, and finding the
 * peer: --peer HOST:PORT (ids end in .remote), or a netpeer started here on
 * 127.0.0.1 (ids end in .loopback). Included by each probe; no state is
 * shared between binaries. */
#ifndef COMMON_NET_H
#define COMMON_NET_H

#include "osm.h"
#include "osmnet.h"

#include <string.h>
#include <unistd.h>

static const char *net_peer_arg;
static unsigned net_timeout_ms = 3000;
static unsigned net_peer_delay_us; /* --peer-delay-us: the local netpeer holds each echo this long */

/* The rows of osm_probe_info.opts every network probe lists first. */
#define NET_OPTS                                                                                              \
    OSM_OPT_STR("peer", net_peer_arg, "HOST:PORT of a running netpeer", .def = "start one on 127.0.0.1", \
                .arg = "HOST:PORT"), \
    OSM_OPT_UINT("timeout", net_timeout_ms, 1, 600000, "give up on the peer after this many ms without an answer"), \
    OSM_OPT_UINT("peer-delay-us", net_peer_delay_us, 0, 1000000,                                            \
                 "the local netpeer holds each echo this many us, spinning, before answering")

struct net_target {
    struct osm_addr addr;
    const char *where; /* "loopback" or "remote" */
    pid_t local_pid;
};

static inline void net_target_open(struct net_target *t)
{
    char err[512];
    t->local_pid = 0;
    if (net_peer_arg) {
        if (net_peer_delay_us)
            osm_usage_error("--peer-delay-us holds the echoes of the local netpeer; --peer names another one");
        if (osm_net_parse(net_peer_arg, &t->addr, err, sizeof err) != 0)
            osm_usage_error("--peer: %s", err);
        t->where = "remote";
    } else {
        if (osm_net_local_peer(&t->addr, &t->local_pid, net_peer_delay_us, err, sizeof err) != 0)
            osm_die("%s", err);
        t->where = "loopback";
    }
    /* fail fast and clearly when nothing answers there */
    int fd = osm_net_connect(&t->addr, SOCK_STREAM, (int)net_timeout_ms, err, sizeof err);
    if (fd < 0) {
        osm_net_stop_peer(t->local_pid);
        osm_die("%s", err);
    }
    close(fd);
}

static inline void net_target_close(struct net_target *t)
{
    osm_net_stop_peer(t->local_pid);
}

static inline int net_connect_or_die(struct net_target *t, int type)
{
    char err[512];
    int fd = osm_net_connect(&t->addr, type, (int)net_timeout_ms, err, sizeof err);
    if (fd < 0) {
        net_target_close(t);
        osm_die("%s", err);
    }
    return fd;
}

#endif
