/*
 * preload.c - libiotrace.so, the recorder. `iotrace record` loads it into a
 * program with LD_PRELOAD and sets IOTRACE_DIR; without IOTRACE_DIR every
 * wrapper just calls the real function.
 *
 * Each wrapper calls the real function (dlsym(RTLD_NEXT)) between two
 * CLOCK_MONOTONIC reads and appends one trace row (trace.h) for the
 * process. Only descriptors this process opened through a wrapped open (or
 * inherited over fork from one that did) are recorded; calls on any other
 * descriptor (stdin/stdout, pipes, sockets, dup'd ones) pass through
 * unrecorded. For read/write/readv/writev the offset is the descriptor's
 * position before the call, read with the real lseek(fd, 0, SEEK_CUR)
 * outside the timed window (right with shared offsets after fork, O_APPEND
 * aside; -1 where the descriptor cannot seek).
 *
 * Rows go straight into a MAP_SHARED mapping of the process's file
 * IOTRACE_DIR/trace.<pid>.<n>, 1 MiB at a time, under one lock: they are in
 * the page cache as soon as they are written, so nothing is lost when the
 * process execs, calls _exit or is killed. No descriptor stays open (the
 * file is opened only to map the next chunk), so the program sees the same
 * descriptor numbers as without the recorder. The destructor cuts the file
 * to its length; a file that was not cut ends in NUL bytes, which the
 * merge ignores. A forked child starts its own file (pthread_atfork); an
 * exec'd image loads the library again and starts a new <n>.
 */
#undef _FORTIFY_SOURCE /* this file defines read, pread ... itself */
#include "recorder.h"
#include "trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define TLS __thread __attribute__((tls_model("initial-exec")))
#define FD_MAX 65536     /* descriptors at or above it are not recorded */
#define CHUNK (1u << 20) /* bytes of trace file mapped at a time */

static TLS int busy; /* this thread is in the recorder: wrappers pass through */
static TLS pid_t my_tid;
static TLS int64_t parent = -1; /* the MPI-IO row this thread is inside (MPI mode) */
static TLS uint64_t children;    /* POSIX rows written under it */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool on;     /* IOTRACE_DIR is set (MPI mode: and MPI_Init was recorded, MPI_Finalize not yet) */
static bool mpi_mode; /* IOTRACE_MPI is set: rec_mpi_start turns recording on */
static int64_t rank = -1;
static bool broken; /* the trace file could not be written: stop recording */
static char dir[PATH_MAX];
static char file[PATH_MAX + 64]; /* this process's file, "" until the first row */
static pid_t pid;
static uint64_t seq;
static char *map;          /* CHUNK bytes of the file from map_off */
static off_t map_off, pos; /* pos: where the next row goes */
static const char *fd_path[FD_MAX];
static char *arena; /* path strings, never freed */
static size_t arena_left;

/* ------------------------------------------------------- real functions */

static void *real(void **slot, const char *name)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        if (!p)
            abort(); /* libc without the function the program just called */
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    }
    return p;
}
#define REAL(fn) ((__typeof__(&fn))real(&real_##fn, #fn))

/* The fortified entry points programs built with _FORTIFY_SOURCE call;
 * recorded under the plain name. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

static void *real_open, *real_open64, *real_openat, *real_openat64, *real_creat, *real_creat64, *real_close,
    *real_read, *real_write, *real_pread, *real_pread64, *real_pwrite, *real_pwrite64, *real_readv,
    *real_writev, *real_lseek, *real_lseek64, *real_fsync, *real_fdatasync, *real_ftruncate,
    *real_ftruncate64, *real___open_2, *real___open64_2, *real___openat_2, *real___openat64_2,
    *real___read_chk, *real___pread_chk, *real___pread64_chk, *real_dup, *real_dup2, *real_dup3;

/* ------------------------------------------------------- the trace file */

