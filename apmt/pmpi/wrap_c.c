/* apmt's PMPI tracing library: the C bindings (used by C and C++ programs, and mpi4py).
 *
 * Each wrapper times the PMPI call and, when it succeeded, counts it. Arguments are looked at
 * only after a successful call, and only those the MPI standard says are significant on the
 * calling rank, so a wrapper never trips the MPI library's argument checks.
 *
 * Point-to-point bytes: count * size of the message sent (sends, and the send half of
 * MPI_Sendrecv[_replace]) or received (MPI_Recv: the size that arrived, from the status;
 * MPI_Irecv: the posted count, since the size is known only at the wait). Peers: the
 * destination of a send, the source of a receive (MPI_ANY_SOURCE resolved from the status
 * where there is one), as MPI_COMM_WORLD ranks. Waits and tests: calls and time only.
 *
 * Collectives, blocking and non-blocking (MPI_Bcast and MPI_Ibcast, ...), neighborhood ones
 * among them: bytes as in collectives.c, no peer. A non-blocking call (point-to-point or
 * collective) is counted with the time of the call that starts it; the time spent completing
 * it goes to the MPI_Wait* and MPI_Test* calls.
 *
 * Persistent requests (apmt_pmpi.h): the *_init calls note the request (with the bytes and
 * peer a non-blocking send or MPI_Irecv would count) and count nothing; MPI_Start and
 * MPI_Startall count each request they start under its init's name (and those the table does
 * not know under their own); MPI_Request_free forgets it, by the handle read before the call,
 * which sets it to MPI_REQUEST_NULL.
 *
 * One-sided (apmt_pmpi.h): MPI_Put, MPI_Get, MPI_Accumulate and their request-based forms
 * (MPI_Rput, ...) count origin count * size of the origin type, MPI_Fetch_and_op and
 * MPI_Compare_and_swap one element, MPI_Get_accumulate the origin's contribution (or with
 * MPI_NO_OP, an atomic read whose origin arguments are not significant, the result's size),
 * with the target as the peer. Window synchronisation: calls and time, the target as the peer
 * for the calls that name one (MPI_Win_lock, MPI_Win_unlock, MPI_Win_flush[_local]).
 */
#include "apmt_pmpi.h"

#define TRACED(err) ((err) == MPI_SUCCESS && apmt_tracing)

/* ---- start and finish -------------------------------------------------------------------- */

int MPI_Init(int *argc, char ***argv)
{
    int err = PMPI_Init(argc, argv);
    if (err == MPI_SUCCESS)
        apmt_start(MPI_THREAD_SINGLE);
    return err;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int err = PMPI_Init_thread(argc, argv, required, provided);
    if (err == MPI_SUCCESS)
        apmt_start(*provided);
    return err;
}

int MPI_Finalize(void)
{
    apmt_finish();
    return PMPI_Finalize();
}

/* ---- sends ------------------------------------------------------------------------------- */

#define BLOCKING_SEND(Name)                                                                  \
    int MPI_##Name(const void *buf, int count, MPI_Datatype type, int dest, int tag,        \
                   MPI_Comm comm)                                                            \
    {                                                                                        \
        double start = apmt_now();                                                           \
        int err = PMPI_##Name(buf, count, type, dest, tag, comm);                            \
        if (TRACED(err))                                                                     \
            apmt_p2p(OP_##Name, comm, dest, count, type, start);                             \
        return err;                                                                          \
    }

#define NONBLOCKING_SEND(Name)                                                               \
    int MPI_##Name(const void *buf, int count, MPI_Datatype type, int dest, int tag,        \
                   MPI_Comm comm, MPI_Request *request)                                      \
    {                                                                                        \
        double start = apmt_now();                                                           \
        int err = PMPI_##Name(buf, count, type, dest, tag, comm, request);                   \
        if (TRACED(err))                                                                     \
            apmt_p2p(OP_##Name, comm, dest, count, type, start);                             \
        return err;                                                                          \
    }

BLOCKING_SEND(Send)
BLOCKING_SEND(Ssend)
BLOCKING_SEND(Bsend)
BLOCKING_SEND(Rsend)
NONBLOCKING_SEND(Isend)
NONBLOCKING_SEND(Issend)
NONBLOCKING_SEND(Ibsend)
NONBLOCKING_SEND(Irsend)

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                 int recvtag, MPI_Comm comm, MPI_Status *status)
{
    double start = apmt_now();
    int err = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                            recvtype, source, recvtag, comm, status);
    if (TRACED(err))
        apmt_p2p(OP_Sendrecv, comm, dest, sendcount, sendtype, start);
    return err;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    double start = apmt_now();
    int err = PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm,
                                    status);
    if (TRACED(err))
        apmt_p2p(OP_Sendrecv_replace, comm, dest, count, type, start);
    return err;
}

