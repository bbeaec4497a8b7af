/* osmnet.h - what the network probes and netpeer share: the peer's little
 * protocol, address parsing, connecting with a bounded timeout, and a
 * netpeer started on this machine for the loopback figures.
 *
 * Protocol: a TCP client first sends an 8-byte header, "OSMP", a mode
 * byte, three zero bytes; then:
 *   E  echo: every byte comes back (round trips)
 *   S  sink: the peer reads and drops everything; at end of stream it
 *      answers with the byte count (8 bytes, little endian) and closes
 *   R  source: the peer sends until the client closes (download)
 *   C  close-watch: the peer waits for end of stream, then closes its side
 * Anything else, or no header within 5 s, and the peer drops the
 * connection. UDP datagrams to the same port come back unchanged. */
#ifndef OSMNET_H
#define OSMNET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define OSM_NET_MAGIC "OSMP"
enum { OSM_NET_ECHO = 'E', OSM_NET_SINK = 'S', OSM_NET_SOURCE = 'R', OSM_NET_CLOSE = 'C' };

struct osm_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    char text[128]; /* "HOST:PORT" as given or as resolved */
};

/* "HOST:PORT", "[V6]:PORT". 0, or -1 with a message in err. */
int osm_net_parse(const char *hostport, struct osm_addr *a, char *err, size_t errlen);
/* A connected socket (TCP_NODELAY set on TCP), or -1 with a message; the
 * connect, and every later wait on it, gives up after timeout_ms. */
int osm_net_connect(const struct osm_addr *a, int type, int timeout_ms, char *err, size_t errlen);
/* Every later read or write on fd gives up after timeout_ms (EAGAIN). */
void osm_net_deadline(int fd, int timeout_ms);
/* A failed network call's errno in words, a timeout named as such. */
const char *osm_net_why(int err, int timeout_ms);
/* Sends the 8-byte header for mode. */
int osm_net_hello(int fd, char mode);
/* Reads or writes exactly n bytes; -1 on error or end of stream. */
int osm_net_read_full(int fd, void *buf, size_t n);
int osm_net_write_full(int fd, const void *buf, size_t n);

/* A netpeer on this machine (for .loopback): starts build/bin/netpeer next
 * to the running binary with --bind 127.0.0.1 --port 0, reads where it
 * listens, and fills a. It inherits our CPU pinning and scheduling. */
int osm_net_local_peer(struct osm_addr *a, pid_t *pid, unsigned delay_us, char *err, size_t errlen);
void osm_net_stop_peer(pid_t pid);

#endif
