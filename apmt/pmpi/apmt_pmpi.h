/* apmt's PMPI tracing library: what the C and Fortran wrappers share.
 *
 * Loaded with LD_PRELOAD, the library defines the MPI functions (C: MPI_Send, ...; Fortran:
 * mpi_send_, ..., mpi_send_f08_) and forwards each call to the MPI library's profiling entry
 * (PMPI_Send, pmpi_send_, pmpi_send_f08_), counting per (operation, peer) the calls, the bytes
 * and the seconds spent. At MPI_Finalize each rank writes $APMT_PMPI_DIR/pmpi.<rank>.tsv.
 * Non-blocking calls (MPI_Isend, MPI_Iallreduce, ...) count their bytes and the time of the
 * call that starts them under their own name; the time spent completing them goes to the
 * MPI_Wait* and MPI_Test* calls.
 *
 * Persistent requests: MPI_Send_init, MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init and
 * MPI_Recv_init count nothing themselves; they note, in a table keyed by the request handle,
 * the operation, the peer (a world rank) and the bytes (count * type size; for MPI_Recv_init
 * the posted count and MPI_ANY_SOURCE unresolved, as for MPI_Irecv). Each request that
 * MPI_Start or MPI_Startall starts is then counted as one call of that operation, under the
 * init's name (MPI_Send_init), with the request's peer and bytes: an operation's calls are the
 * transfers started, as MPI_Isend's are. The init's name, because MPI_Start tells nothing of
 * what it starts (one MPI_Startall may start sends and receives to several peers), while the
 * init's names the transfer and its mode and is an MPI name that apmt.comm.kind_of knows as
 * point-to-point; not MPI_Isend's, as a persistent transfer's start costs less than a
 * non-blocking one's (its set-up was done once, by the init). MPI_Start's time goes to its
 * request; MPI_Startall's is split evenly over its requests. A request that is not in the
 * table (an MPI-4 persistent collective, which the tracer does not wrap) is counted as a call
 * of MPI_Start or MPI_Startall with its share of the time and no bytes, so that no time spent
 * in MPI is lost. MPI_Request_free removes a request from the table. The time of the *_init
 * and free calls (set-up, once per request) is not counted; completions are the waits' and
 * tests' as ever.
 *
 * One-sided communication (RMA): MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate,
 * MPI_Fetch_and_op, MPI_Compare_and_swap and the request-based MPI_Rput, MPI_Rget,
 * MPI_Raccumulate and MPI_Rget_accumulate count the origin's bytes (what a put or an
 * accumulate sends, what a get fetches) with the target as the peer (its rank in the window's
 * group as a world rank), and the time of the call, which only starts the transfer. The
 * synchronisation calls (MPI_Win_fence, MPI_Win_lock, ...), which complete the transfers and
 * so hold most of their time, as waits do for non-blocking sends, count calls and time; those
 * naming a target rank (MPI_Win_lock, MPI_Win_unlock, MPI_Win_flush, MPI_Win_flush_local)
 * have it as the peer, the others none.
 *
 * Neighborhood collectives (MPI_Neighbor_allgather, ..., MPI_Ineighbor_alltoallw) count, as
 * the other collectives, the calling rank's send volume, without a peer: the blocks it sends
 * to its out-neighbours in the communicator's topology (collectives.c).
 *
 * Without APMT_PMPI_DIR the wrappers only forward: nothing is counted or written.
 */
#ifndef APMT_PMPI_H
#define APMT_PMPI_H

#include <mpi.h>
#include <stdint.h>

/* The library's own functions stay inside it: only the MPI entry points are exported. */
#pragma GCC visibility push(hidden)

/* Every counted operation; X(Name) stands for MPI_<Name>, the name written to the trace
 * whatever binding (C, mpif.h, use mpi, use mpi_f08) was called. */
