/* netpeer.c - the other end of osmeter's network probes.
 *
 *   netpeer [--port N] [--bind ADDR] [--cpu N] [--lifeline] [--delay-us N]
 *
 * Listens on TCP and UDP at the same port (0 = any free one), prints
 * "listening on ADDR:PORT", and serves until SIGINT or SIGTERM: each TCP
 * connection gets a thread and says what it wants in an 8-byte header
 * (echo, sink, source, close-watch: see bench/common/osmnet.h); UDP
 * datagrams are echoed. A connection that sends no valid header within 5 s,
 * sends garbage, vanishes, or goes quiet for IDLE_S is dropped without
 * disturbing the others; when MAX_CONN are open, a new one takes the place
 * of the one that has been quiet longest, so silent clients cannot lock the
 * others out. --delay-us N holds every echo (TCP and UDP) N us, spinning on
 * netpeer's CPU, before it answers: a known delay added to the path, where
 * the kernel has no netem to add one (the kernel-path checks use it).
 */
#include "osm.h"
#include "osmnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONN 1024
#define IDLE_S 60  /* a connection quiet this long is dropped */
#define BUF (256 * 1024)

/* The open connections, and when each last moved: the quietest one gives
 * its place to a new one when all places are taken. */
static struct conn {
    int fd;                  /* -1: a free place */
    _Atomic uint64_t active; /* CLOCK_MONOTONIC ns of the last read, write or accept */
} conns[MAX_CONN];
static pthread_mutex_t conns_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t delay_ns; /* --delay-us: each echo held this long */

/* Holds an echo delay_ns, spinning (a sleep would add the timer's slack). */
static void hold(void)
{
    if (!delay_ns)
        return;
    uint64_t end = osm_clock_ns() + delay_ns;
    while (osm_clock_ns() < end)
        ;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A place for fd: a free one, or the quietest connection's, which is shut
 * down (its thread sees the end and leaves). */
static struct conn *conn_take(int fd)
{
    pthread_mutex_lock(&conns_mu);
    struct conn *c = NULL, *quiet = NULL;
    for (int i = 0; i < MAX_CONN && !c; i++)
        if (conns[i].fd < 0)
            c = &conns[i];
        else if (!quiet || atomic_load(&conns[i].active) < atomic_load(&quiet->active))
            quiet = &conns[i];
    if (!c) {
        shutdown(quiet->fd, SHUT_RDWR); /* its thread closes it */
        quiet->fd = -2;                 /* taken over: the old thread must not free it */
        c = quiet;
    }
    c->fd = fd;
    atomic_store(&c->active, now_ns());
    pthread_mutex_unlock(&conns_mu);
    return c;
}

static void conn_free(struct conn *c, int fd)
{
    pthread_mutex_lock(&conns_mu);
    if (c->fd == fd) /* not taken over meanwhile */
        c->fd = -1;
    pthread_mutex_unlock(&conns_mu);
    close(fd);
}

struct job {
    struct conn *c;
    int fd;
};

static void *serve(void *arg)
{
    struct job job = *(struct job *)arg;
    free(arg);
    int fd = job.fd;
    struct conn *c = job.c;
    char *buf = malloc(BUF);
    char h[8];
    struct timeval tv = { 5, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (!buf || osm_net_read_full(fd, h, sizeof h) != 0 || memcmp(h, OSM_NET_MAGIC, 4) != 0)
        goto out; /* garbage or silence: drop it */
    struct timeval idle = { IDLE_S, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &idle, sizeof idle);
    atomic_store(&c->active, now_ns());
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    switch (h[4]) {
    case OSM_NET_ECHO:
        for (;;) {
            ssize_t r = read(fd, buf, BUF);
            if (r > 0)
                hold();
            if (r <= 0 || osm_net_write_full(fd, buf, (size_t)r) != 0)
                break;
            atomic_store_explicit(&c->active, now_ns(), memory_order_relaxed);
        }
        break;
    case OSM_NET_SINK: {
        uint64_t total = 0;
        for (;;) {
            ssize_t r = read(fd, buf, BUF);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            total += (uint64_t)r;
            atomic_store_explicit(&c->active, now_ns(), memory_order_relaxed);
        }
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)(total >> (8 * i));
        osm_net_write_full(fd, le, sizeof le);
        break;
    }
    case OSM_NET_SOURCE:
        memset(buf, 0x5A, BUF);
        while (osm_net_write_full(fd, buf, BUF) == 0)
            atomic_store_explicit(&c->active, now_ns(), memory_order_relaxed);
        break;
    case OSM_NET_CLOSE:
        while (read(fd, buf, BUF) > 0)
            atomic_store_explicit(&c->active, now_ns(), memory_order_relaxed);
        break;
    default:
        break; /* unknown mode: drop */
    }
out:
    free(buf);
    conn_free(c, fd);
    return NULL;
}

static void *accept_loop(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                if (errno != EINTR && errno != ECONNABORTED)
                    usleep(10000); /* out of descriptors: let connections finish */
                continue;
            }
            return NULL; /* the socket was closed: shutting down */
        }
        struct job *job = malloc(sizeof *job);
        if (!job) {
            close(fd);
            continue;
        }
        job->fd = fd;
        job->c = conn_take(fd);
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 64 * 1024);
        if (pthread_create(&th, &at, serve, job) != 0) {
            conn_free(job->c, fd);
            free(job);
        }
        pthread_attr_destroy(&at);
    }
}

