/*
 * mpi_record.c - the MPI-IO recorder's wrappers of the MPI-IO routines. With
 * describe.c, complete.c and start.c (mpirec.h), posix/preload.c and
 * format/trace.c it makes libiotrace-mpi-<mpi>.so, one build per MPI implementation (their
 * ABIs differ), which `iotrace record --launcher` preloads into each rank.
 *
 * It defines the MPI_File_* routines, the completions of their requests
 * (MPI_Wait, MPI_Test and their all/any/some forms), MPI_Init,
 * MPI_Init_thread and MPI_Finalize, and calls the PMPI_ ones: the MPI
 * standard's profiling interface, so an application linked dynamically
 * against MPI is recorded without its source.
 *
 * Each MPI-IO call becomes one row of the process's trace file (the POSIX
 * recorder's: one lock, one seq), taken before the real call, so that the
 * POSIX calls the MPI library makes inside it (ROMIO's or OMPIO's reads and
 * writes, its aggregators' two-phase I/O) carry it as their parent. What
 * the recorder asks of MPI to describe a call (the file pointer, the byte
 * offset, a datatype's layout, a communicator's ranks, the hints) is asked
 * outside the timed window, with the POSIX recording held.
 *
 * Clocks: at MPI_Init, rank 0 exchanges a message with each rank eight
 * times and keeps the exchange with the least round trip (Cristian's
 * method): the rank's clock offset is its reading minus the midpoint of
 * rank 0's send and receive, known to within half that round trip. Each
 * rank's MPI_Init row holds clock_offset_ns and clock_err_ns, and the merge
 * moves its rows onto rank 0's clock.
 *
 * At MPI_Finalize each rank cuts its file and sends it to rank 0, which
 * writes it into IOTRACE_DIR on its host unless a file of that name and
 * size is already there (a file system both see); the ranks then remove
 * their own copies. Nothing is recorded after MPI_Finalize.
 */
#include "mpirec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --------------------------------------------------- one MPI-IO call */

/* Before the real call: whether to record, and what MPI says beforehand
 * (the file, the offset in etypes and in bytes, the datatype), all outside
 * the timed window. eoff: the explicit offset, or -1 for the file pointers. */
bool call_begin(struct call *c, enum trace_call tc, MPI_File fh, MPI_Datatype dt, long long count, MPI_Offset eoff)
{
    c->on = false;
    if (!active || depth)
        return false;
    depth++;
    rec_hold();
    const struct trace_call_info *ci = &trace_calls[tc];
    c->r = (struct trace_rec){.call = tc, .fd = -1, .file = -1, .path = "", .offset = -1, .parent = -1};
    c->a.n = 0, c->a.s[0] = '\0';
    c->dt = dt, c->count = count;
    pthread_mutex_lock(&maps);
    struct ent *f = fh != MPI_FILE_NULL ? t_find(&files, KEY(fh)) : NULL;
    if (f) {
        c->r.fd = f->id, c->r.path = f->path;
        if (ci->split == 2) { /* an _end: what its _begin named */
            c->dt = f->dt, c->count = f->count;
        }
    }
    int64_t tid = ci->split == 2 ? (f ? f->dtype : -1) : (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE)
                                                            ? type_id(dt)
                                                            : -1;
    if (f && ci->split == 1)
        f->dt = dt, f->count = count, f->dtype = tid;
    pthread_mutex_unlock(&maps);
    if (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) {
        int size = 0;
        if (c->dt != MPI_DATATYPE_NULL)
            PMPI_Type_size(c->dt, &size);
        c->r.bytes = (int64_t)size * c->count;
        a_int(&c->a, "count", c->count);
        if (tid >= 0)
            a_id(&c->a, "dtype", 't', tid);
        if (ci->split != 2) {
            MPI_Offset pos = eoff, byte = -1;
            if (ci->access == TA_INDIVIDUAL)
                PMPI_File_get_position(fh, &pos);
            else if (ci->access == TA_SHARED)
                PMPI_File_get_position_shared(fh, &pos);
            if (pos >= 0 && PMPI_File_get_byte_offset(fh, pos, &byte) == MPI_SUCCESS)
                c->r.offset = byte;
            a_int(&c->a, "eoff", pos);
        }
    }
    rec_release();
    c->r.seq = rec_take_seq();
    c->prev_parent = rec_enter((int64_t)c->r.seq);
    c->on = true;
    c->r.t_start = rec_now();
    return true;
}

