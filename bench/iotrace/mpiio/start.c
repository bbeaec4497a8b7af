/* start.c - the MPI-IO recorder's start and end (mpirec.h): MPI_Init
 * (the rank, its clock against rank 0's, the MPI_Init row), MPI_Finalize
 * (every rank's file sent to rank 0). */
#include "mpirec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYNC_ROUNDS 8
#define SEND_CHUNK (1 << 26) /* bytes of a trace file per message at MPI_Finalize */

bool active;
int world_rank = -1, world_size;
TLS int depth;
pthread_mutex_t maps = PTHREAD_MUTEX_INITIALIZER;
static bool made_dir; /* this rank made IOTRACE_DIR (a host that does not see the launcher's) */

/* ------------------------------------------------- start and finish */

/* Cristian's method against rank 0 (see the top of this file). */
static void clock_sync(MPI_Comm comm, int64_t *offset, int64_t *err)
{
    *offset = 0, *err = 0;
    if (world_rank == 0) {
        for (int r = 1; r < world_size; r++) {
            int64_t best_rtt = INT64_MAX, best_off = 0;
            for (int k = 0; k < SYNC_ROUNDS; k++) {
                uint64_t ta = rec_now(), tr;
                PMPI_Send(NULL, 0, MPI_BYTE, r, 1, comm);
                PMPI_Recv(&tr, 1, MPI_UINT64_T, r, 2, comm, MPI_STATUS_IGNORE);
                uint64_t tb = rec_now();
                int64_t rtt = (int64_t)(tb - ta);
                if (rtt < best_rtt)
                    best_rtt = rtt, best_off = (int64_t)tr - (int64_t)(ta + (tb - ta) / 2);
            }
            int64_t res[2] = {best_off, best_rtt / 2};
            PMPI_Send(res, 2, MPI_INT64_T, r, 3, comm);
        }
    } else {
        for (int k = 0; k < SYNC_ROUNDS; k++) {
            PMPI_Recv(NULL, 0, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE);
            uint64_t t = rec_now();
            PMPI_Send(&t, 1, MPI_UINT64_T, 0, 2, comm);
        }
        int64_t res[2];
        PMPI_Recv(res, 2, MPI_INT64_T, 0, 3, comm, MPI_STATUS_IGNORE);
        *offset = res[0], *err = res[1];
    }
}

static void mkdirs(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0700);
            *s = '/';
        }
    mkdir(p, 0700);
}

static void started(enum trace_call tc, uint64_t t0, uint64_t t1, int rc, int thread)
{
    if (rc != MPI_SUCCESS || !rec_wanted())
        return;
    depth++;
    rec_hold();
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    rec_mpi_rank(world_rank);
    t0 += rec_skew(), t1 += rec_skew(); /* read before the rank was known */
    struct stat sb;
    bool made = stat(rec_dir(), &sb) != 0; /* a host that does not see the launcher's directory */
    if (made)
        mkdirs(rec_dir());
    made_dir = made;
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int64_t off, err;
    clock_sync(comm, &off, &err);
    PMPI_Comm_free(&comm);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0, major = 0, minor = 0;
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    PMPI_Get_processor_name(host, &len);
    PMPI_Get_version(&major, &minor);
    rec_release();
    rec_mpi_start();
    active = true;
    struct args a = {0};
    a_int(&a, "size", world_size);
    a_str(&a, "host", host);
    a_str(&a, "library", lib);
    char v[16];
    snprintf(v, sizeof v, "%d.%d", major, minor);
    a_str(&a, "standard", v);
    if (thread >= 0)
        a_int(&a, "provided", thread);
    a_int(&a, "clock_offset_ns", off);
    a_int(&a, "clock_err_ns", err);
    a_int(&a, "made_dir", made);
    struct trace_rec r = {.call = tc, .t_start = t0, .t_end = t1, .fd = -1, .file = -1, .path = "", .offset = -1,
                          .ret = rc, .parent = -1, .args = a.s};
    r.seq = rec_take_seq();
    rec_write(&r);
    depth--;
}

