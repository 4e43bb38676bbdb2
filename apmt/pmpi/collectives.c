/* apmt's PMPI tracing library: the bytes of each collective, shared by all bindings.
 *
 * The bytes of a collective call are the calling rank's send volume, the data it puts in:
 * the size of its block for the operations where every rank contributes one block (the root
 * of a broadcast or scatter contributes the data every rank gets), the sum over all
 * destinations for the all-to-all exchanges. Forwarding inside the MPI library's algorithms
 * (trees, rings) is not counted: the numbers depend on the call's arguments only, so they are
 * the same on every MPI library and every network.
 *
 * Neighborhood collectives (MPI_Neighbor_allgather, ...) follow the same rule on the
 * communicator's topology: the rank's send volume is the blocks it sends to its out-neighbours
 * (MPI_IN_PLACE is not allowed for them). A cartesian topology's neighbours are, per dimension,
 * the ranks before and after; at the edge of a non-periodic dimension that is MPI_PROC_NULL,
 * whose block the standard leaves in the buffer but no data moves for: it is not counted, as a
 * send to MPI_PROC_NULL has no bytes. A neighbour that is the rank itself (a periodic dimension
 * of one rank) is counted, as the all-to-alls count the block a rank sends itself.
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

/* ---- neighborhood collectives ------------------------------------------------------------ */

/* The topology of comm (MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH) and in degree its out-degree,
 * the number of blocks in a neighborhood collective's send buffer (2 * ndims for a cartesian
 * one); MPI_UNDEFINED and 0 without a topology. */
static int out_blocks(MPI_Comm comm, int *degree)
{
    int topology = MPI_UNDEFINED, in = 0, weighted = 0;
    *degree = 0;
    PMPI_Topo_test(comm, &topology);
    if (topology == MPI_CART) {
        PMPI_Cartdim_get(comm, degree);
        *degree *= 2;
    } else if (topology == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, apmt_comm_rank(comm), degree);
    } else if (topology == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &in, degree, &weighted);
    }
    return topology;
}

/* Whether block i of the send buffer goes to a rank: for a cartesian topology, whether the
 * neighbour before (i even) or after (i odd) the rank in dimension i / 2 is not MPI_PROC_NULL;
 * for graphs always. */
static int sent(MPI_Comm comm, int topology, int i)
{
    int before = MPI_PROC_NULL, after = MPI_PROC_NULL;
    if (topology != MPI_CART)
        return 1;
    PMPI_Cart_shift(comm, i / 2, 1, &before, &after);
    return (i % 2 ? after : before) != MPI_PROC_NULL;
}

/* MPI_Neighbor_allgather, MPI_Neighbor_allgatherv, MPI_Neighbor_alltoall: sendcount * size
 * times the out-neighbours. For the all-to-all it is the blocks, as MPI_Alltoall's; the
 * allgathers send their one block to each out-neighbour as a message of its own (MPI_Allgather
 * counts it once, as its algorithms forward it, but a neighbourhood has no such sharing). */
void apmt_neighbor_blocks(enum apmt_op op, int sendcount, MPI_Datatype sendtype, MPI_Comm comm,
                          double start)
{
    if (!apmt_tracing)
        return;
    int degree, topology = out_blocks(comm, &degree);
    int64_t blocks = 0;
    for (int i = 0; i < degree; i++)
        blocks += sent(comm, topology, i);
    apmt_record(op, PEER_NONE, apmt_volume(blocks * sendcount, sendtype), start);
}

/* MPI_Neighbor_alltoallv: the sum of sendcounts over the out-neighbours, times size. */
void apmt_neighbor_alltoallv(enum apmt_op op, const int *sendcounts, MPI_Datatype sendtype,
                             MPI_Comm comm, double start)
{
    if (!apmt_tracing)
        return;
    int degree, topology = out_blocks(comm, &degree);
    int64_t count = 0;
    for (int i = 0; i < degree; i++)
        if (sent(comm, topology, i))
            count += sendcounts[i];
    apmt_record(op, PEER_NONE, apmt_volume(count, sendtype), start);
}

/* MPI_Neighbor_alltoallw: the sum over the out-neighbours of sendcounts[i] * the size of
 * sendtypes[i]. */
void apmt_neighbor_alltoallw(enum apmt_op op, const int *sendcounts,
                             const MPI_Datatype *sendtypes, const MPI_Fint *f_sendtypes,
                             MPI_Comm comm, double start)
{
    if (!apmt_tracing)
        return;
    int degree, topology = out_blocks(comm, &degree);
    int64_t bytes = 0;
    for (int i = 0; i < degree; i++)
        if (sent(comm, topology, i))
            bytes += apmt_volume(sendcounts[i],
                                 sendtypes ? sendtypes[i] : PMPI_Type_f2c(f_sendtypes[i]));
    apmt_record(op, PEER_NONE, bytes, start);
}