/* After the real call: bytes moved from the status, the row written. */
void call_end(struct call *c, int rc, MPI_Status *st)
{
    if (!c->r.t_end) /* else taken by the caller right after the real call */
        c->r.t_end = rec_now();
    rec_leave(c->prev_parent);
    rec_hold();
    c->r.ret = rc;
    if (st && st != MPI_STATUS_IGNORE && rc == MPI_SUCCESS && c->dt != MPI_DATATYPE_NULL) {
        int got = 0, size = 0;
        PMPI_Type_size(c->dt, &size);
        if (PMPI_Get_count(st, c->dt, &got) == MPI_SUCCESS && got != MPI_UNDEFINED)
            a_int(&c->a, "moved", (long long)got * size);
    }
    c->r.args = c->a.s;
    rec_write(&c->r);
    rec_release();
    depth--;
}

/* A nonblocking call's request, remembered until a completion names it. */
int64_t remember(struct call *c, MPI_Request req)
{
    pthread_mutex_lock(&maps);
    struct ent *e = req != MPI_REQUEST_NULL ? t_add(&reqs, KEY(req)) : NULL;
    int64_t id = -1;
    if (e) {
        id = e->id, e->file = c->r.fd, e->path = c->r.path, e->dt = c->dt, e->count = c->count;
        e->call = c->r.call;
    }
    pthread_mutex_unlock(&maps);
    return id;
}

/* ---------------------------------------------------- data access */


/* explicit offsets */
int MPI_File_read_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_AT, fh, dt, count, off, st, PMPI_File_read_at(fh, off, buf, count, dt, st));
}
int MPI_File_read_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_AT_ALL, fh, dt, count, off, st, PMPI_File_read_at_all(fh, off, buf, count, dt, st));
}
int MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_AT, fh, dt, count, off, st, PMPI_File_write_at(fh, off, buf, count, dt, st));
}
int MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_AT_ALL, fh, dt, count, off, st,
             PMPI_File_write_at_all(fh, off, buf, count, dt, st));
}
int MPI_File_iread_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_AT, fh, dt, count, off, req, PMPI_File_iread_at(fh, off, buf, count, dt, req));
}
int MPI_File_iread_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_AT_ALL, fh, dt, count, off, req,
                PMPI_File_iread_at_all(fh, off, buf, count, dt, req));
}
int MPI_File_iwrite_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_AT, fh, dt, count, off, req, PMPI_File_iwrite_at(fh, off, buf, count, dt, req));
}
int MPI_File_iwrite_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt,
                           MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_AT_ALL, fh, dt, count, off, req,
                PMPI_File_iwrite_at_all(fh, off, buf, count, dt, req));
}
int MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_READ_AT_ALL_BEGIN, fh, dt, count, off, PMPI_File_read_at_all_begin(fh, off, buf, count, dt));
}
int MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_AT_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st, PMPI_File_read_at_all_end(fh, buf, st));
}
int MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_WRITE_AT_ALL_BEGIN, fh, dt, count, off,
          PMPI_File_write_at_all_begin(fh, off, buf, count, dt));
}
int MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_AT_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st,
             PMPI_File_write_at_all_end(fh, buf, st));
}

