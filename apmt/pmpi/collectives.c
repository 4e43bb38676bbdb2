/* apmt's PMPI tracing library: the bytes of each collective, shared by all bindings.
 *
 * The bytes of a collective call are the calling rank's send volume, the data it puts in:
 * the size of its block for the operations where every rank contributes one block (the root
 * of a broadcast or scatter contributes the data every rank gets), the sum over all
 * destinations for the all-to-all exchanges. Forwarding inside the MPI library's algorithms
 * (trees, rings) is not counted: the numbers depend on the call's arguments only, so they are
 * the same on every MPI library and every network.
 *
 * Each function counts the blocking operation and its non-blocking form alike (op: OP_Bcast or
 * OP_Ibcast, ...): a non-blocking collective has the same bytes, counted with the time of the
 * call that starts it; the time spent completing it goes to the MPI_Wait* and MPI_Test* calls.
 */
#include "apmt_pmpi.h"

/* MPI_Bcast: count * size on every rank, the root's message that every rank gets. */
void apmt_bcast(enum apmt_op op, int count, MPI_Datatype type, double start)
{
    if (apmt_tracing)
        apmt_record(op, PEER_NONE, apmt_volume(count, type), start);
}

/* MPI_Reduce, MPI_Allreduce, MPI_Scan, MPI_Exscan: count * size on every rank, the vector
 * each rank contributes to the reduction (also with MPI_IN_PLACE, where the receive buffer
 * holds it). */
void apmt_reduction(enum apmt_op op, int count, MPI_Datatype type, double start)
{
    if (apmt_tracing)
        apmt_record(op, PEER_NONE, apmt_volume(count, type), start);
}

/* MPI_Reduce_scatter: sum(recvcounts) * size, the whole vector each rank contributes. */
void apmt_reduce_scatter(enum apmt_op op, const int *recvcounts, MPI_Datatype type,
                         MPI_Comm comm, double start)
{
    if (!apmt_tracing)
        return;
    int ranks = apmt_comm_ranks(comm);
    apmt_record(op, PEER_NONE, apmt_volume(apmt_sum(recvcounts, ranks), type), start);
}

/* MPI_Reduce_scatter_block: P * recvcount * size, the whole vector each rank contributes. */
void apmt_reduce_scatter_block(enum apmt_op op, int recvcount, MPI_Datatype type, MPI_Comm comm,
                               double start)
{
    if (!apmt_tracing)
        return;
    int64_t count = (int64_t)recvcount * apmt_comm_ranks(comm);
    apmt_record(op, PEER_NONE, apmt_volume(count, type), start);
}

/* MPI_Alltoall: P * sendcount * size, one block to each of the P ranks (itself included);
 * with MPI_IN_PLACE the receive count and type describe the blocks. */
void apmt_alltoall(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, double start)
{
    if (!apmt_tracing)
        return;
    int64_t ranks = apmt_comm_ranks(comm);
    int64_t bytes = in_place ? apmt_volume(ranks * recvcount, recvtype)
                             : apmt_volume(ranks * sendcount, sendtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Alltoallv: sum(sendcounts) * size, all the blocks the rank sends (to itself too);
 * with MPI_IN_PLACE, sum(recvcounts) * size of the receive type. */
void apmt_alltoallv(enum apmt_op op, int in_place, const int *sendcounts, MPI_Datatype sendtype,
                    const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm, double start)
{
    if (!apmt_tracing)
        return;
    int ranks = apmt_comm_ranks(comm);
    int64_t bytes = in_place ? apmt_volume(apmt_sum(recvcounts, ranks), recvtype)
                             : apmt_volume(apmt_sum(sendcounts, ranks), sendtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Allgather: sendcount * size, the rank's block that every rank gets (not P times it);
 * with MPI_IN_PLACE the block is recvcount elements of the receive type. */
void apmt_allgather(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                    int recvcount, MPI_Datatype recvtype, double start)
{
    if (!apmt_tracing)
        return;
    int64_t bytes = in_place ? apmt_volume(recvcount, recvtype)
                             : apmt_volume(sendcount, sendtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Allgatherv: sendcount * size, the rank's block; with MPI_IN_PLACE its block is
 * recvcounts[rank] elements of the receive type. */
void apmt_allgatherv(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                     const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm, double start)
{
    if (!apmt_tracing)
        return;
    int64_t bytes = in_place ? apmt_volume(recvcounts[apmt_comm_rank(comm)], recvtype)
                             : apmt_volume(sendcount, sendtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Gather: sendcount * size on every rank, the root included (its own block); the root
 * with MPI_IN_PLACE has its block in place: recvcount elements of the receive type. */
void apmt_gather(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                 int recvcount, MPI_Datatype recvtype, double start)
{
    if (!apmt_tracing)
        return;
    int64_t bytes = in_place ? apmt_volume(recvcount, recvtype)
                             : apmt_volume(sendcount, sendtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Gatherv: sendcount * size on every rank; the root with MPI_IN_PLACE:
 * recvcounts[root] elements of the receive type. */
void apmt_gatherv(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                  const int *recvcounts, MPI_Datatype recvtype, int root, double start)
{
    if (!apmt_tracing)
        return;
    int64_t bytes = in_place ? apmt_volume(recvcounts[root], recvtype)
                             : apmt_volume(sendcount, sendtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Scatter: recvcount * size on every rank, the block the root provides for it (so the
 * number is the same on every rank, like a broadcast's); the root with MPI_IN_PLACE as its
 * receive buffer keeps its block in place: sendcount elements of the send type. */
void apmt_scatter(enum apmt_op op, int in_place, int sendcount, MPI_Datatype sendtype,
                  int recvcount, MPI_Datatype recvtype, double start)
{
    if (!apmt_tracing)
        return;
    int64_t bytes = in_place ? apmt_volume(sendcount, sendtype)
                             : apmt_volume(recvcount, recvtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Scatterv: recvcount * size on every rank; the root with MPI_IN_PLACE:
 * sendcounts[root] elements of the send type. */
void apmt_scatterv(enum apmt_op op, int in_place, const int *sendcounts, MPI_Datatype sendtype,
                   int recvcount, MPI_Datatype recvtype, int root, double start)
{
    if (!apmt_tracing)
        return;
    int64_t bytes = in_place ? apmt_volume(sendcounts[root], sendtype)
                             : apmt_volume(recvcount, recvtype);
    apmt_record(op, PEER_NONE, bytes, start);
}

/* MPI_Barrier: no data. */
void apmt_barrier(enum apmt_op op, double start)
{
    if (apmt_tracing)
        apmt_record(op, PEER_NONE, 0, start);
}