/* ---- persistent requests: counted when started (apmt_pmpi.h) ---------------------------- */

#define SEND_INIT(Name)                                                                      \
    int MPI_##Name(const void *buf, int count, MPI_Datatype type, int dest, int tag,        \
                   MPI_Comm comm, MPI_Request *request)                                      \
    {                                                                                        \
        int err = PMPI_##Name(buf, count, type, dest, tag, comm, request);                   \
        if (TRACED(err))                                                                     \
            apmt_persistent(OP_##Name, *request, comm, dest, count, type);                   \
        return err;                                                                          \
    }

SEND_INIT(Send_init)
SEND_INIT(Ssend_init)
SEND_INIT(Bsend_init)
SEND_INIT(Rsend_init)

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request *request)
{
    int err = PMPI_Recv_init(buf, count, type, source, tag, comm, request);
    if (TRACED(err))
        apmt_persistent(OP_Recv_init, *request, comm, source, count, type);
    return err;
}

static MPI_Request c_request(const void *requests, int i)
{
    return ((const MPI_Request *)requests)[i];
}

int MPI_Start(MPI_Request *request)
{
    double start = apmt_now();
    int err = PMPI_Start(request);
    if (TRACED(err))
        apmt_started(OP_Start, 1, request, c_request, start);
    return err;
}

int MPI_Startall(int count, MPI_Request requests[])
{
    double start = apmt_now();
    int err = PMPI_Startall(count, requests);
    if (TRACED(err))
        apmt_started(OP_Startall, count, requests, c_request, start);
    return err;
}

int MPI_Request_free(MPI_Request *request)
{
    MPI_Request freed = *request;
    int err = PMPI_Request_free(request);
    if (TRACED(err))
        apmt_request_freed(freed);
    return err;
}

/* ---- receives and probes ----------------------------------------------------------------- */

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    MPI_Status own; /* the status tells the source and size even if the caller ignores it */
    MPI_Status *used = status == MPI_STATUS_IGNORE ? &own : status;
    double start = apmt_now();
    int err = PMPI_Recv(buf, count, type, source, tag, comm, used);
    if (TRACED(err))
        apmt_received(OP_Recv, comm, source, used, count, type, start);
    return err;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    double start = apmt_now();
    int err = PMPI_Irecv(buf, count, type, source, tag, comm, request);
    if (TRACED(err))
        apmt_p2p(OP_Irecv, comm, source, count, type, start);
    return err;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Status own;
    MPI_Status *used = status == MPI_STATUS_IGNORE ? &own : status;
    double start = apmt_now();
    int err = PMPI_Probe(source, tag, comm, used);
    if (TRACED(err))
        apmt_received(OP_Probe, comm, source, used, 0, MPI_DATATYPE_NULL, start);
    return err;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    MPI_Status own;
    MPI_Status *used = status == MPI_STATUS_IGNORE ? &own : status;
    double start = apmt_now();
    int err = PMPI_Iprobe(source, tag, comm, flag, used);
    if (TRACED(err))
        apmt_received(OP_Iprobe, comm, source, *flag ? used : NULL, 0, MPI_DATATYPE_NULL,
                      start);
    return err;
}

/* ---- waits and tests: calls and time, no bytes, no peer ---------------------------------- */

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    double start = apmt_now();
    int err = PMPI_Wait(request, status);
    apmt_record(OP_Wait, PEER_NONE, 0, start);
    return err;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    double start = apmt_now();
    int err = PMPI_Waitall(count, requests, statuses);
    apmt_record(OP_Waitall, PEER_NONE, 0, start);
    return err;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    double start = apmt_now();
    int err = PMPI_Waitany(count, requests, index, status);
    apmt_record(OP_Waitany, PEER_NONE, 0, start);
    return err;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    double start = apmt_now();
    int err = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    apmt_record(OP_Waitsome, PEER_NONE, 0, start);
    return err;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    double start = apmt_now();
    int err = PMPI_Test(request, flag, status);
    apmt_record(OP_Test, PEER_NONE, 0, start);
    return err;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    double start = apmt_now();
    int err = PMPI_Testall(count, requests, flag, statuses);
    apmt_record(OP_Testall, PEER_NONE, 0, start);
    return err;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    double start = apmt_now();
    int err = PMPI_Testany(count, requests, index, flag, status);
    apmt_record(OP_Testany, PEER_NONE, 0, start);
    return err;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    double start = apmt_now();
    int err = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    apmt_record(OP_Testsome, PEER_NONE, 0, start);
    return err;
}

