/* apmt's PMPI tracing library: the Fortran bindings (mpif.h, use mpi, use mpi_f08).
 *
 * Fortran programs never reach the C wrappers: the MPI library's Fortran bindings call the C
 * PMPI_ functions directly (Open MPI's mpi_send_ is an alias of its ompi_send_f, which calls
 * PMPI_Send). So the Fortran symbols are wrapped too, in every spelling a Fortran compiler
 * may produce (mpi_send, mpi_send_, mpi_send__, MPI_SEND), plus the mpi_f08 ones
 * (mpi_send_f08_).
 *
 * Each wrapper calls the library's Fortran profiling entry (pmpi_send_, pmpi_send_f08_),
 * which every MPI library exports as the standard's Fortran profiling interface, and which
 * does all the Fortran conversions (handles, MPI_IN_PLACE, MPI_BOTTOM, statuses, request
 * arrays, 1-based indices) exactly as the unwrapped call would. The wrapper itself only reads
 * the integer arguments it counts and converts the handles it needs with PMPI_*_f2c.
 *
 * Collectives are wrapped blocking and non-blocking (mpi_bcast_ and mpi_ibcast_, ...): a
 * non-blocking one takes the blocking one's arguments with a request before ierr, and is
 * counted as in wrap_c.c (bytes and the time of the call that starts it). So are the
 * neighborhood collectives, and the one-sided calls with their request-based forms (mpi_put_
 * and mpi_rput_, the request likewise before ierr).
 *
 * Persistent requests are INTEGER handles here: the library's pmpi_send_init_ creates the C
 * request and returns its Fortran handle, which PMPI_Request_f2c turns back into the C handle
 * that the table of persistent requests is keyed by (apmt_pmpi.h), as are the handles that
 * mpi_start_ and mpi_startall_ start; mpi_request_free_ converts its handle before the call,
 * which sets it to MPI_REQUEST_NULL. The C and Fortran calls so share one table.
 *
 * mpi_f08: Open MPI 4.1 passes TYPE(MPI_Comm), TYPE(MPI_Request) and the other handle types
 * by reference as a struct holding one INTEGER, TYPE(MPI_Status) with the layout of an
 * INTEGER status array, choice buffers as plain addresses, and ierror as an optional argument
 * (a null pointer when absent): so an f08 entry has the same C signature as the mpif.h one.
 * The pmpi_*_f08_ entries are weak references: they are only called from mpi_*_f08_, which
 * only a program linked with the f08 library calls.
 */
#include "apmt_pmpi.h"

#include <stdio.h>
#include <stdlib.h>

#define WEAK __attribute__((weak))
#define TRACED(ierr) (*(ierr) == MPI_SUCCESS && apmt_tracing)

typedef MPI_Fint F; /* INTEGER, handles and LOGICAL alike */

/* Room for a Fortran status (MPI_STATUS_SIZE integers) whatever the library's size. */
#define F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(F) + 8)

/* An f08 call may omit ierror: use a local one, to tell whether the call succeeded. */
#define OPTIONAL_IERROR(ierr)                                                                \
    F own_ierror = MPI_SUCCESS;                                                              \
    if (!(ierr))                                                                             \
    (ierr) = &own_ierror

/* Fortran's MPI_IN_PLACE is a variable whose address is the sentinel; Open MPI names it
 * mpi_fortran_in_place_ (in every spelling) for mpif.h, use mpi and use mpi_f08 alike. */
extern F mpi_fortran_in_place WEAK, mpi_fortran_in_place_ WEAK, mpi_fortran_in_place__ WEAK,
    MPI_FORTRAN_IN_PLACE WEAK;

static int in_place(const void *buf)
{
    return buf != NULL
           && (buf == &mpi_fortran_in_place || buf == &mpi_fortran_in_place_
               || buf == &mpi_fortran_in_place__ || buf == &MPI_FORTRAN_IN_PLACE);
}

/* The C view of a Fortran status, for the source and size of what arrived. */
static MPI_Status c_status(const F *status)
{
    MPI_Status converted;
    PMPI_Status_f2c(status, &converted);
    return converted;
}

static void missing(const char *name)
{
    fprintf(stderr, "apmt-pmpi: the MPI library has no %s\n", name);
    abort();
}

#define NEED(entry) ((entry) ? (entry) : (missing(#entry), (entry)))

/* Define the Fortran entries of one MPI function `lower` (upper case: UPPER) with parameters
 * PARAMS: each sets `pmpi` to the profiling entry of its binding and runs CALL. */