static void warn(const char *what)
{
    const char *e = strerror(errno);
    struct iovec v[] = {{"libiotrace: ", 12}, {(void *)what, strlen(what)}, {(void *)file, strlen(file)},
                        {": ", 2}, {(void *)e, strlen(e)}, {"; recording stops\n", 18}};
    REAL(writev)(2, v, 6);
}

/* Makes room for `need` bytes at pos: the next chunk of the file mapped. */
static bool room(size_t need)
{
    if (broken)
        return false;
    if (map && pos + (off_t)need <= map_off + (off_t)CHUNK)
        return true;
    bool fresh = !file[0];
    int fd = -1;
    if (fresh) {
        for (int n = 0; fd < 0 && n < 1000; n++) {
            if (rank >= 0)
                snprintf(file, sizeof file, "%s/trace.r%lld.%d.%d", dir, (long long)rank, (int)pid, n);
            else
                snprintf(file, sizeof file, "%s/trace.%d.%d", dir, (int)pid, n);
            fd = REAL(open)(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 && errno != EEXIST)
                break;
        }
        pos = 0;
    } else {
        fd = REAL(open)(file, O_RDWR | O_CLOEXEC);
    }
    if (fd < 0) {
        warn("cannot open ");
        broken = true;
        return false;
    }
    if (map)
        munmap(map, CHUNK);
    map = NULL;
    map_off = pos & ~(off_t)(sysconf(_SC_PAGESIZE) - 1);
    /* Reserve the blocks, so a full disk is an error here, not a SIGBUS in the program. */
    int rc = fallocate(fd, 0, map_off, CHUNK);
    if (rc && (errno == EOPNOTSUPP || errno == ENOSYS))
        rc = REAL(ftruncate)(fd, map_off + CHUNK);
    void *m = rc ? MAP_FAILED : mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, map_off);
    if (m == MAP_FAILED) {
        warn("cannot extend ");
        REAL(close)(fd);
        broken = true;
        return false;
    }
    REAL(close)(fd);
    map = m;
    if (fresh)
        pos = trace_format_preamble(map, CHUNK);
    return true;
}

/* Cuts the file to what was written (at exit; recording may go on after). */
static void trim(void)
{
    if (!map)
        return;
    munmap(map, CHUNK);
    map = NULL;
    int fd = REAL(open)(file, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        REAL(ftruncate)(fd, pos);
        REAL(close)(fd);
    }
}

static void append(struct trace_rec *r, bool seq_taken)
{
    if (!room(TRACE_ROW_MAX))
        return;
    if (!seq_taken)
        r->seq = seq++;
    int n = trace_format_row(map + (pos - map_off), (size_t)(map_off + CHUNK - pos), r);
    if (n > 0)
        pos += n;
}

static const char *keep(const char *s)
{
    size_t n = strnlen(s, TRACE_PATH_MAX) + 1;
    if (n > arena_left) {
        size_t sz = 1 << 16;
        void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        arena = p, arena_left = sz;
    }
    char *d = arena;
    memcpy(d, s, n - 1);
    d[n - 1] = '\0';
    arena += n, arena_left -= n;
    return d;
}

/* ----------------------------------------------------- process lifetime */

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void)
{
    if (map)
        munmap(map, CHUNK); /* the parent's file: the child starts its own */
    map = NULL;
    file[0] = '\0';
    pos = 0, seq = 0;
    pid = getpid();
    my_tid = 0;
    pthread_mutex_unlock(&lock);
}

static void setup(void)
{
    const char *d = getenv("IOTRACE_DIR");
    if (!d || !*d || strlen(d) >= sizeof dir)
        return;
    strcpy(dir, d);
    pid = getpid();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    const char *m = getenv("IOTRACE_MPI");
    mpi_mode = m && *m;
    on = !mpi_mode;
}

__attribute__((constructor)) static void init(void) { pthread_once(&once, setup); }

__attribute__((destructor)) static void fini(void)
{
    busy++;
    pthread_mutex_lock(&lock);
    trim();
    pthread_mutex_unlock(&lock);
    busy--;
}