/* ---- collectives, blocking and non-blocking (bytes: see collectives.c) ------------------- */

/* A wrapper's body: CALL timed and, when it succeeded, COUNT run with `operation` the
 * operation it counts. */
#define TRACED_CALL(which, call, count)                                                      \
    double start = apmt_now();                                                               \
    int err = call;                                                                          \
    if (TRACED(err)) {                                                                       \
        enum apmt_op operation = which;                                                      \
        count;                                                                               \
    }                                                                                        \
    return err

/* MPI_<Name>(PARAMS) and its non-blocking form MPI_<IName>(PARAMS, request), both counted by
 * COUNT (as OP_<Name> and OP_<IName>); ARGS passes PARAMS on. */
#define COLLECTIVES(Name, IName, PARAMS, ARGS, COUNT)                                        \
    int MPI_##Name(PARAMS)                                                                   \
    {                                                                                        \
        TRACED_CALL(OP_##Name, PMPI_##Name(ARGS), COUNT);                                    \
    }                                                                                        \
    int MPI_##IName(PARAMS, MPI_Request *request)                                            \
    {                                                                                        \
        TRACED_CALL(OP_##IName, PMPI_##IName(ARGS, request), COUNT);                         \
    }

COLLECTIVES(Barrier, Ibarrier, MPI_Comm comm, comm, apmt_barrier(operation, start))

#define BCAST_PARAMS void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm
#define BCAST_ARGS buf, count, type, root, comm
COLLECTIVES(Bcast, Ibcast, BCAST_PARAMS, BCAST_ARGS, apmt_bcast(operation, count, type, start))

#define REDUCE_PARAMS                                                                        \
    const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,   \
        MPI_Comm comm
#define REDUCE_ARGS sendbuf, recvbuf, count, type, op, root, comm
COLLECTIVES(Reduce, Ireduce, REDUCE_PARAMS, REDUCE_ARGS,
            apmt_reduction(operation, count, type, start))

#define ALLREDUCE_PARAMS                                                                     \
    const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm
#define ALLREDUCE_ARGS sendbuf, recvbuf, count, type, op, comm
COLLECTIVES(Allreduce, Iallreduce, ALLREDUCE_PARAMS, ALLREDUCE_ARGS,
            apmt_reduction(operation, count, type, start))
COLLECTIVES(Scan, Iscan, ALLREDUCE_PARAMS, ALLREDUCE_ARGS,
            apmt_reduction(operation, count, type, start))
COLLECTIVES(Exscan, Iexscan, ALLREDUCE_PARAMS, ALLREDUCE_ARGS,
            apmt_reduction(operation, count, type, start))
/* MPI_Reduce_scatter_block: the same parameters, with recvcount in place of count */
COLLECTIVES(Reduce_scatter_block, Ireduce_scatter_block, ALLREDUCE_PARAMS, ALLREDUCE_ARGS,
            apmt_reduce_scatter_block(operation, count, type, comm, start))

#define REDUCE_SCATTER_PARAMS                                                                \
    const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype type,           \
        MPI_Op op, MPI_Comm comm
#define REDUCE_SCATTER_ARGS sendbuf, recvbuf, recvcounts, type, op, comm
COLLECTIVES(Reduce_scatter, Ireduce_scatter, REDUCE_SCATTER_PARAMS, REDUCE_SCATTER_ARGS,
            apmt_reduce_scatter(operation, recvcounts, type, comm, start))

#define ALLTOALL_PARAMS                                                                      \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, \
        MPI_Datatype recvtype, MPI_Comm comm
#define ALLTOALL_ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm
COLLECTIVES(Alltoall, Ialltoall, ALLTOALL_PARAMS, ALLTOALL_ARGS,
            apmt_alltoall(operation, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount,
                          recvtype, comm, start))
COLLECTIVES(Allgather, Iallgather, ALLTOALL_PARAMS, ALLTOALL_ARGS,
            apmt_allgather(operation, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount,
                           recvtype, start))

#define ALLTOALLV_PARAMS                                                                     \
    const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, \
        void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,   \
        MPI_Comm comm
#define ALLTOALLV_ARGS                                                                       \
    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm
COLLECTIVES(Alltoallv, Ialltoallv, ALLTOALLV_PARAMS, ALLTOALLV_ARGS,
            apmt_alltoallv(operation, sendbuf == MPI_IN_PLACE, sendcounts, sendtype, recvcounts,
                           recvtype, comm, start))

#define ALLGATHERV_PARAMS                                                                    \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,                \
        const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm
#define ALLGATHERV_ARGS                                                                      \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm
COLLECTIVES(Allgatherv, Iallgatherv, ALLGATHERV_PARAMS, ALLGATHERV_ARGS,
            apmt_allgatherv(operation, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcounts,
                            recvtype, comm, start))

#define GATHER_PARAMS                                                                        \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, \
        MPI_Datatype recvtype, int root, MPI_Comm comm
#define GATHER_ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm
COLLECTIVES(Gather, Igather, GATHER_PARAMS, GATHER_ARGS,
            apmt_gather(operation, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount,
                        recvtype, start))
COLLECTIVES(Scatter, Iscatter, GATHER_PARAMS, GATHER_ARGS,
            apmt_scatter(operation, recvbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount,
                         recvtype, start))

#define GATHERV_PARAMS                                                                       \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,                \
        const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,         \
        MPI_Comm comm
#define GATHERV_ARGS                                                                         \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm
COLLECTIVES(Gatherv, Igatherv, GATHERV_PARAMS, GATHERV_ARGS,
            apmt_gatherv(operation, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcounts,
                         recvtype, root, start))

#define SCATTERV_PARAMS                                                                      \
    const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,  \
        void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm
#define SCATTERV_ARGS                                                                        \
    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm
COLLECTIVES(Scatterv, Iscatterv, SCATTERV_PARAMS, SCATTERV_ARGS,
            apmt_scatterv(operation, recvbuf == MPI_IN_PLACE, sendcounts, sendtype, recvcount,
                          recvtype, root, start))

/* ---- neighborhood collectives (bytes: see collectives.c; no MPI_IN_PLACE) ---------------- */

#define NEIGHBOR_BLOCKS apmt_neighbor_blocks(operation, sendcount, sendtype, comm, start)

COLLECTIVES(Neighbor_allgather, Ineighbor_allgather, ALLTOALL_PARAMS, ALLTOALL_ARGS,
            NEIGHBOR_BLOCKS)
COLLECTIVES(Neighbor_alltoall, Ineighbor_alltoall, ALLTOALL_PARAMS, ALLTOALL_ARGS,
            NEIGHBOR_BLOCKS)
COLLECTIVES(Neighbor_allgatherv, Ineighbor_allgatherv, ALLGATHERV_PARAMS, ALLGATHERV_ARGS,
            NEIGHBOR_BLOCKS)
COLLECTIVES(Neighbor_alltoallv, Ineighbor_alltoallv, ALLTOALLV_PARAMS, ALLTOALLV_ARGS,
            apmt_neighbor_alltoallv(operation, sendcounts, sendtype, comm, start))

#define ALLTOALLW_PARAMS                                                                     \
    const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],                   \
        const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],               \
        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm
