/* Neighborhood collectives, with 3 ranks (tests/test_pmpi.py knows the exact traffic); rank r
 * of 3, on four topologies of MPI_COMM_WORLD:
 *   a ring (1-D periodic cartesian: 2 neighbours, r-1 and r+1): MPI_Neighbor_allgather of 2
 *   ints, MPI_Neighbor_alltoall of 3 doubles to each, MPI_Ineighbor_alltoall of 1 int to each;
 *   a line (1-D non-periodic cartesian: rank 0 has MPI_PROC_NULL before it, rank 2 after it):
 *   MPI_Neighbor_alltoallv of r+1 ints before and r+2 after, MPI_Ineighbor_allgather of 1
 *   double, MPI_Ineighbor_alltoallv as the blocking one in doubles;
 *   a directed graph (MPI_Dist_graph_create_adjacent, edges 0->1, 0->2, 1->2, so rank 2 sends
 *   nothing): MPI_Neighbor_allgatherv of 4 ints, MPI_Ineighbor_allgatherv of 2 doubles,
 *   MPI_Neighbor_alltoallw and MPI_Ineighbor_alltoallw of s+d elements from s to d, ints to 1
 *   and doubles to 2;
 *   a triangle (MPI_Graph_create, each rank a neighbour of the other two):
 *   MPI_Neighbor_alltoall of 5 chars to each.
 * The non-blocking ones are completed by one MPI_Waitall.
 */
#include <mpi.h>

#define N 64

/* The type of the elements that a rank sends to rank `to` in the directed graph. */
static MPI_Datatype type_to(int to)
{
    return to == 1 ? MPI_INT : MPI_DOUBLE;
}

int main(int argc, char **argv)
{
    int rank, size, dims[1] = {3}, periodic[1] = {1}, not_periodic[1] = {0};
    int ints[N] = {0}, gathered[N], received[N];
    double doubles[N] = {0}, dgathered[N], dreceived[N], wsend[N] = {0}, wreceived[N];
    char chars[N] = {0}, creceived[N];
    MPI_Comm ring, line, graph, triangle;
    MPI_Request requests[5];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3)
        MPI_Abort(MPI_COMM_WORLD, 2);

    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 0, &ring);
    MPI_Neighbor_allgather(ints, 2, MPI_INT, gathered, 2, MPI_INT, ring);
    MPI_Neighbor_alltoall(doubles, 3, MPI_DOUBLE, dreceived, 3, MPI_DOUBLE, ring);
    MPI_Ineighbor_alltoall(ints, 1, MPI_INT, received, 1, MPI_INT, ring, &requests[0]);

    /* a rank sends r+1 to the rank before, r+2 to the one after, and so receives as much */
    int counts[2] = {rank + 1, rank + 2}, displs[2] = {0, 8};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, not_periodic, 0, &line);
    MPI_Neighbor_alltoallv(ints, counts, displs, MPI_INT, received + 16, counts, displs, MPI_INT,
                           line);
    MPI_Ineighbor_allgather(doubles, 1, MPI_DOUBLE, dgathered, 1, MPI_DOUBLE, line,
                            &requests[1]);
    MPI_Ineighbor_alltoallv(doubles, counts, displs, MPI_DOUBLE, dreceived + 16, counts, displs,
                            MPI_DOUBLE, line, &requests[2]);

    int sources[3][2] = {{0}, {0}, {0, 1}}, destinations[3][2] = {{1, 2}, {2}, {0}};
    int indegree = rank, outdegree = 2 - rank, gathers[2] = {4, 4}, gather_displs[2] = {0, 8};
    int wcounts[2] = {0}, rcounts[2] = {0};
    MPI_Aint wdispls[2] = {0, 128}, rdispls[2] = {0, 128};
    MPI_Datatype wtypes[2] = {MPI_INT, MPI_INT}, rtypes[2] = {MPI_INT, MPI_INT};
    for (int i = 0; i < outdegree; i++) {
        wcounts[i] = rank + destinations[rank][i];
        wtypes[i] = type_to(destinations[rank][i]);
    }
    for (int i = 0; i < indegree; i++) {
        rcounts[i] = sources[rank][i] + rank;
        rtypes[i] = type_to(rank);
    }
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indegree, sources[rank], MPI_UNWEIGHTED,
                                   outdegree, destinations[rank], MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &graph);
    MPI_Neighbor_allgatherv(ints, 4, MPI_INT, gathered, gathers, gather_displs, MPI_INT, graph);
    MPI_Ineighbor_allgatherv(doubles, 2, MPI_DOUBLE, dgathered + 16, gathers, gather_displs,
                             MPI_DOUBLE, graph, &requests[3]);
    MPI_Neighbor_alltoallw(wsend, wcounts, wdispls, wtypes, wreceived, rcounts, rdispls, rtypes,
                           graph);
    MPI_Ineighbor_alltoallw(wsend, wcounts, wdispls, wtypes, wreceived + 32, rcounts, rdispls,
                            rtypes, graph, &requests[4]);
    MPI_Waitall(5, requests, MPI_STATUSES_IGNORE);

    int index[3] = {2, 4, 6}, edges[6] = {1, 2, 0, 2, 0, 1};
    MPI_Graph_create(MPI_COMM_WORLD, 3, index, edges, 0, &triangle);
    MPI_Neighbor_alltoall(chars, 5, MPI_CHAR, creceived, 5, MPI_CHAR, triangle);

    MPI_Comm_free(&triangle);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&line);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