/* ------------------------------------------------------------ recording */

static const char *known(int fd)
{
    return fd >= 0 && fd < FD_MAX ? __atomic_load_n(&fd_path[fd], __ATOMIC_ACQUIRE) : NULL;
}

/* Added to this process's clock: rank x IOTRACE_TEST_SKEW_NS in MPI mode, so that the tests can give each
 * rank a clock of its own, as ranks on different hosts have, on one host. */
static uint64_t skew;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + skew;
}

/* Before the real call: whether to record it, and what is known before it. */
static bool begin(struct trace_rec *r)
{
    if (busy)
        return false;
    pthread_once(&once, setup);
    if (!on || broken)
        return false;
    const struct trace_call_info *ci = &trace_calls[r->call];
    r->file = -1;
    if (ci->kind != TK_OPEN && !(r->path = known((int)r->fd)))
        return false;
    busy = 1;
    int e = errno;
    if (ci->kind == TK_CLOSE) { /* forget it now: its number may be reused before we are back */
        pthread_mutex_lock(&lock);
        __atomic_store_n(&fd_path[r->fd], NULL, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&lock);
    }
    if (ci->kind == TK_OPEN || ci->kind == TK_CLOSE || ci->kind == TK_SYNC)
        r->offset = -1;
    else if ((ci->kind == TK_READ || ci->kind == TK_WRITE) && !ci->positioned)
        r->offset = REAL(lseek)((int)r->fd, 0, SEEK_CUR);
    errno = e;
    busy = 0;
    r->t_start = now();
    return true;
}

/* After the real call: the row, with errno as the real call left it. */
static void finish(struct trace_rec *r, int64_t ret)
{
    uint64_t t = now();
    int e = errno;
    busy = 1;
    r->t_end = t;
    r->ret = ret;
    r->err = ret == -1 ? e : 0;
    if (!my_tid)
        my_tid = gettid();
    r->tid = my_tid;
    r->parent = parent;
    r->args = "";
    pthread_mutex_lock(&lock);
    r->pid = pid;
    r->rank = rank;
    if (parent >= 0)
        children++;
    if (trace_calls[r->call].kind == TK_OPEN) {
        r->fd = ret;
        if (ret >= 0 && ret < FD_MAX)
            __atomic_store_n(&fd_path[ret], keep(r->path), __ATOMIC_RELEASE);
    }
    append(r, false);
    pthread_mutex_unlock(&lock);
    busy = 0;
    errno = e;
}

/* ------------------------------------------- the MPI recorder's entries */

bool rec_wanted(void)
{
    pthread_once(&once, setup);
    return dir[0] && mpi_mode && !broken;
}

const char *rec_dir(void) { return dir; }

void rec_mpi_rank(int64_t r)
{
    const char *k = getenv("IOTRACE_TEST_SKEW_NS");
    pthread_mutex_lock(&lock);
    rank = r;
    skew = k ? (uint64_t)r * strtoull(k, NULL, 10) : 0;
    pthread_mutex_unlock(&lock);
}

uint64_t rec_skew(void) { return skew; }

void rec_mpi_start(void)
{
    pthread_mutex_lock(&lock);
    on = true;
    pthread_mutex_unlock(&lock);
}

void rec_stop(void)
{
    busy++;
    pthread_mutex_lock(&lock);
    on = false;
    trim();
    pthread_mutex_unlock(&lock);
    busy--;
}

const char *rec_file(void) { return file; }

uint64_t rec_now(void) { return now(); }

uint64_t rec_take_seq(void)
{
    pthread_mutex_lock(&lock);
    uint64_t s = seq++;
    pthread_mutex_unlock(&lock);
    return s;
}

void rec_write(struct trace_rec *r)
{
    busy++;
    if (!my_tid)
        my_tid = gettid();
    r->tid = my_tid;
    pthread_mutex_lock(&lock);
    r->pid = pid;
    r->rank = rank;
    if (on)
        append(r, true);
    pthread_mutex_unlock(&lock);
    busy--;
}

