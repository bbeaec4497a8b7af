/* net.c - see osmnet.h. */
#include "osmnet.h"
#include "osm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

int osm_net_parse(const char *hp, struct osm_addr *a, char *err, size_t errlen)
{
    char host[256];
    const char *port;
    memset(a, 0, sizeof *a);
    if (!hp || !*hp)
        return snprintf(err, errlen, "an empty address"), -1;
    if (hp[0] == '[') {
        const char *end = strchr(hp, ']');
        if (!end || end[1] != ':' || (size_t)(end - hp - 1) >= sizeof host)
            return snprintf(err, errlen, "'%s': expected [IPV6]:PORT", hp), -1;
        memcpy(host, hp + 1, (size_t)(end - hp - 1));
        host[end - hp - 1] = 0;
        port = end + 2;
    } else {
        const char *c = strrchr(hp, ':');
        if (!c || c == hp || (size_t)(c - hp) >= sizeof host)
            return snprintf(err, errlen, "'%s': expected HOST:PORT", hp), -1;
        memcpy(host, hp, (size_t)(c - hp));
        host[c - hp] = 0;
        port = c + 1;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 1 || p > 65535)
        return snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535", hp), -1;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
    int r = getaddrinfo(host, port, &hints, &res);
    if (r != 0)
        return snprintf(err, errlen, "'%s': cannot resolve %s: %s", hp, host, gai_strerror(r)), -1;
    memcpy(&a->ss, res->ai_addr, res->ai_addrlen);
    a->len = res->ai_addrlen;
    freeaddrinfo(res);
    snprintf(a->text, sizeof a->text, "%s", hp);
    return 0;
}

int osm_net_connect(const struct osm_addr *a, int type, int timeout_ms, char *err, size_t errlen)
{
    int fd = socket(a->ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return snprintf(err, errlen, "socket: %s", strerror(errno)), -1;
    if (connect(fd, (const struct sockaddr *)&a->ss, a->len) != 0 && errno != EINPROGRESS) {
        snprintf(err, errlen, "connecting to %s: %s", a->text, strerror(errno));
        close(fd);
        return -1;
    }
    struct pollfd p = { fd, POLLOUT, 0 };
    int r = poll(&p, 1, timeout_ms);
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (r == 1)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (r != 1 || soerr) {
        if (r == 0)
            snprintf(err, errlen, "connecting to %s: no answer within %d ms (host unreachable or filtered?)", a->text,
                     timeout_ms);
        else
            snprintf(err, errlen, "connecting to %s: %s", a->text, osm_net_why(soerr ? soerr : errno, timeout_ms));
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    osm_net_deadline(fd, timeout_ms);
    if (type == SOCK_STREAM) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

void osm_net_deadline(int fd, int timeout_ms)
{
    struct timeval tv = { (time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

const char *osm_net_why(int err, int timeout_ms)
{
    static char buf[160];
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINPROGRESS || err == ETIMEDOUT)
        snprintf(buf, sizeof buf, "no answer from the peer within %d ms (a silent or stalled peer; --timeout MS "
                 "gives it longer)", timeout_ms);
    else if (err == ECONNREFUSED)
        snprintf(buf, sizeof buf, "%s (is netpeer running there?)", strerror(err));
    else if (err == 0)
        snprintf(buf, sizeof buf, "the peer closed the connection");
    else
        snprintf(buf, sizeof buf, "%s", strerror(err));
    return buf;
}

int osm_net_hello(int fd, char mode)
{
    char h[8] = { 'O', 'S', 'M', 'P', mode, 0, 0, 0 };
    return osm_net_write_full(fd, h, sizeof h);
}

int osm_net_read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int osm_net_write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int osm_net_local_peer(struct osm_addr *a, pid_t *pid, unsigned delay_us, char *err, size_t errlen)
{
    char self[PATH_MAX], peer[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return snprintf(err, errlen, "cannot find my own binary"), -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    *slash = 0;
    snprintf(peer, sizeof peer, "%s/netpeer", self);
    int p[2];
    if (pipe(p) != 0)
        return snprintf(err, errlen, "pipe: %s", strerror(errno)), -1;
    *pid = fork();
    if (*pid < 0)
        return snprintf(err, errlen, "fork: %s", strerror(errno)), -1;
    if (*pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a netpeer never outlives the probe that started it */
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        char delay[16];
        snprintf(delay, sizeof delay, "%u", delay_us);
        execl(peer, "netpeer", "--bind", "127.0.0.1", "--port", "0", "--delay-us", delay, (char *)NULL);
        fprintf(stderr, "cannot run %s: %s\n", peer, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    char line[256] = { 0 };
    size_t got = 0;
    struct pollfd pf = { p[0], POLLIN, 0 };
    while (got < sizeof line - 1 && !strchr(line, '\n') && poll(&pf, 1, 5000) == 1) {
        ssize_t r = read(p[0], line + got, sizeof line - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(p[0]);
    char where[200];
    if (sscanf(line, "listening on %199s", where) != 1) {
        osm_net_stop_peer(*pid);
        return snprintf(err, errlen, "the local netpeer (%s) did not start", peer), -1;
    }
    return osm_net_parse(where, a, err, errlen);
}

void osm_net_stop_peer(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}
