/* The traffic every language's test program makes, with 2 ranks (tests/test_pmpi.py knows
 * its exact counts and bytes):
 *   rank 0 -> 1: 3 x MPI_Send of 1000 doubles, then 2 x (MPI_Isend of 1000 doubles, MPI_Wait);
 *   rank 1: 3 x MPI_Recv from 0, 2 x MPI_Irecv from MPI_ANY_SOURCE, one MPI_Waitall;
 *   rank 1 -> 0: MPI_Send of 5 ints, received with MPI_ANY_SOURCE and MPI_STATUS_IGNORE;
 *   every rank: MPI_Test of a null request, MPI_Iprobe of the other rank (no message),
 *   4 x MPI_Allreduce of 10 ints, MPI_Bcast of 100 bytes, MPI_Barrier, MPI_Alltoall of 3 ints
 *   per rank, MPI_Reduce of 7 doubles, MPI_Gather and MPI_Scatter of 2 ints per rank, and
 *   MPI_Allgather in place of 1 double per rank.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    double big[1000] = {0}, gathered[2];
    int rank, flag, small[5] = {0}, sum[10] = {0}, ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int out[6] = {0}, in[6], pair[4] = {0}, mine[2] = {0};
    char message[100] = {0};
    double seven[7] = {0}, reduced[7];
    MPI_Request requests[2], none = MPI_REQUEST_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < 3; i++)
            MPI_Send(big, 1000, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
        for (int i = 0; i < 2; i++) {
            MPI_Isend(big, 1000, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, &requests[0]);
            MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
        }
        MPI_Recv(small, 5, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        static double buffers[2][1000];
        for (int i = 0; i < 3; i++)
            MPI_Recv(big, 1000, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2; i++)
            MPI_Irecv(buffers[i], 1000, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD,
                      &requests[i]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        MPI_Send(small, 5, MPI_INT, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Test(&none, &flag, MPI_STATUS_IGNORE);
    MPI_Iprobe(1 - rank, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        MPI_Allreduce(ones, sum, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(message, 100, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Alltoall(out, 3, MPI_INT, in, 3, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce(seven, reduced, 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(mine, 2, MPI_INT, pair, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(pair, 2, MPI_INT, mine, 2, MPI_INT, 0, MPI_COMM_WORLD);
    gathered[rank] = rank;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
