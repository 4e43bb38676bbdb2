/* Every non-blocking collective once, with 3 ranks (tests/test_pmpi.py knows the exact
 * traffic); rank r of 3:
 *   MPI_Ibarrier, then MPI_Wait;
 *   MPI_Iallreduce in place of 6 ints, then MPI_Wait; MPI_Allreduce of 1 int beside it;
 *   then all at once, completed by one MPI_Waitall: MPI_Ibcast of 7 ints (root 1), MPI_Ireduce
 *   of 5 doubles (root 0), MPI_Ialltoall of 2 doubles, MPI_Ialltoallv of r+1 ints to each
 *   rank, MPI_Iallgather in place of 3 doubles, MPI_Iallgatherv of r+1 doubles, MPI_Igather
 *   of 4 ints with MPI_IN_PLACE at the root (2), MPI_Igatherv of r+1 ints (root 0),
 *   MPI_Iscatter of 10 chars (root 0), MPI_Iscatterv of r+1 ints with MPI_IN_PLACE at the root
 *   (0), MPI_Ireduce_scatter of counts {1, 2, 3} doubles, MPI_Ireduce_scatter_block of 2 ints,
 *   MPI_Iscan of 3 ints and MPI_Iexscan of 2 doubles.
 */
#include <mpi.h>

#define N 64

int main(int argc, char **argv)
{
    int rank, size, one = 1, sum;
    int send[N] = {0}, reduced[N] = {0}, bcast[N] = {0}, alltoallv[N], gathered[N] = {0};
    int gatherv[N], scatterv[N] = {0}, block[N], scan[N];
    double dsend[N] = {0}, dreduced[N], alltoall[N], allgather[N] = {0}, allgatherv[N];
    double reduce_scatter[N], exscan[N];
    char chars[N] = {0}, scattered[N];
    MPI_Request request, requests[14];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3)
        MPI_Abort(MPI_COMM_WORLD, 2);

    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Iallreduce(MPI_IN_PLACE, reduced, 6, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    int counts[3], displs[3], mine[3], mine_displs[3] = {0, 8, 16}, blocks[3] = {1, 2, 3};
    for (int i = 0; i < 3; i++) {
        counts[i] = rank + 1; /* what this rank sends to each */
        mine[i] = i + 1;      /* what rank i sends to this one */
        displs[i] = 8 * i;
    }
    MPI_Ibcast(bcast, 7, MPI_INT, 1, MPI_COMM_WORLD, &requests[0]);
    MPI_Ireduce(dsend, dreduced, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &requests[1]);
    MPI_Ialltoall(dsend, 2, MPI_DOUBLE, alltoall, 2, MPI_DOUBLE, MPI_COMM_WORLD, &requests[2]);
    MPI_Ialltoallv(send, counts, displs, MPI_INT, alltoallv, mine, mine_displs, MPI_INT,
                   MPI_COMM_WORLD, &requests[3]);
    MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, allgather, 3, MPI_DOUBLE, MPI_COMM_WORLD,
                   &requests[4]);
    MPI_Iallgatherv(dsend, rank + 1, MPI_DOUBLE, allgatherv, mine, mine_displs, MPI_DOUBLE,
                    MPI_COMM_WORLD, &requests[5]);
    if (rank == 2)
        MPI_Igather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 4, MPI_INT, 2, MPI_COMM_WORLD,
                    &requests[6]);
    else
        MPI_Igather(send, 4, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 2, MPI_COMM_WORLD,
                    &requests[6]);
    MPI_Igatherv(send, rank + 1, MPI_INT, gatherv, mine, mine_displs, MPI_INT, 0,
                 MPI_COMM_WORLD, &requests[7]);
    MPI_Iscatter(chars, 10, MPI_CHAR, scattered, 10, MPI_CHAR, 0, MPI_COMM_WORLD, &requests[8]);
    if (rank == 0)
        MPI_Iscatterv(scatterv, mine, mine_displs, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                      0, MPI_COMM_WORLD, &requests[9]);
    else
        MPI_Iscatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, scatterv, rank + 1, MPI_INT, 0,
                      MPI_COMM_WORLD, &requests[9]);
    MPI_Ireduce_scatter(dsend, reduce_scatter, blocks, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                        &requests[10]);
    MPI_Ireduce_scatter_block(send, block, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &requests[11]);
    MPI_Iscan(send, scan, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &requests[12]);
    MPI_Iexscan(dsend, exscan, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &requests[13]);
    MPI_Waitall(14, requests, MPI_STATUSES_IGNORE);

    MPI_Finalize();
    return 0;
}
