/* Every other counted C call, with 3 ranks (tests/test_pmpi.py knows the exact traffic):
 *   a communicator with the ranks reversed: its rank 0 (world 2) sends 4 ints to its rank 1
 *   (world 1), so the peers are world ranks 1 and 2;
 *   every rank: MPI_Send of 1 int to MPI_PROC_NULL and MPI_Recv from it;
 *   a ring: MPI_Sendrecv of 8 doubles and MPI_Sendrecv_replace of 2 ints to rank + 1;
 *   0 -> 1: MPI_Ssend of 10 chars, which rank 1 finds with MPI_Probe(MPI_ANY_SOURCE) and
 *   receives into a 100-char buffer (10 bytes arrive);
 *   1 -> 2: MPI_Bsend of 3 doubles; rank 2: MPI_Irecv and MPI_Waitany;
 *   0 -> 2: MPI_Rsend of 5 ints after a barrier; rank 2: MPI_Irecv before it, MPI_Waitsome;
 *   0 -> 2: MPI_Issend of 6 ints and MPI_Wait; rank 2: MPI_Recv;
 *   every rank: MPI_Testall, MPI_Testany and MPI_Testsome of null requests (one call each);
 *   collectives, rank r of 3: MPI_Alltoallv of r+1 ints to each rank, MPI_Allgatherv of r+1
 *   doubles, MPI_Gatherv and MPI_Scatterv of r+1 ints (root 0), MPI_Reduce_scatter of counts
 *   {1, 2, 3} doubles, MPI_Reduce_scatter_block of 2 ints, MPI_Scan and MPI_Exscan of 3 ints,
 *   MPI_Alltoall of 2 doubles, MPI_Allgather of 4 ints, MPI_Gather of 2 doubles with
 *   MPI_IN_PLACE at the root, MPI_Alltoall in place of 1 int, MPI_Bcast of 5 ints on the
 *   reversed communicator.
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, reversed_rank, index, count, indices[2], flag, ints[64] = {0}, more[64];
    double doubles[64] = {0}, other[64];
    char chars[100] = {0};
    MPI_Comm reversed;
    MPI_Request request, requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int next = (rank + 1) % 3, previous = (rank + 2) % 3;

    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);
    MPI_Comm_rank(reversed, &reversed_rank);
    if (reversed_rank == 0)
        MPI_Send(ints, 4, MPI_INT, 1, 10, reversed);
    else if (reversed_rank == 1)
        MPI_Recv(ints, 4, MPI_INT, 0, 10, reversed, MPI_STATUS_IGNORE);

    MPI_Send(ints, 1, MPI_INT, MPI_PROC_NULL, 11, MPI_COMM_WORLD);
    MPI_Recv(ints, 1, MPI_INT, MPI_PROC_NULL, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    MPI_Sendrecv(doubles, 8, MPI_DOUBLE, next, 12, other, 8, MPI_DOUBLE, previous, 12,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv_replace(ints, 2, MPI_INT, next, 13, previous, 13, MPI_COMM_WORLD, &status);

    if (rank == 0) {
        MPI_Ssend(chars, 10, MPI_CHAR, 1, 14, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Probe(MPI_ANY_SOURCE, 14, MPI_COMM_WORLD, &status);
        MPI_Recv(chars, 100, MPI_CHAR, status.MPI_SOURCE, 14, MPI_COMM_WORLD, &status);
    }

    if (rank == 1) {
        int space = 1000 + MPI_BSEND_OVERHEAD;
        void *buffer = malloc(space);
        MPI_Buffer_attach(buffer, space);
        MPI_Bsend(doubles, 3, MPI_DOUBLE, 2, 15, MPI_COMM_WORLD);
        MPI_Buffer_detach(&buffer, &space);
        free(buffer);
    } else if (rank == 2) {
        MPI_Irecv(other, 3, MPI_DOUBLE, 1, 15, MPI_COMM_WORLD, &requests[0]);
        MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE);
    }

    if (rank == 2)
        MPI_Irecv(more, 5, MPI_INT, 0, 16, MPI_COMM_WORLD, &requests[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_Rsend(ints, 5, MPI_INT, 2, 16, MPI_COMM_WORLD);
    else if (rank == 2)
        MPI_Waitsome(2, requests, &count, indices, MPI_STATUSES_IGNORE);

    if (rank == 0) {
        MPI_Issend(ints, 6, MPI_INT, 2, 17, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else if (rank == 2) {
        MPI_Recv(more, 6, MPI_INT, 0, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    requests[0] = requests[1] = MPI_REQUEST_NULL;
    MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE);
    MPI_Testany(2, requests, &index, &flag, MPI_STATUS_IGNORE);
    MPI_Testsome(2, requests, &count, indices, MPI_STATUSES_IGNORE);

    int counts[3], displs[3], mine[3], mine_displs[3] = {0, 8, 16};
    for (int i = 0; i < 3; i++) {
        counts[i] = rank + 1; /* what this rank sends to each */
        mine[i] = i + 1;      /* what rank i sends to this one */
        displs[i] = 8 * i;
    }
    MPI_Alltoallv(ints, counts, displs, MPI_INT, more, mine, mine_displs, MPI_INT,
                  MPI_COMM_WORLD);
    MPI_Allgatherv(doubles, rank + 1, MPI_DOUBLE, other, mine, mine_displs, MPI_DOUBLE,
                   MPI_COMM_WORLD);
    MPI_Gatherv(ints, rank + 1, MPI_INT, more, mine, mine_displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(ints, mine, mine_displs, MPI_INT, more, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    int block_counts[3] = {1, 2, 3};
    MPI_Reduce_scatter(doubles, other, block_counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(ints, more, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(ints, more, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(ints, more, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Alltoall(doubles, 2, MPI_DOUBLE, other, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Allgather(ints, 4, MPI_INT, more, 4, MPI_INT, MPI_COMM_WORLD);
    if (rank == 0)
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, other, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else
        MPI_Gather(doubles, 2, MPI_DOUBLE, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Bcast(ints, 5, MPI_INT, 0, reversed);

    MPI_Comm_free(&reversed);
    MPI_Finalize();
    return 0;
}