void rec_hold(void) { busy++; }
void rec_release(void) { busy--; }

int64_t rec_enter(int64_t p)
{
    int64_t was = parent;
    parent = p;
    children = 0;
    return was;
}

uint64_t rec_children(void) { return children; }

void rec_leave(int64_t previous) { parent = previous; }

#define WRAP(call_, realcall, ...)                                                                       \
    do {                                                                                                 \
        struct trace_rec k = {.call = (call_), __VA_ARGS__};                                             \
        if (!begin(&k))                                                                                  \
            return realcall;                                                                             \
        __typeof__(realcall) ret_ = realcall;                                                            \
        finish(&k, (int64_t)ret_);                                                                       \
        return ret_;                                                                                     \
    } while (0)

/* A NULL path is the program's bug (EFAULT), not a reason to crash here. */
static const char *path_of(const char *p)
{
    __asm__("" : "+r"(p)); /* the prototypes say nonnull; do not trust them */
    return p ? p : "";
}

static int64_t iov_bytes(const struct iovec *iov, int n)
{
    int64_t sum = 0;
    if (iov && n > 0 && n <= IOV_MAX)
        for (int i = 0; i < n; i++)
            sum += (int64_t)iov[i].iov_len;
    return sum;
}

#define NEEDS_MODE(fl) (((fl) & O_CREAT) || ((fl) & O_TMPFILE) == O_TMPFILE)
/* open's third argument, present only when the flags need a mode */
#define MODE_ARG(fl_)                                                                                    \
    mode_t mode = 0;                                                                                     \
    if (NEEDS_MODE(fl_)) {                                                                               \
        va_list ap;                                                                                      \
        va_start(ap, fl_);                                                                               \
        mode = va_arg(ap, mode_t);                                                                       \
        va_end(ap);                                                                                      \
    }
#define OPEN_ROW(p_, fl_, m_) .fd = -1, .path = path_of(p_), .flags = (fl_), .mode = (m_)

/* ------------------------------------------------------------- wrappers */

int open(const char *path, int flags, ...)
{
    MODE_ARG(flags);
    WRAP(TC_OPEN, REAL(open)(path, flags, mode), OPEN_ROW(path, flags, mode));
}

int open64(const char *path, int flags, ...)
{
    MODE_ARG(flags);
    WRAP(TC_OPEN64, REAL(open64)(path, flags, mode), OPEN_ROW(path, flags, mode));
}

int openat(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags);
    WRAP(TC_OPENAT, REAL(openat)(dirfd, path, flags, mode), OPEN_ROW(path, flags, mode));
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags);
    WRAP(TC_OPENAT64, REAL(openat64)(dirfd, path, flags, mode), OPEN_ROW(path, flags, mode));
}

int __open_2(const char *path, int flags) { WRAP(TC_OPEN, REAL(__open_2)(path, flags), OPEN_ROW(path, flags, 0)); }

int __open64_2(const char *path, int flags)
{
    WRAP(TC_OPEN64, REAL(__open64_2)(path, flags), OPEN_ROW(path, flags, 0));
}

int __openat_2(int dirfd, const char *path, int flags)
{
    WRAP(TC_OPENAT, REAL(__openat_2)(dirfd, path, flags), OPEN_ROW(path, flags, 0));
}

int __openat64_2(int dirfd, const char *path, int flags)
{
    WRAP(TC_OPENAT64, REAL(__openat64_2)(dirfd, path, flags), OPEN_ROW(path, flags, 0));
}

int creat(const char *path, mode_t mode)
{
    WRAP(TC_CREAT, REAL(creat)(path, mode), OPEN_ROW(path, O_CREAT | O_WRONLY | O_TRUNC, mode));
}

int creat64(const char *path, mode_t mode)
{
    WRAP(TC_CREAT64, REAL(creat64)(path, mode), OPEN_ROW(path, O_CREAT | O_WRONLY | O_TRUNC, mode));
}