int MPI_Init(int *argc, char ***argv)
{
    uint64_t t0 = rec_now();
    int rc = PMPI_Init(argc, argv);
    started(TC_MPI_INIT, t0, rec_now(), rc, -1);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    uint64_t t0 = rec_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    started(TC_MPI_INIT_THREAD, t0, rec_now(), rc, provided ? *provided : -1);
    return rc;
}

/* Rank 0 takes every rank's file (see the top of this file). */
static void gather(MPI_Comm comm)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", rec_file());
    if (world_rank != 0) {
        struct stat sb;
        long long size = path[0] && stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
        int plen = (int)strlen(path) + 1;
        PMPI_Send(&plen, 1, MPI_INT, 0, 11, comm);
        PMPI_Send(path, plen, MPI_CHAR, 0, 12, comm);
        PMPI_Send(&size, 1, MPI_LONG_LONG, 0, 13, comm);
        int need = 0;
        PMPI_Recv(&need, 1, MPI_INT, 0, 14, comm, MPI_STATUS_IGNORE);
        if (!need)
            return;
        FILE *f = fopen(path, "rbe");
        char *buf = malloc(SEND_CHUNK);
        for (long long sent = 0; sent < size;) {
            int n = (int)(size - sent < SEND_CHUNK ? size - sent : SEND_CHUNK);
            size_t got = f && buf ? fread(buf, 1, (size_t)n, f) : 0;
            if (got < (size_t)n && buf)
                memset(buf + got, 0, (size_t)n - got); /* NULs: the merge stops at the first */
            PMPI_Send(buf ? buf : "", buf ? n : 0, MPI_BYTE, 0, 15, comm);
            sent += n;
            if (!buf)
                break;
        }
        free(buf);
        if (f)
            fclose(f);
        unlink(path); /* rank 0 has it */
        if (made_dir)
            rmdir(rec_dir());
        return;
    }
    for (int r = 1; r < world_size; r++) {
        int plen = 0;
        long long size = -1;
        PMPI_Recv(&plen, 1, MPI_INT, r, 11, comm, MPI_STATUS_IGNORE);
        char *p = malloc((size_t)plen + 1);
        PMPI_Recv(p, plen, MPI_CHAR, r, 12, comm, MPI_STATUS_IGNORE);
        PMPI_Recv(&size, 1, MPI_LONG_LONG, r, 13, comm, MPI_STATUS_IGNORE);
        struct stat sb;
        int need = size > 0 && !(stat(p, &sb) == 0 && (long long)sb.st_size == size);
        PMPI_Send(&need, 1, MPI_INT, r, 14, comm);
        if (!need) {
            free(p);
            continue;
        }
        char out[PATH_MAX];
        snprintf(out, sizeof out, "%s/trace.r%d.from-host.%d", rec_dir(), r, (int)getpid());
        FILE *f = fopen(out, "wbex"); /* new, never through a link: x is O_EXCL */
        char *buf = malloc(SEND_CHUNK);
        for (long long got = 0; got < size;) {
            int n = (int)(size - got < SEND_CHUNK ? size - got : SEND_CHUNK);
            MPI_Status st;
            PMPI_Recv(buf, buf ? n : 0, MPI_BYTE, r, 15, comm, &st);
            if (!buf)
                break;
            if (f)
                fwrite(buf, 1, (size_t)n, f);
            got += n;
        }
        free(buf);
        if (f)
            fclose(f);
        free(p);
    }
}

int MPI_Finalize(void)
{
    if (active && !depth) {
        depth++;
        uint64_t t = rec_now();
        struct trace_rec r = {.call = TC_MPI_FINALIZE, .t_start = t, .t_end = t, .fd = -1, .file = -1, .path = "",
                              .offset = -1, .parent = -1, .args = ""};
        r.seq = rec_take_seq();
        rec_write(&r);
        active = false;
        rec_stop();
        rec_hold();
        MPI_Comm comm;
        PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
        gather(comm);
        PMPI_Comm_free(&comm);
        rec_release();
        depth--;
    }
    return PMPI_Finalize();
}