#define APMT_OPERATIONS(X)                                                                   \
    X(Send) X(Recv) X(Isend) X(Irecv) X(Ssend) X(Issend) X(Bsend) X(Ibsend) X(Rsend)       \
    X(Irsend) X(Sendrecv) X(Sendrecv_replace)                                               \
    X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Test) X(Testall) X(Testany) X(Testsome)     \
    X(Probe) X(Iprobe)                                                                      \
    X(Bcast) X(Reduce) X(Allreduce) X(Alltoall) X(Alltoallv) X(Allgather) X(Allgatherv)     \
    X(Gather) X(Gatherv) X(Scatter) X(Scatterv) X(Reduce_scatter) X(Reduce_scatter_block)   \
    X(Scan) X(Exscan) X(Barrier)                                                            \
    X(Ibcast) X(Ireduce) X(Iallreduce) X(Ialltoall) X(Ialltoallv) X(Iallgather)             \
    X(Iallgatherv) X(Igather) X(Igatherv) X(Iscatter) X(Iscatterv) X(Ireduce_scatter)       \
    X(Ireduce_scatter_block) X(Iscan) X(Iexscan) X(Ibarrier)                                \
    X(Send_init) X(Ssend_init) X(Bsend_init) X(Rsend_init) X(Recv_init) X(Start)            \
    X(Startall)                                                                             \
    X(Put) X(Get) X(Accumulate) X(Get_accumulate) X(Fetch_and_op) X(Compare_and_swap)       \
    X(Rput) X(Rget) X(Raccumulate) X(Rget_accumulate)                                       \
    X(Win_fence) X(Win_lock) X(Win_unlock) X(Win_lock_all) X(Win_unlock_all) X(Win_flush)   \
    X(Win_flush_all) X(Win_flush_local) X(Win_flush_local_all) X(Win_sync) X(Win_post)      \
    X(Win_start) X(Win_complete) X(Win_wait) X(Win_test)                                    \
    X(Neighbor_allgather) X(Neighbor_allgatherv) X(Neighbor_alltoall) X(Neighbor_alltoallv) \
    X(Neighbor_alltoallw) X(Ineighbor_allgather) X(Ineighbor_allgatherv)                    \
    X(Ineighbor_alltoall) X(Ineighbor_alltoallv) X(Ineighbor_alltoallw)

enum apmt_op {
#define APMT_ENUM(name) OP_##name,
    APMT_OPERATIONS(APMT_ENUM)
#undef APMT_ENUM
    OP_COUNT
};

/* Peers that are not ranks. Ranks are always ranks of MPI_COMM_WORLD. */
#define PEER_NONE (-1)     /* collectives, waits, tests and window synchronisation */
#define PEER_ANY (-2)      /* MPI_ANY_SOURCE not resolved (non-blocking receive, no message) */
#define PEER_PROC_NULL (-3) /* MPI_PROC_NULL: no data moves */

/* Nonzero between a successful MPI_Init and MPI_Finalize when APMT_PMPI_DIR is set. */
extern int apmt_tracing;

/* Seconds from a monotonic clock. */
double apmt_now(void);

/* Start tracing after the MPI library is initialised (idempotent); thread_level is what
 * MPI_Init_thread provided, or MPI_THREAD_SINGLE. */
void apmt_start(int thread_level);

/* Write this rank's trace; called before the MPI library is finalised. */
void apmt_finish(void);

/* Count one call of op with peer (a world rank or PEER_*) and bytes, taking from start until
 * now: the time the program spent in the call, this library's bookkeeping included. */
void apmt_record(enum apmt_op op, int peer, int64_t bytes, double start);

/* The MPI_COMM_WORLD rank of rank in comm (the remote group of an intercommunicator), or
 * PEER_ANY / PEER_PROC_NULL for those wildcards. */
int apmt_world_peer(MPI_Comm comm, int rank);

/* The MPI_COMM_WORLD rank of rank in the group of win, or PEER_PROC_NULL for MPI_PROC_NULL. */
int apmt_win_peer(MPI_Win win, int rank);

/* count elements of type in bytes; 0 for a null or invalid type. */
int64_t apmt_volume(int64_t count, MPI_Datatype type);

/* The sum of counts[0..n-1]. */
int64_t apmt_sum(const int *counts, int n);

/* The number of ranks a collective on comm exchanges with: its size, or its remote size for
 * an intercommunicator. */
int apmt_comm_ranks(MPI_Comm comm);

/* The rank of the caller in comm. */
int apmt_comm_rank(MPI_Comm comm);

/* Count a point-to-point call: peer is a rank of comm (or a wildcard), count elements of
 * type moved. */
void apmt_p2p(enum apmt_op op, MPI_Comm comm, int peer, int64_t count, MPI_Datatype type,
              double start);

/* Count a completed receive or probe of source in comm: the peer and the size come from the
 * status when it has them (MPI_ANY_SOURCE, a message shorter than the buffer). */
void apmt_received(enum apmt_op op, MPI_Comm comm, int source, const MPI_Status *status,
                   int64_t count, MPI_Datatype type, double start);