#define ALLTOALLW_ARGS                                                                       \
    sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm
COLLECTIVES(Neighbor_alltoallw, Ineighbor_alltoallw, ALLTOALLW_PARAMS, ALLTOALLW_ARGS,
            apmt_neighbor_alltoallw(operation, sendcounts, sendtypes, NULL, comm, start))

/* ---- one-sided communication ------------------------------------------------------------- */

/* A one-sided call and its request-based form (MPI_Put, MPI_Rput) are wrapped as a collective
 * and its non-blocking form are: the same parameters, then a request. */
#define ONE_SIDED COLLECTIVES

#define TARGET_PARAMS                                                                        \
    int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_type
#define ORIGIN_TARGET_ARGS                                                                   \
    origin_addr, origin_count, origin_type, target_rank, target_disp, target_count, target_type
#define PUT_PARAMS                                                                           \
    const void *origin_addr, int origin_count, MPI_Datatype origin_type, TARGET_PARAMS,      \
        MPI_Win win
#define GET_PARAMS                                                                           \
    void *origin_addr, int origin_count, MPI_Datatype origin_type, TARGET_PARAMS, MPI_Win win
#define ACCUMULATE_PARAMS                                                                    \
    const void *origin_addr, int origin_count, MPI_Datatype origin_type, TARGET_PARAMS,      \
        MPI_Op op, MPI_Win win