static void *udp_loop(void *arg)
{
    int ufd = (int)(intptr_t)arg;
    static char buf[65536];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t r = recvfrom(ufd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        if (r < 0) {
            if (errno == EINTR || errno == ECONNREFUSED)
                continue;
            return NULL;
        }
        hold();
        sendto(ufd, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
    }
}

/* TCP and UDP sockets bound to the same port. */
static int bind_pair(const char *bind_addr, unsigned port, int *tfd, int *ufd, struct sockaddr_storage *ss,
                     socklen_t *sl)
{
    for (int attempt = 0; attempt < 20; attempt++) {
        struct osm_addr a;
        char hp[300], err[256];
        snprintf(hp, sizeof hp, strchr(bind_addr, ':') ? "[%s]:%u" : "%s:%u", bind_addr, port ? port : 9);
        if (osm_net_parse(hp, &a, err, sizeof err) != 0)
            osm_usage_error("--bind %s: %s", bind_addr, err);
        if (!port)
            ((struct sockaddr_in *)&a.ss)->sin_port = 0; /* same offset for IPv6's sin6_port */
        *tfd = socket(a.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        setsockopt(*tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(*tfd, (struct sockaddr *)&a.ss, a.len) != 0 || listen(*tfd, 1024) != 0)
            osm_die("cannot listen on %s:%u: %s", bind_addr, port, strerror(errno));
        *sl = sizeof *ss;
        getsockname(*tfd, (struct sockaddr *)ss, sl);
        *ufd = socket(a.ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (bind(*ufd, (struct sockaddr *)ss, *sl) == 0)
            return 0;
        close(*tfd);
        close(*ufd);
        if (port)
            osm_die("cannot bind UDP port %u on %s: %s", port, bind_addr, strerror(errno));
    }
    osm_die("found no port free for both TCP and UDP");
}

/* --lifeline: standard input is the starter's; when it closes (the ssh
 * session that started us ended, or the controller died), stop. */
static void *lifeline(void *arg)
{
    (void)arg;
    char buf[256];
    while (read(0, buf, sizeof buf) > 0)
        ;
    kill(getpid(), SIGTERM);
    return NULL;
}

int main(int argc, char **argv)
{
    osm_progname = "netpeer";
    bool use_lifeline = false;
    const char *bind_addr = "0.0.0.0";
    unsigned port = 0;
    int cpu = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: netpeer [--port N] [--bind ADDR] [--cpu N] [--lifeline] [--delay-us N]\n"
                   "Serves osmeter's network probes (echo, sink, source, close-watch on TCP; echo on UDP)\n"
                   "on one port (default: any free one), printing 'listening on ADDR:PORT', until SIGINT/SIGTERM\n"
                   "(with --lifeline, also until its standard input closes). --cpu N pins every thread to CPU N\n"
                   "(default: wherever the scheduler puts them). --delay-us N holds every echo N us\n"
                   "(spinning) before answering: a known delay added to the path.\n");
            return 0;
        } else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            port = (unsigned)osm_parse_u64("--port", argv[++i], 0, 65535);
        } else if (!strcmp(argv[i], "--bind") && i + 1 < argc) {
            bind_addr = argv[++i];
        } else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
            cpu = (int)osm_parse_u64("--cpu", argv[++i], 0, CPU_SETSIZE - 1);
        } else if (!strcmp(argv[i], "--lifeline")) {
            use_lifeline = true;
        } else if (!strcmp(argv[i], "--delay-us") && i + 1 < argc) {
            delay_ns = osm_parse_u64("--delay-us", argv[++i], 0, 1000000) * 1000;
        } else {
            osm_usage_error("unknown or incomplete option '%s'", argv[i]);
        }
    }
    if (cpu >= 0 && osm_pin(cpu) != 0) /* before any thread: they inherit it */
        osm_usage_error("--cpu %d: cannot pin there (%s); this machine has %ld online CPUs, numbered from 0", cpu,
                        strerror(errno), sysconf(_SC_NPROCESSORS_ONLN));
    for (int i = 0; i < MAX_CONN; i++)
        conns[i].fd = -1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits this; main waits for them */
    signal(SIGPIPE, SIG_IGN);

    int tfd, ufd;
    struct sockaddr_storage ss;
    socklen_t sl;
    bind_pair(bind_addr, port, &tfd, &ufd, &ss, &sl);
    char host[INET6_ADDRSTRLEN];
    unsigned p;
    if (ss.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
        p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        printf("listening on [%s]:%u\n", host, p);
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
        p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        printf("listening on %s:%u\n", host, p);
    }
    fflush(stdout);

    pthread_t at, ut;
    if (pthread_create(&at, NULL, accept_loop, (void *)(intptr_t)tfd) != 0 ||
        pthread_create(&ut, NULL, udp_loop, (void *)(intptr_t)ufd) != 0)
        osm_die("cannot start threads");
    pthread_t lt;
    if (use_lifeline && pthread_create(&lt, NULL, lifeline, NULL) != 0)
        osm_die("cannot start threads");
    int sig;
    sigwait(&set, &sig);
    shutdown(tfd, SHUT_RDWR);
    close(tfd);
    shutdown(ufd, SHUT_RDWR);
    close(ufd);
    printf("netpeer: stopped by signal %d\n", sig); /* stdout: a probe that started us has closed it */
    return 0;
}