/* Count a one-sided call: target is a rank of win's group, count elements of type moved
 * (0 for a synchronisation call naming a target). */
void apmt_rma(enum apmt_op op, MPI_Win win, int target, int64_t count, MPI_Datatype type,
              double start);

/* Count MPI_Get_accumulate or MPI_Rget_accumulate (op) with MPI_Op operation: the origin's
 * contribution, or with MPI_NO_OP (an atomic read, whose origin arguments are not
 * significant) the result's size. */
void apmt_get_accumulate(enum apmt_op op, MPI_Win win, int target, MPI_Op operation,
                         int origin_count, MPI_Datatype origin_type, int result_count,
                         MPI_Datatype result_type, double start);

/* Persistent requests (apmt_pmpi.c). apmt_persistent notes a request that op (OP_Send_init,
 * ..., OP_Recv_init) created, to peer (a rank of comm, or a wildcard) with count elements of
 * type; a request already in the table (a freed handle the MPI library reuses) is replaced.
 * apmt_started counts the n requests that a start call (OP_Start, OP_Startall) begun at start
 * has started, each one a call of its operation with its peer and bytes and an even share of
 * the time; the shares of requests not in the table go to one call of the start call itself.
 * apmt_request_freed forgets a request. The requests are read through at (C handles, or
 * Fortran ones converted with PMPI_Request_f2c). */
typedef MPI_Request apmt_request_at(const void *requests, int i);
void apmt_persistent(enum apmt_op op, MPI_Request request, MPI_Comm comm, int peer,
                     int64_t count, MPI_Datatype type);
void apmt_started(enum apmt_op call, int n, const void *requests, apmt_request_at *at,
                  double start);
void apmt_request_freed(MPI_Request request);

/* Count a collective call as op (collectives.c): the blocking operation (OP_Bcast) or its
 * non-blocking form (OP_Ibcast), whose bytes are the same and counted at the call that starts
 * it. The bytes are the calling rank's send volume, as each function documents; in_place says
 * the send (for scatters, the receive) buffer was MPI_IN_PLACE, whose count and type
 * arguments are then not significant. */
void apmt_bcast(enum apmt_op op, int count, MPI_Datatype type, double start);
void apmt_reduction(enum apmt_op op, int count, MPI_Datatype type, double start);
void apmt_reduce_scatter(enum apmt_op op, const int *recvcounts, MPI_Datatype type,
                         MPI_Comm comm, double start);
void apmt_reduce_scatter_block(enum apmt_op op, int recvcount, MPI_Datatype type, MPI_Comm comm,
                               double start);
void apmt_alltoall(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, double start);
void apmt_alltoallv(enum apmt_op op, int in_place, const int *sendcounts, MPI_Datatype sendtype,
                    const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm, double start);
void apmt_allgather(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                    int recvcount, MPI_Datatype recvtype, double start);
void apmt_allgatherv(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                     const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm, double start);
void apmt_gather(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                 int recvcount, MPI_Datatype recvtype, double start);
void apmt_gatherv(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                  const int *recvcounts, MPI_Datatype recvtype, int root, double start);
void apmt_scatter(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                  int recvcount, MPI_Datatype recvtype, double start);
void apmt_scatterv(enum apmt_op op, int in_place, const int *sendcounts, MPI_Datatype sendtype,
                   int recvcount, MPI_Datatype recvtype, int root, double start);
void apmt_barrier(enum apmt_op op, double start);

/* Neighborhood collectives (collectives.c): the bytes the calling rank sends to its
 * out-neighbours. apmt_neighbor_blocks: sendcount elements of sendtype to each
 * (MPI_Neighbor_allgather[v], MPI_Neighbor_alltoall); apmt_neighbor_alltoallv: sendcounts[i]
 * to neighbour i; apmt_neighbor_alltoallw: sendcounts[i] of the type of neighbour i, from
 * sendtypes (C) or, when that is NULL, f_sendtypes (Fortran handles). */
void apmt_neighbor_blocks(enum apmt_op op, int sendcount, MPI_Datatype sendtype, MPI_Comm comm,
                          double start);
void apmt_neighbor_alltoallv(enum apmt_op op, const int *sendcounts, MPI_Datatype sendtype,
                             MPI_Comm comm, double start);
void apmt_neighbor_alltoallw(enum apmt_op op, const int *sendcounts,
                             const MPI_Datatype *sendtypes, const MPI_Fint *f_sendtypes,
                             MPI_Comm comm, double start);

#pragma GCC visibility pop

#endif