/* individual file pointers */
int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ, fh, dt, count, -1, st, PMPI_File_read(fh, buf, count, dt, st));
}
int MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ALL, fh, dt, count, -1, st, PMPI_File_read_all(fh, buf, count, dt, st));
}
int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE, fh, dt, count, -1, st, PMPI_File_write(fh, buf, count, dt, st));
}
int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ALL, fh, dt, count, -1, st, PMPI_File_write_all(fh, buf, count, dt, st));
}
int MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD, fh, dt, count, -1, req, PMPI_File_iread(fh, buf, count, dt, req));
}
int MPI_File_iread_all(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_ALL, fh, dt, count, -1, req, PMPI_File_iread_all(fh, buf, count, dt, req));
}
int MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE, fh, dt, count, -1, req, PMPI_File_iwrite(fh, buf, count, dt, req));
}
int MPI_File_iwrite_all(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_ALL, fh, dt, count, -1, req, PMPI_File_iwrite_all(fh, buf, count, dt, req));
}
int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_READ_ALL_BEGIN, fh, dt, count, -1, PMPI_File_read_all_begin(fh, buf, count, dt));
}
int MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st, PMPI_File_read_all_end(fh, buf, st));
}
int MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_WRITE_ALL_BEGIN, fh, dt, count, -1, PMPI_File_write_all_begin(fh, buf, count, dt));
}
int MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st, PMPI_File_write_all_end(fh, buf, st));
}

/* the shared file pointer */
int MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_SHARED, fh, dt, count, -1, st, PMPI_File_read_shared(fh, buf, count, dt, st));
}
int MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_SHARED, fh, dt, count, -1, st, PMPI_File_write_shared(fh, buf, count, dt, st));
}
int MPI_File_iread_shared(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_SHARED, fh, dt, count, -1, req, PMPI_File_iread_shared(fh, buf, count, dt, req));
}
int MPI_File_iwrite_shared(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_SHARED, fh, dt, count, -1, req,
                PMPI_File_iwrite_shared(fh, buf, count, dt, req));
}
int MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ORDERED, fh, dt, count, -1, st, PMPI_File_read_ordered(fh, buf, count, dt, st));
}
int MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ORDERED, fh, dt, count, -1, st, PMPI_File_write_ordered(fh, buf, count, dt, st));
}
int MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_READ_ORDERED_BEGIN, fh, dt, count, -1, PMPI_File_read_ordered_begin(fh, buf, count, dt));
}
int MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ORDERED_END, fh, MPI_DATATYPE_NULL, 0, -1, st,
             PMPI_File_read_ordered_end(fh, buf, st));
}
int MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_WRITE_ORDERED_BEGIN, fh, dt, count, -1, PMPI_File_write_ordered_begin(fh, buf, count, dt));
}
int MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ORDERED_END, fh, MPI_DATATYPE_NULL, 0, -1, st,
             PMPI_File_write_ordered_end(fh, buf, st));
}

/* ------------------------------------------- files and their views */

int MPI_File_open(MPI_Comm comm, const char *name, int amode, MPI_Info info, MPI_File *fh)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_OPEN, MPI_FILE_NULL, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_open(comm, name, amode, info, fh);
    rec_hold(); /* the communicator's row before the open's: a replay makes it first */
    pthread_mutex_lock(&maps);
    int64_t cid = comm_id(comm);
    pthread_mutex_unlock(&maps);
    rec_release();
    c.r.t_start = rec_now();
    int rc = PMPI_File_open(comm, name, amode, info, fh);
    c.r.t_end = rec_now();
    rec_hold();
    pthread_mutex_lock(&maps);
    struct ent *f = rc == MPI_SUCCESS ? t_add(&files, KEY(*fh)) : NULL;
    c.r.path = keep(name);
    if (f)
        f->path = c.r.path, f->dt = MPI_DATATYPE_NULL, f->dtype = -1, c.r.fd = f->id;
    pthread_mutex_unlock(&maps);
    rec_release();
    c.r.flags = amode;
    a_id(&c.a, "comm", 'c', cid);
    a_info(&c.a, "info", info);
    if (f) { /* the hints in force: what the user asked for and the implementation's own */
        MPI_Info used;
        MPI_Offset sz = -1;
        rec_hold();
        if (PMPI_File_get_size(*fh, &sz) == MPI_SUCCESS) /* what a replay must find there */
            a_int(&c.a, "size_at_open", sz);
        if (PMPI_File_get_info(*fh, &used) == MPI_SUCCESS) {
            a_info(&c.a, "hints", used);
            PMPI_Info_free(&used);
        }
        rec_release();
    }
    call_end(&c, rc, NULL);
    return rc;
}