int close(int fd) { WRAP(TC_CLOSE, REAL(close)(fd), .fd = fd); }

ssize_t read(int fd, void *buf, size_t n) { WRAP(TC_READ, REAL(read)(fd, buf, n), .fd = fd, .bytes = (int64_t)n); }

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    WRAP(TC_READ, REAL(__read_chk)(fd, buf, n, buflen), .fd = fd, .bytes = (int64_t)n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    WRAP(TC_WRITE, REAL(write)(fd, buf, n), .fd = fd, .bytes = (int64_t)n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    WRAP(TC_PREAD, REAL(pread)(fd, buf, n, off), .fd = fd, .bytes = (int64_t)n, .offset = off);
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    WRAP(TC_PREAD, REAL(__pread_chk)(fd, buf, n, off, buflen), .fd = fd, .bytes = (int64_t)n, .offset = off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    WRAP(TC_PREAD64, REAL(pread64)(fd, buf, n, off), .fd = fd, .bytes = (int64_t)n, .offset = off);
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    WRAP(TC_PREAD64, REAL(__pread64_chk)(fd, buf, n, off, buflen), .fd = fd, .bytes = (int64_t)n, .offset = off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    WRAP(TC_PWRITE, REAL(pwrite)(fd, buf, n, off), .fd = fd, .bytes = (int64_t)n, .offset = off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    WRAP(TC_PWRITE64, REAL(pwrite64)(fd, buf, n, off), .fd = fd, .bytes = (int64_t)n, .offset = off);
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
    WRAP(TC_READV, REAL(readv)(fd, iov, n), .fd = fd, .bytes = iov_bytes(iov, n), .flags = n);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    WRAP(TC_WRITEV, REAL(writev)(fd, iov, n), .fd = fd, .bytes = iov_bytes(iov, n), .flags = n);
}

off_t lseek(int fd, off_t off, int whence)
{
    WRAP(TC_LSEEK, REAL(lseek)(fd, off, whence), .fd = fd, .offset = off, .flags = whence);
}

off64_t lseek64(int fd, off64_t off, int whence)
{
    WRAP(TC_LSEEK64, REAL(lseek64)(fd, off, whence), .fd = fd, .offset = off, .flags = whence);
}

int fsync(int fd) { WRAP(TC_FSYNC, REAL(fsync)(fd), .fd = fd); }

int fdatasync(int fd) { WRAP(TC_FDATASYNC, REAL(fdatasync)(fd), .fd = fd); }

int ftruncate(int fd, off_t len) { WRAP(TC_FTRUNCATE, REAL(ftruncate)(fd, len), .fd = fd, .offset = len); }

int ftruncate64(int fd, off64_t len)
{
    WRAP(TC_FTRUNCATE64, REAL(ftruncate64)(fd, len), .fd = fd, .offset = len);
}

/* dup, dup2, dup3: not rows of their own, but the new descriptor names the
 * same file as the old one, so calls on it are recorded against that file
 * (dd, shells and many tools move files onto 0, 1 and 2 this way). A new
 * descriptor of an unknown one is forgotten, as is what dup2 replaced. */
static int dup_track(int oldfd, int newfd)
{
    int e = errno;
    if (!busy && on && newfd >= 0 && newfd < FD_MAX) {
        pthread_mutex_lock(&lock);
        __atomic_store_n(&fd_path[newfd], known(oldfd), __ATOMIC_RELEASE);
        pthread_mutex_unlock(&lock);
    }
    errno = e;
    return newfd;
}

int dup(int fd)
{
    int r = REAL(dup)(fd);
    return r < 0 ? r : dup_track(fd, r);
}

int dup2(int fd, int to)
{
    int r = REAL(dup2)(fd, to);
    return r < 0 || r == fd ? r : dup_track(fd, r);
}

int dup3(int fd, int to, int flags)
{
    int r = REAL(dup3)(fd, to, flags);
    return r < 0 ? r : dup_track(fd, r);
}