#define PUT_ARGS ORIGIN_TARGET_ARGS, win
#define ACCUMULATE_ARGS ORIGIN_TARGET_ARGS, op, win
#define ORIGIN_BYTES apmt_rma(operation, win, target_rank, origin_count, origin_type, start)
ONE_SIDED(Put, Rput, PUT_PARAMS, PUT_ARGS, ORIGIN_BYTES)
ONE_SIDED(Get, Rget, GET_PARAMS, PUT_ARGS, ORIGIN_BYTES)
ONE_SIDED(Accumulate, Raccumulate, ACCUMULATE_PARAMS, ACCUMULATE_ARGS, ORIGIN_BYTES)

#define GET_ACCUMULATE_PARAMS                                                                \
    const void *origin_addr, int origin_count, MPI_Datatype origin_type, void *result_addr,  \
        int result_count, MPI_Datatype result_type, TARGET_PARAMS, MPI_Op op, MPI_Win win
#define GET_ACCUMULATE_ARGS                                                                  \
    origin_addr, origin_count, origin_type, result_addr, result_count, result_type,         \
        target_rank, target_disp, target_count, target_type, op, win
ONE_SIDED(Get_accumulate, Rget_accumulate, GET_ACCUMULATE_PARAMS, GET_ACCUMULATE_ARGS,
          apmt_get_accumulate(operation, win, target_rank, op, origin_count, origin_type,
                              result_count, result_type, start))

/* MPI_Fetch_and_op and MPI_Compare_and_swap: one element of type, read and replaced at the
 * target. */
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype type,
                     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    TRACED_CALL(OP_Fetch_and_op,
                PMPI_Fetch_and_op(origin_addr, result_addr, type, target_rank, target_disp, op,
                                  win),
                apmt_rma(operation, win, target_rank, 1, type, start));
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype type, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    TRACED_CALL(OP_Compare_and_swap,
                PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, type, target_rank,
                                      target_disp, win),
                apmt_rma(operation, win, target_rank, 1, type, start));
}

/* Window synchronisation: MPI_<Name> with the parameters PARAMS (in parentheses, passed on as
 * ARGS), counted by COUNT: calls and time, with the target `rank` as the peer (TARGET_PEER)
 * or none (NO_PEER). */
#define WIN_SYNC(Name, PARAMS, ARGS, COUNT)                                                  \
    int MPI_##Name PARAMS                                                                    \
    {                                                                                        \
        TRACED_CALL(OP_##Name, PMPI_##Name ARGS, COUNT);                                     \
    }
#define NO_PEER apmt_record(operation, PEER_NONE, 0, start)
#define TARGET_PEER apmt_rma(operation, win, rank, 0, MPI_DATATYPE_NULL, start)

WIN_SYNC(Win_fence, (int assertion, MPI_Win win), (assertion, win), NO_PEER)
WIN_SYNC(Win_lock, (int lock_type, int rank, int assertion, MPI_Win win),
         (lock_type, rank, assertion, win), TARGET_PEER)
WIN_SYNC(Win_unlock, (int rank, MPI_Win win), (rank, win), TARGET_PEER)
WIN_SYNC(Win_lock_all, (int assertion, MPI_Win win), (assertion, win), NO_PEER)
WIN_SYNC(Win_unlock_all, (MPI_Win win), (win), NO_PEER)
WIN_SYNC(Win_flush, (int rank, MPI_Win win), (rank, win), TARGET_PEER)
WIN_SYNC(Win_flush_all, (MPI_Win win), (win), NO_PEER)
WIN_SYNC(Win_flush_local, (int rank, MPI_Win win), (rank, win), TARGET_PEER)
WIN_SYNC(Win_flush_local_all, (MPI_Win win), (win), NO_PEER)
WIN_SYNC(Win_sync, (MPI_Win win), (win), NO_PEER)
WIN_SYNC(Win_post, (MPI_Group group, int assertion, MPI_Win win), (group, assertion, win),
         NO_PEER)
WIN_SYNC(Win_start, (MPI_Group group, int assertion, MPI_Win win), (group, assertion, win),
         NO_PEER)
WIN_SYNC(Win_complete, (MPI_Win win), (win), NO_PEER)
WIN_SYNC(Win_wait, (MPI_Win win), (win), NO_PEER)
WIN_SYNC(Win_test, (MPI_Win win, int *flag), (win, flag), NO_PEER)