#define ENTRIES(lower, UPPER, type, PARAMS, CALL)                                            \
    extern type pmpi_##lower##_ WEAK, pmpi_##lower##_f08_ WEAK;                              \
    void mpi_##lower(PARAMS);                                                                \
    void mpi_##lower##_(PARAMS);                                                             \
    void mpi_##lower##__(PARAMS);                                                            \
    void MPI_##UPPER(PARAMS);                                                                \
    void mpi_##lower##_f08_(PARAMS);                                                         \
    void mpi_##lower(PARAMS)                                                                 \
    {                                                                                        \
        type *pmpi = NEED(pmpi_##lower##_);                                                  \
        CALL;                                                                                \
    }                                                                                        \
    void mpi_##lower##_(PARAMS)                                                              \
    {                                                                                        \
        type *pmpi = NEED(pmpi_##lower##_);                                                  \
        CALL;                                                                                \
    }                                                                                        \
    void mpi_##lower##__(PARAMS)                                                             \
    {                                                                                        \
        type *pmpi = NEED(pmpi_##lower##_);                                                  \
        CALL;                                                                                \
    }                                                                                        \
    void MPI_##UPPER(PARAMS)                                                                 \
    {                                                                                        \
        type *pmpi = NEED(pmpi_##lower##_);                                                  \
        CALL;                                                                                \
    }                                                                                        \
    void mpi_##lower##_f08_(PARAMS)                                                          \
    {                                                                                        \
        type *pmpi = NEED(pmpi_##lower##_f08_);                                              \
        CALL;                                                                                \
    }

/* ---- start and finish -------------------------------------------------------------------- */

#define INIT_PARAMS F *ierr
typedef void init_fn(INIT_PARAMS);

static void f_init(init_fn *pmpi, INIT_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    pmpi(ierr);
    if (*ierr == MPI_SUCCESS)
        apmt_start(MPI_THREAD_SINGLE);
}

static void f_finalize(init_fn *pmpi, INIT_PARAMS)
{
    apmt_finish();
    pmpi(ierr);
}

ENTRIES(init, INIT, init_fn, INIT_PARAMS, f_init(pmpi, ierr))
ENTRIES(finalize, FINALIZE, init_fn, INIT_PARAMS, f_finalize(pmpi, ierr))

#define INIT_THREAD_PARAMS const F *required, F *provided, F *ierr
typedef void init_thread_fn(INIT_THREAD_PARAMS);

static void f_init_thread(init_thread_fn *pmpi, INIT_THREAD_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    pmpi(required, provided, ierr);
    if (*ierr == MPI_SUCCESS)
        apmt_start(*provided);
}

ENTRIES(init_thread, INIT_THREAD, init_thread_fn, INIT_THREAD_PARAMS,
        f_init_thread(pmpi, required, provided, ierr))

/* ---- sends (bytes and peers as in wrap_c.c) ---------------------------------------------- */

#define SEND_PARAMS                                                                          \
    const void *buf, const F *count, const F *type, const F *dest, const F *tag,            \
        const F *comm, F *ierr
#define SEND_ARGS buf, count, type, dest, tag, comm, ierr
typedef void send_fn(SEND_PARAMS);

static void f_send(send_fn *pmpi, enum apmt_op op, SEND_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    double start = apmt_now();
    pmpi(SEND_ARGS);
    if (TRACED(ierr))
        apmt_p2p(op, PMPI_Comm_f2c(*comm), *dest, *count, PMPI_Type_f2c(*type), start);
}

ENTRIES(send, SEND, send_fn, SEND_PARAMS, f_send(pmpi, OP_Send, SEND_ARGS))
ENTRIES(ssend, SSEND, send_fn, SEND_PARAMS, f_send(pmpi, OP_Ssend, SEND_ARGS))
ENTRIES(bsend, BSEND, send_fn, SEND_PARAMS, f_send(pmpi, OP_Bsend, SEND_ARGS))
ENTRIES(rsend, RSEND, send_fn, SEND_PARAMS, f_send(pmpi, OP_Rsend, SEND_ARGS))

#define ISEND_PARAMS                                                                         \
    const void *buf, const F *count, const F *type, const F *dest, const F *tag,            \
        const F *comm, F *request, F *ierr
#define ISEND_ARGS buf, count, type, dest, tag, comm, request, ierr
typedef void isend_fn(ISEND_PARAMS);

static void f_isend(isend_fn *pmpi, enum apmt_op op, ISEND_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    double start = apmt_now();
    pmpi(ISEND_ARGS);
    if (TRACED(ierr))
        apmt_p2p(op, PMPI_Comm_f2c(*comm), *dest, *count, PMPI_Type_f2c(*type), start);
}

ENTRIES(isend, ISEND, isend_fn, ISEND_PARAMS, f_isend(pmpi, OP_Isend, ISEND_ARGS))
ENTRIES(issend, ISSEND, isend_fn, ISEND_PARAMS, f_isend(pmpi, OP_Issend, ISEND_ARGS))
ENTRIES(ibsend, IBSEND, isend_fn, ISEND_PARAMS, f_isend(pmpi, OP_Ibsend, ISEND_ARGS))
ENTRIES(irsend, IRSEND, isend_fn, ISEND_PARAMS, f_isend(pmpi, OP_Irsend, ISEND_ARGS))
/* MPI_Irecv has the same Fortran signature, with the source in place of dest */
ENTRIES(irecv, IRECV, isend_fn, ISEND_PARAMS, f_isend(pmpi, OP_Irecv, ISEND_ARGS))

#define SENDRECV_PARAMS                                                                      \
    const void *sendbuf, const F *sendcount, const F *sendtype, const F *dest,              \
        const F *sendtag, void *recvbuf, const F *recvcount, const F *recvtype,              \
        const F *source, const F *recvtag, const F *comm, F *status, F *ierr
#define SENDRECV_ARGS                                                                        \
    sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,      \
        recvtag, comm, status, ierr
typedef void sendrecv_fn(SENDRECV_PARAMS);

static void f_sendrecv(sendrecv_fn *pmpi, SENDRECV_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    double start = apmt_now();
    pmpi(SENDRECV_ARGS);
    if (TRACED(ierr))
        apmt_p2p(OP_Sendrecv, PMPI_Comm_f2c(*comm), *dest, *sendcount,
                 PMPI_Type_f2c(*sendtype), start);
}

ENTRIES(sendrecv, SENDRECV, sendrecv_fn, SENDRECV_PARAMS, f_sendrecv(pmpi, SENDRECV_ARGS))

#define SENDRECV_REPLACE_PARAMS                                                              \
    void *buf, const F *count, const F *type, const F *dest, const F *sendtag,              \
        const F *source, const F *recvtag, const F *comm, F *status, F *ierr
#define SENDRECV_REPLACE_ARGS buf, count, type, dest, sendtag, source, recvtag, comm, status, ierr
typedef void sendrecv_replace_fn(SENDRECV_REPLACE_PARAMS);

static void f_sendrecv_replace(sendrecv_replace_fn *pmpi, SENDRECV_REPLACE_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    double start = apmt_now();
    pmpi(SENDRECV_REPLACE_ARGS);
    if (TRACED(ierr))
        apmt_p2p(OP_Sendrecv_replace, PMPI_Comm_f2c(*comm), *dest, *count,
                 PMPI_Type_f2c(*type), start);
}

ENTRIES(sendrecv_replace, SENDRECV_REPLACE, sendrecv_replace_fn, SENDRECV_REPLACE_PARAMS,
        f_sendrecv_replace(pmpi, SENDRECV_REPLACE_ARGS))

/* ---- persistent requests: counted when started (apmt_pmpi.h) ---------------------------- */

/* The *_init calls have MPI_Isend's parameters (MPI_Recv_init the source in place of dest). */
static void f_send_init(isend_fn *pmpi, enum apmt_op op, ISEND_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    pmpi(ISEND_ARGS);
    if (TRACED(ierr))
        apmt_persistent(op, PMPI_Request_f2c(*request), PMPI_Comm_f2c(*comm), *dest, *count,
                        PMPI_Type_f2c(*type));
}

ENTRIES(send_init, SEND_INIT, isend_fn, ISEND_PARAMS,
        f_send_init(pmpi, OP_Send_init, ISEND_ARGS))
ENTRIES(ssend_init, SSEND_INIT, isend_fn, ISEND_PARAMS,
        f_send_init(pmpi, OP_Ssend_init, ISEND_ARGS))
ENTRIES(bsend_init, BSEND_INIT, isend_fn, ISEND_PARAMS,
        f_send_init(pmpi, OP_Bsend_init, ISEND_ARGS))
ENTRIES(rsend_init, RSEND_INIT, isend_fn, ISEND_PARAMS,
        f_send_init(pmpi, OP_Rsend_init, ISEND_ARGS))
ENTRIES(recv_init, RECV_INIT, isend_fn, ISEND_PARAMS,
        f_send_init(pmpi, OP_Recv_init, ISEND_ARGS))

static MPI_Request f_request(const void *requests, int i)
{
    return PMPI_Request_f2c(((const F *)requests)[i]);
}

#define START_PARAMS F *request, F *ierr
typedef void start_fn(START_PARAMS);

static void f_start(start_fn *pmpi, START_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    double start = apmt_now();
    pmpi(request, ierr);
    if (TRACED(ierr))
        apmt_started(OP_Start, 1, request, f_request, start);
}

ENTRIES(start, START, start_fn, START_PARAMS, f_start(pmpi, request, ierr))

#define STARTALL_PARAMS const F *count, F *requests, F *ierr
typedef void startall_fn(STARTALL_PARAMS);

static void f_startall(startall_fn *pmpi, STARTALL_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    double start = apmt_now();
    pmpi(count, requests, ierr);
    if (TRACED(ierr))
        apmt_started(OP_Startall, *count, requests, f_request, start);
}

ENTRIES(startall, STARTALL, startall_fn, STARTALL_PARAMS, f_startall(pmpi, count, requests, ierr))

static void f_request_free(start_fn *pmpi, START_PARAMS)
{
    OPTIONAL_IERROR(ierr);
    MPI_Request freed = apmt_tracing ? PMPI_Request_f2c(*request) : MPI_REQUEST_NULL;
    pmpi(request, ierr);
    if (TRACED(ierr))
        apmt_request_freed(freed);
}

ENTRIES(request_free, REQUEST_FREE, start_fn, START_PARAMS, f_request_free(pmpi, request, ierr))

/* ---- receives and probes ----------------------------------------------------------------- */

#define RECV_PARAMS                                                                          \
    void *buf, const F *count, const F *type, const F *source, const F *tag, const F *comm, \
        F *status, F *ierr
#define RECV_ARGS buf, count, type, source, tag, comm, status, ierr
typedef void recv_fn(RECV_PARAMS);

static void f_recv(recv_fn *pmpi, RECV_PARAMS)
{
    F own[F_STATUS_SIZE]; /* the status tells the source and size even if the caller ignores
                             it (Fortran's MPI_STATUS_IGNORE is MPI_F_STATUS_IGNORE in C) */
    OPTIONAL_IERROR(ierr);
    if (status == MPI_F_STATUS_IGNORE)
        status = own;
    double start = apmt_now();
    pmpi(RECV_ARGS);
    if (TRACED(ierr)) {
        MPI_Status received = c_status(status);
        apmt_received(OP_Recv, PMPI_Comm_f2c(*comm), *source, &received, *count,
                      PMPI_Type_f2c(*type), start);
    }
}

ENTRIES(recv, RECV, recv_fn, RECV_PARAMS, f_recv(pmpi, RECV_ARGS))

#define PROBE_PARAMS const F *source, const F *tag, const F *comm, F *status, F *ierr
typedef void probe_fn(PROBE_PARAMS);

static void f_probe(probe_fn *pmpi, PROBE_PARAMS)
{
    F own[F_STATUS_SIZE];
    OPTIONAL_IERROR(ierr);
    if (status == MPI_F_STATUS_IGNORE)
        status = own;
    double start = apmt_now();
    pmpi(source, tag, comm, status, ierr);
    if (TRACED(ierr)) {
        MPI_Status found = c_status(status);
        apmt_received(OP_Probe, PMPI_Comm_f2c(*comm), *source, &found, 0, MPI_DATATYPE_NULL,
                      start);
    }
}

ENTRIES(probe, PROBE, probe_fn, PROBE_PARAMS, f_probe(pmpi, source, tag, comm, status, ierr))

#define IPROBE_PARAMS const F *source, const F *tag, const F *comm, F *flag, F *status, F *ierr
typedef void iprobe_fn(IPROBE_PARAMS);

static void f_iprobe(iprobe_fn *pmpi, IPROBE_PARAMS)
{
    F own[F_STATUS_SIZE];
    OPTIONAL_IERROR(ierr);
    if (status == MPI_F_STATUS_IGNORE)
        status = own;
    double start = apmt_now();
    pmpi(source, tag, comm, flag, status, ierr);
    if (TRACED(ierr)) {
        MPI_Status found = c_status(status);
        apmt_received(OP_Iprobe, PMPI_Comm_f2c(*comm), *source, *flag ? &found : NULL, 0,
                      MPI_DATATYPE_NULL, start);
    }
}

ENTRIES(iprobe, IPROBE, iprobe_fn, IPROBE_PARAMS,
        f_iprobe(pmpi, source, tag, comm, flag, status, ierr))

/* ---- waits and tests: calls and time ----------------------------------------------------- */

/* The call, timed and counted whether or not it succeeded (nothing else is looked at). */
#define COUNTED(op, call)                                                                    \
    do {                                                                                     \
        double start = apmt_now();                                                           \
        call;                                                                                \
        apmt_record(op, PEER_NONE, 0, start);                                                \
    } while (0)

#define WAIT_PARAMS F *request, F *status, F *ierr
typedef void wait_fn(WAIT_PARAMS);
ENTRIES(wait, WAIT, wait_fn, WAIT_PARAMS, COUNTED(OP_Wait, pmpi(request, status, ierr)))

#define WAITALL_PARAMS const F *count, F *requests, F *statuses, F *ierr
typedef void waitall_fn(WAITALL_PARAMS);
ENTRIES(waitall, WAITALL, waitall_fn, WAITALL_PARAMS,
        COUNTED(OP_Waitall, pmpi(count, requests, statuses, ierr)))

#define WAITANY_PARAMS const F *count, F *requests, F *index, F *status, F *ierr
typedef void waitany_fn(WAITANY_PARAMS);
ENTRIES(waitany, WAITANY, waitany_fn, WAITANY_PARAMS,
        COUNTED(OP_Waitany, pmpi(count, requests, index, status, ierr)))

#define SOME_PARAMS const F *incount, F *requests, F *outcount, F *indices, F *statuses, F *ierr
typedef void some_fn(SOME_PARAMS);
ENTRIES(waitsome, WAITSOME, some_fn, SOME_PARAMS,
        COUNTED(OP_Waitsome, pmpi(incount, requests, outcount, indices, statuses, ierr)))
ENTRIES(testsome, TESTSOME, some_fn, SOME_PARAMS,
        COUNTED(OP_Testsome, pmpi(incount, requests, outcount, indices, statuses, ierr)))

#define TEST_PARAMS F *request, F *flag, F *status, F *ierr
typedef void test_fn(TEST_PARAMS);
ENTRIES(test, TEST, test_fn, TEST_PARAMS, COUNTED(OP_Test, pmpi(request, flag, status, ierr)))

#define TESTALL_PARAMS const F *count, F *requests, F *flag, F *statuses, F *ierr
typedef void testall_fn(TESTALL_PARAMS);
ENTRIES(testall, TESTALL, testall_fn, TESTALL_PARAMS,
        COUNTED(OP_Testall, pmpi(count, requests, flag, statuses, ierr)))

#define TESTANY_PARAMS const F *count, F *requests, F *index, F *flag, F *status, F *ierr
typedef void testany_fn(TESTANY_PARAMS);
ENTRIES(testany, TESTANY, testany_fn, TESTANY_PARAMS,
        COUNTED(OP_Testany, pmpi(count, requests, index, flag, status, ierr)))

/* ---- collectives, blocking and non-blocking (bytes: see collectives.c) ------------------- */

/* Run CALL and, when it succeeded, COUNT it, with `operation` the operation it counts. */
#define TRACED_CALL(which, call, count)                                                      \
    do {                                                                                     \
        OPTIONAL_IERROR(ierr);                                                               \
        double start = apmt_now();                                                           \
        call;                                                                                \
        if (TRACED(ierr)) {                                                                  \
            enum apmt_op operation = which;                                                  \
            count;                                                                           \
        }                                                                                    \
    } while (0)

/* A blocking call's parameters: its HEAD, then ierr; its form with a request's (non-blocking
 * collective, request-based one-sided call): the same HEAD, then the request (INTEGER, or
 * TYPE(MPI_Request) holding one), then ierr. */
#define BLOCKING(...) __VA_ARGS__, F *ierr
#define NONBLOCKING(...) __VA_ARGS__, F *request, F *ierr

/* The entries of a blocking call (lower, UPPER) and of its form with a request (rlower,
 * RUPPER), whose parameters begin with HEAD (in parentheses), passed on as the arguments
 * after COUNT, both counted by COUNT (as OP_<Name> and OP_<RName>). */
#define WITH_REQUEST(lower, UPPER, Name, rlower, RUPPER, RName, HEAD, COUNT, ...)            \
    typedef void lower##_fn(BLOCKING HEAD);                                                  \
    typedef void rlower##_fn(NONBLOCKING HEAD);                                              \
    ENTRIES(lower, UPPER, lower##_fn, BLOCKING HEAD,                                         \
            TRACED_CALL(OP_##Name, pmpi(__VA_ARGS__, ierr), COUNT))                          \
    ENTRIES(rlower, RUPPER, rlower##_fn, NONBLOCKING HEAD,                                   \
            TRACED_CALL(OP_##RName, pmpi(__VA_ARGS__, request, ierr), COUNT))

/* A blocking collective (lower, UPPER) and its non-blocking form (i<lower>, I<UPPER>), whose
 * parameters begin with HEAD (passed on as ARGS), both counted by COUNT (as OP_<Name> and
 * OP_<IName>). */
#define COLLECTIVES(lower, UPPER, Name, IName, HEAD, ARGS, COUNT)                            \
    WITH_REQUEST(lower, UPPER, Name, i##lower, I##UPPER, IName, (HEAD), COUNT, ARGS)

COLLECTIVES(barrier, BARRIER, Barrier, Ibarrier, const F *comm, comm,
            apmt_barrier(operation, start))

#define BCAST_HEAD void *buf, const F *count, const F *type, const F *root, const F *comm
#define BCAST_ARGS buf, count, type, root, comm
COLLECTIVES(bcast, BCAST, Bcast, Ibcast, BCAST_HEAD, BCAST_ARGS,
            apmt_bcast(operation, *count, PMPI_Type_f2c(*type), start))

#define REDUCE_HEAD                                                                          \
    const void *sendbuf, void *recvbuf, const F *count, const F *type, const F *op,          \
        const F *root, const F *comm
#define REDUCE_ARGS sendbuf, recvbuf, count, type, op, root, comm
COLLECTIVES(reduce, REDUCE, Reduce, Ireduce, REDUCE_HEAD, REDUCE_ARGS,
            apmt_reduction(operation, *count, PMPI_Type_f2c(*type), start))

#define ALLREDUCE_HEAD                                                                       \
    const void *sendbuf, void *recvbuf, const F *count, const F *type, const F *op,          \
        const F *comm
#define ALLREDUCE_ARGS sendbuf, recvbuf, count, type, op, comm
COLLECTIVES(allreduce, ALLREDUCE, Allreduce, Iallreduce, ALLREDUCE_HEAD, ALLREDUCE_ARGS,
            apmt_reduction(operation, *count, PMPI_Type_f2c(*type), start))
COLLECTIVES(scan, SCAN, Scan, Iscan, ALLREDUCE_HEAD, ALLREDUCE_ARGS,
            apmt_reduction(operation, *count, PMPI_Type_f2c(*type), start))
COLLECTIVES(exscan, EXSCAN, Exscan, Iexscan, ALLREDUCE_HEAD, ALLREDUCE_ARGS,
            apmt_reduction(operation, *count, PMPI_Type_f2c(*type), start))
/* MPI_Reduce_scatter_block: the same parameters, with recvcount in place of count */
COLLECTIVES(reduce_scatter_block, REDUCE_SCATTER_BLOCK, Reduce_scatter_block,
            Ireduce_scatter_block, ALLREDUCE_HEAD, ALLREDUCE_ARGS,
            apmt_reduce_scatter_block(operation, *count, PMPI_Type_f2c(*type),
                                      PMPI_Comm_f2c(*comm), start))

#define REDUCE_SCATTER_HEAD                                                                  \
    const void *sendbuf, void *recvbuf, const F *recvcounts, const F *type, const F *op,     \
        const F *comm
#define REDUCE_SCATTER_ARGS sendbuf, recvbuf, recvcounts, type, op, comm
COLLECTIVES(reduce_scatter, REDUCE_SCATTER, Reduce_scatter, Ireduce_scatter,
            REDUCE_SCATTER_HEAD, REDUCE_SCATTER_ARGS,
            apmt_reduce_scatter(operation, recvcounts, PMPI_Type_f2c(*type),
                                PMPI_Comm_f2c(*comm), start))

#define ALLTOALL_HEAD                                                                        \
    const void *sendbuf, const F *sendcount, const F *sendtype, void *recvbuf,               \
        const F *recvcount, const F *recvtype, const F *comm
#define ALLTOALL_ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm
COLLECTIVES(alltoall, ALLTOALL, Alltoall, Ialltoall, ALLTOALL_HEAD, ALLTOALL_ARGS,
            apmt_alltoall(operation, in_place(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                          *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), start))
COLLECTIVES(allgather, ALLGATHER, Allgather, Iallgather, ALLTOALL_HEAD, ALLTOALL_ARGS,
            apmt_allgather(operation, in_place(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                           *recvcount, PMPI_Type_f2c(*recvtype), start))

#define ALLTOALLV_HEAD                                                                       \
    const void *sendbuf, const F *sendcounts, const F *sdispls, const F *sendtype,           \
        void *recvbuf, const F *recvcounts, const F *rdispls, const F *recvtype, const F *comm
#define ALLTOALLV_ARGS                                                                       \
    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm
COLLECTIVES(alltoallv, ALLTOALLV, Alltoallv, Ialltoallv, ALLTOALLV_HEAD, ALLTOALLV_ARGS,
            apmt_alltoallv(operation, in_place(sendbuf), sendcounts, PMPI_Type_f2c(*sendtype),
                           recvcounts, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), start))

#define ALLGATHERV_HEAD                                                                      \
    const void *sendbuf, const F *sendcount, const F *sendtype, void *recvbuf,               \
        const F *recvcounts, const F *displs, const F *recvtype, const F *comm
#define ALLGATHERV_ARGS                                                                      \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm
COLLECTIVES(allgatherv, ALLGATHERV, Allgatherv, Iallgatherv, ALLGATHERV_HEAD, ALLGATHERV_ARGS,
            apmt_allgatherv(operation, in_place(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                            recvcounts, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), start))

#define GATHER_HEAD                                                                          \
    const void *sendbuf, const F *sendcount, const F *sendtype, void *recvbuf,               \
        const F *recvcount, const F *recvtype, const F *root, const F *comm
#define GATHER_ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm
COLLECTIVES(gather, GATHER, Gather, Igather, GATHER_HEAD, GATHER_ARGS,
            apmt_gather(operation, in_place(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                        *recvcount, PMPI_Type_f2c(*recvtype), start))
COLLECTIVES(scatter, SCATTER, Scatter, Iscatter, GATHER_HEAD, GATHER_ARGS,
            apmt_scatter(operation, in_place(recvbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                         *recvcount, PMPI_Type_f2c(*recvtype), start))

#define GATHERV_HEAD                                                                         \
    const void *sendbuf, const F *sendcount, const F *sendtype, void *recvbuf,               \
        const F *recvcounts, const F *displs, const F *recvtype, const F *root, const F *comm
#define GATHERV_ARGS                                                                         \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm
COLLECTIVES(gatherv, GATHERV, Gatherv, Igatherv, GATHERV_HEAD, GATHERV_ARGS,
            apmt_gatherv(operation, in_place(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                         recvcounts, PMPI_Type_f2c(*recvtype), *root, start))

#define SCATTERV_HEAD                                                                        \
    const void *sendbuf, const F *sendcounts, const F *displs, const F *sendtype,            \
        void *recvbuf, const F *recvcount, const F *recvtype, const F *root, const F *comm
#define SCATTERV_ARGS                                                                        \
    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm
COLLECTIVES(scatterv, SCATTERV, Scatterv, Iscatterv, SCATTERV_HEAD, SCATTERV_ARGS,
            apmt_scatterv(operation, in_place(recvbuf), sendcounts, PMPI_Type_f2c(*sendtype),
                          *recvcount, PMPI_Type_f2c(*recvtype), *root, start))

/* ---- neighborhood collectives (bytes: see collectives.c) --------------------------------- */

#define NEIGHBOR_BLOCKS                                                                      \
    apmt_neighbor_blocks(operation, *sendcount, PMPI_Type_f2c(*sendtype),                    \
                         PMPI_Comm_f2c(*comm), start)

COLLECTIVES(neighbor_allgather, NEIGHBOR_ALLGATHER, Neighbor_allgather, Ineighbor_allgather,
            ALLTOALL_HEAD, ALLTOALL_ARGS, NEIGHBOR_BLOCKS)
COLLECTIVES(neighbor_alltoall, NEIGHBOR_ALLTOALL, Neighbor_alltoall, Ineighbor_alltoall,
            ALLTOALL_HEAD, ALLTOALL_ARGS, NEIGHBOR_BLOCKS)
COLLECTIVES(neighbor_allgatherv, NEIGHBOR_ALLGATHERV, Neighbor_allgatherv, Ineighbor_allgatherv,
            ALLGATHERV_HEAD, ALLGATHERV_ARGS, NEIGHBOR_BLOCKS)
COLLECTIVES(neighbor_alltoallv, NEIGHBOR_ALLTOALLV, Neighbor_alltoallv, Ineighbor_alltoallv,
            ALLTOALLV_HEAD, ALLTOALLV_ARGS,
            apmt_neighbor_alltoallv(operation, sendcounts, PMPI_Type_f2c(*sendtype),
                                    PMPI_Comm_f2c(*comm), start))

/* the displacements are INTEGER(KIND=MPI_ADDRESS_KIND), the types INTEGER handles */
#define ALLTOALLW_HEAD                                                                       \
    const void *sendbuf, const F *sendcounts, const MPI_Aint *sdispls, const F *sendtypes,   \
        void *recvbuf, const F *recvcounts, const MPI_Aint *rdispls, const F *recvtypes,     \
        const F *comm
#define ALLTOALLW_ARGS                                                                       \
    sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm
COLLECTIVES(neighbor_alltoallw, NEIGHBOR_ALLTOALLW, Neighbor_alltoallw, Ineighbor_alltoallw,
            ALLTOALLW_HEAD, ALLTOALLW_ARGS,
            apmt_neighbor_alltoallw(operation, sendcounts, NULL, sendtypes,
                                    PMPI_Comm_f2c(*comm), start))

/* ---- one-sided communication (counted as in wrap_c.c) ------------------------------------ */

/* A one-sided call (lower, UPPER) and its request-based form (r<lower>, R<UPPER>), as
 * COLLECTIVES. */
#define ONE_SIDED(lower, UPPER, Name, RName, HEAD, ARGS, COUNT)                              \
    WITH_REQUEST(lower, UPPER, Name, r##lower, R##UPPER, RName, (HEAD), COUNT, ARGS)

/* target_disp is INTEGER(KIND=MPI_ADDRESS_KIND); the window is an INTEGER handle */
#define TARGET_HEAD                                                                          \
    const F *target_rank, const MPI_Aint *target_disp, const F *target_count,                \
        const F *target_type
#define ORIGIN_TARGET_ARGS                                                                   \
    origin_addr, origin_count, origin_type, target_rank, target_disp, target_count, target_type
#define PUT_HEAD                                                                             \
    const void *origin_addr, const F *origin_count, const F *origin_type, TARGET_HEAD,       \
        const F *win
#define ACCUMULATE_HEAD                                                                      \
    const void *origin_addr, const F *origin_count, const F *origin_type, TARGET_HEAD,       \
        const F *op, const F *win
#define PUT_ARGS ORIGIN_TARGET_ARGS, win
#define ACCUMULATE_ARGS ORIGIN_TARGET_ARGS, op, win
#define ORIGIN_BYTES                                                                         \
    apmt_rma(operation, PMPI_Win_f2c(*win), *target_rank, *origin_count,                     \
             PMPI_Type_f2c(*origin_type), start)
ONE_SIDED(put, PUT, Put, Rput, PUT_HEAD, PUT_ARGS, ORIGIN_BYTES)
ONE_SIDED(get, GET, Get, Rget, PUT_HEAD, PUT_ARGS, ORIGIN_BYTES)
ONE_SIDED(accumulate, ACCUMULATE, Accumulate, Raccumulate, ACCUMULATE_HEAD, ACCUMULATE_ARGS,
          ORIGIN_BYTES)

#define GET_ACCUMULATE_HEAD                                                                  \
    const void *origin_addr, const F *origin_count, const F *origin_type, void *result_addr, \
        const F *result_count, const F *result_type, TARGET_HEAD, const F *op, const F *win
#define GET_ACCUMULATE_ARGS                                                                  \
    origin_addr, origin_count, origin_type, result_addr, result_count, result_type,         \
        target_rank, target_disp, target_count, target_type, op, win
ONE_SIDED(get_accumulate, GET_ACCUMULATE, Get_accumulate, Rget_accumulate, GET_ACCUMULATE_HEAD,
          GET_ACCUMULATE_ARGS,
          apmt_get_accumulate(operation, PMPI_Win_f2c(*win), *target_rank, PMPI_Op_f2c(*op),
                              *origin_count, PMPI_Type_f2c(*origin_type), *result_count,
                              PMPI_Type_f2c(*result_type), start))

/* MPI_Fetch_and_op and MPI_Compare_and_swap: one element of type, read and replaced at the
 * target. */
#define ONE_ELEMENT                                                                          \
    apmt_rma(operation, PMPI_Win_f2c(*win), *target_rank, 1, PMPI_Type_f2c(*type), start)

#define FETCH_AND_OP_PARAMS                                                                  \
    const void *origin_addr, void *result_addr, const F *type, const F *target_rank,         \
        const MPI_Aint *target_disp, const F *op, const F *win, F *ierr
typedef void fetch_and_op_fn(FETCH_AND_OP_PARAMS);
ENTRIES(fetch_and_op, FETCH_AND_OP, fetch_and_op_fn, FETCH_AND_OP_PARAMS,
        TRACED_CALL(OP_Fetch_and_op,
                    pmpi(origin_addr, result_addr, type, target_rank, target_disp, op, win,
                         ierr),
                    ONE_ELEMENT))

#define COMPARE_AND_SWAP_PARAMS                                                              \
    const void *origin_addr, const void *compare_addr, void *result_addr, const F *type,     \
        const F *target_rank, const MPI_Aint *target_disp, const F *win, F *ierr
typedef void compare_and_swap_fn(COMPARE_AND_SWAP_PARAMS);
ENTRIES(compare_and_swap, COMPARE_AND_SWAP, compare_and_swap_fn, COMPARE_AND_SWAP_PARAMS,
        TRACED_CALL(OP_Compare_and_swap,
                    pmpi(origin_addr, compare_addr, result_addr, type, target_rank, target_disp,
                         win, ierr),
                    ONE_ELEMENT))

/* Window synchronisation: calls and time, with the target `rank` as the peer (TARGET_PEER)
 * or none (NO_PEER). */
#define NO_PEER apmt_record(operation, PEER_NONE, 0, start)
#define TARGET_PEER apmt_rma(operation, PMPI_Win_f2c(*win), *rank, 0, MPI_DATATYPE_NULL, start)

#define WIN_PARAMS const F *win, F *ierr
typedef void win_fn(WIN_PARAMS);
ENTRIES(win_unlock_all, WIN_UNLOCK_ALL, win_fn, WIN_PARAMS,
        TRACED_CALL(OP_Win_unlock_all, pmpi(win, ierr), NO_PEER))
ENTRIES(win_flush_all, WIN_FLUSH_ALL, win_fn, WIN_PARAMS,
        TRACED_CALL(OP_Win_flush_all, pmpi(win, ierr), NO_PEER))
ENTRIES(win_flush_local_all, WIN_FLUSH_LOCAL_ALL, win_fn, WIN_PARAMS,
        TRACED_CALL(OP_Win_flush_local_all, pmpi(win, ierr), NO_PEER))
ENTRIES(win_sync, WIN_SYNC, win_fn, WIN_PARAMS,
        TRACED_CALL(OP_Win_sync, pmpi(win, ierr), NO_PEER))
ENTRIES(win_complete, WIN_COMPLETE, win_fn, WIN_PARAMS,
        TRACED_CALL(OP_Win_complete, pmpi(win, ierr), NO_PEER))
ENTRIES(win_wait, WIN_WAIT, win_fn, WIN_PARAMS,
        TRACED_CALL(OP_Win_wait, pmpi(win, ierr), NO_PEER))

#define WIN_ASSERT_PARAMS const F *assertion, const F *win, F *ierr
typedef void win_assert_fn(WIN_ASSERT_PARAMS);
ENTRIES(win_fence, WIN_FENCE, win_assert_fn, WIN_ASSERT_PARAMS,
        TRACED_CALL(OP_Win_fence, pmpi(assertion, win, ierr), NO_PEER))
ENTRIES(win_lock_all, WIN_LOCK_ALL, win_assert_fn, WIN_ASSERT_PARAMS,
        TRACED_CALL(OP_Win_lock_all, pmpi(assertion, win, ierr), NO_PEER))

#define WIN_RANK_PARAMS const F *rank, const F *win, F *ierr
typedef void win_rank_fn(WIN_RANK_PARAMS);
ENTRIES(win_unlock, WIN_UNLOCK, win_rank_fn, WIN_RANK_PARAMS,
        TRACED_CALL(OP_Win_unlock, pmpi(rank, win, ierr), TARGET_PEER))
ENTRIES(win_flush, WIN_FLUSH, win_rank_fn, WIN_RANK_PARAMS,
        TRACED_CALL(OP_Win_flush, pmpi(rank, win, ierr), TARGET_PEER))
ENTRIES(win_flush_local, WIN_FLUSH_LOCAL, win_rank_fn, WIN_RANK_PARAMS,
        TRACED_CALL(OP_Win_flush_local, pmpi(rank, win, ierr), TARGET_PEER))

#define WIN_LOCK_PARAMS const F *lock_type, const F *rank, const F *assertion, const F *win, F *ierr
typedef void win_lock_fn(WIN_LOCK_PARAMS);
ENTRIES(win_lock, WIN_LOCK, win_lock_fn, WIN_LOCK_PARAMS,
        TRACED_CALL(OP_Win_lock, pmpi(lock_type, rank, assertion, win, ierr), TARGET_PEER))

#define WIN_GROUP_PARAMS const F *group, const F *assertion, const F *win, F *ierr
typedef void win_group_fn(WIN_GROUP_PARAMS);
ENTRIES(win_post, WIN_POST, win_group_fn, WIN_GROUP_PARAMS,
        TRACED_CALL(OP_Win_post, pmpi(group, assertion, win, ierr), NO_PEER))
ENTRIES(win_start, WIN_START, win_group_fn, WIN_GROUP_PARAMS,
        TRACED_CALL(OP_Win_start, pmpi(group, assertion, win, ierr), NO_PEER))

#define WIN_TEST_PARAMS const F *win, F *flag, F *ierr
typedef void win_test_fn(WIN_TEST_PARAMS);
ENTRIES(win_test, WIN_TEST, win_test_fn, WIN_TEST_PARAMS,
        TRACED_CALL(OP_Win_test, pmpi(win, flag, ierr), NO_PEER))