int MPI_File_close(MPI_File *fh)
{
    MPI_File was = fh ? *fh : MPI_FILE_NULL;
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_CLOSE, was, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_close(fh);
    int rc = PMPI_File_close(fh);
    call_end(&c, rc, NULL);
    if (rc == MPI_SUCCESS) {
        pthread_mutex_lock(&maps);
        t_del(&files, KEY(was)); /* the path stays: rows written keep pointing at it */
        pthread_mutex_unlock(&maps);
    }
    return rc;
}

int MPI_File_delete(const char *name, MPI_Info info)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_DELETE, MPI_FILE_NULL, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_delete(name, info);
    c.r.path = keep(name);
    a_info(&c.a, "info", info);
    int rc = PMPI_File_delete(name, info);
    call_end(&c, rc, NULL);
    return rc;
}

#define CONTROL(tc, fh, setup, realcall)                                                                 \
    struct call c;                                                                                       \
    if (!call_begin(&c, tc, fh, MPI_DATATYPE_NULL, 0, -1))                                               \
        return realcall;                                                                                 \
    setup;                                                                                               \
    int rc = realcall;                                                                                   \
    call_end(&c, rc, NULL);                                                                              \
    return rc

int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    CONTROL(TC_MPI_FILE_SET_SIZE, fh, c.r.offset = size, PMPI_File_set_size(fh, size));
}
int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    CONTROL(TC_MPI_FILE_PREALLOCATE, fh, c.r.offset = size, PMPI_File_preallocate(fh, size));
}
int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_GET_SIZE, fh, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_get_size(fh, size);
    int rc = PMPI_File_get_size(fh, size);
    if (rc == MPI_SUCCESS)
        a_int(&c.a, "size", *size);
    call_end(&c, rc, NULL);
    return rc;
}
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep,
                      MPI_Info info)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_SET_VIEW, fh, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    rec_hold();
    pthread_mutex_lock(&maps);
    int64_t et = type_id(etype), ft = type_id(filetype);
    pthread_mutex_unlock(&maps);
    rec_release();
    a_int(&c.a, "disp", disp);
    a_id(&c.a, "etype", 't', et);
    a_id(&c.a, "ftype", 't', ft);
    a_str(&c.a, "datarep", datarep ? datarep : "");
    a_info(&c.a, "info", info);
    c.r.offset = disp;
    c.r.t_start = rec_now();
    int rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    call_end(&c, rc, NULL);
    return rc;
}
int MPI_File_seek(MPI_File fh, MPI_Offset off, int whence)
{
    CONTROL(TC_MPI_FILE_SEEK, fh, (c.r.flags = whence, a_int(&c.a, "eoff", off)), PMPI_File_seek(fh, off, whence));
}
int MPI_File_seek_shared(MPI_File fh, MPI_Offset off, int whence)
{
    CONTROL(TC_MPI_FILE_SEEK_SHARED, fh, (c.r.flags = whence, a_int(&c.a, "eoff", off)),
            PMPI_File_seek_shared(fh, off, whence));
}
int MPI_File_sync(MPI_File fh) { CONTROL(TC_MPI_FILE_SYNC, fh, (void)0, PMPI_File_sync(fh)); }
int MPI_File_set_atomicity(MPI_File fh, int flag)
{
    CONTROL(TC_MPI_FILE_SET_ATOMICITY, fh, a_int(&c.a, "flag", flag), PMPI_File_set_atomicity(fh, flag));
}
int MPI_File_set_info(MPI_File fh, MPI_Info info)
{
    CONTROL(TC_MPI_FILE_SET_INFO, fh, a_info(&c.a, "info", info), PMPI_File_set_info(fh, info));
}

/* A freed datatype or communicator: its handle may come back as another. */
int MPI_Type_free(MPI_Datatype *dt)
{
    if (dt && active) {
        pthread_mutex_lock(&maps);
        t_del(&types, KEY(*dt));
        pthread_mutex_unlock(&maps);
    }
    return PMPI_Type_free(dt);
}

int MPI_Comm_free(MPI_Comm *comm)
{
    if (comm && active) {
        pthread_mutex_lock(&maps);
        t_del(&comms, KEY(*comm));
        pthread_mutex_unlock(&maps);
    }
    return PMPI_Comm_free(comm);
}
