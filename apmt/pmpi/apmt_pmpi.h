/* apmt's PMPI tracing library: what the C and Fortran wrappers share.
 *
 * Loaded with LD_PRELOAD, the library defines the MPI functions (C: MPI_Send, ...; Fortran:
 * mpi_send_, ..., mpi_send_f08_) and forwards each call to the MPI library's profiling entry
 * (PMPI_Send, pmpi_send_, pmpi_send_f08_), counting per (operation, peer) the calls, the bytes
 * and the seconds spent. At MPI_Finalize each rank writes $APMT_PMPI_DIR/pmpi.<rank>.tsv.
 * Non-blocking calls (MPI_Isend, MPI_Iallreduce, ...) count their bytes and the time of the
 * call that starts them under their own name; the time spent completing them goes to the
 * MPI_Wait* and MPI_Test* calls.
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
    X(Ireduce_scatter_block) X(Iscan) X(Iexscan) X(Ibarrier)

enum apmt_op {
#define APMT_ENUM(name) OP_##name,
    APMT_OPERATIONS(APMT_ENUM)
#undef APMT_ENUM
    OP_COUNT
};

/* Peers that are not ranks. Ranks are always ranks of MPI_COMM_WORLD. */
#define PEER_NONE (-1)     /* collectives, waits and tests */
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

#pragma GCC visibility pop

#endif
