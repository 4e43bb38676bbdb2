/* Persistent requests, with 3 ranks (tests/test_pmpi.py knows the exact traffic); rank r of 3,
 * next = r+1 and prev = r-1 (mod 3):
 *   a Send_init of 100 doubles to next and a Recv_init of 100 doubles from prev, started by
 *   MPI_Start 4 times (each pair completed by MPI_Waitall);
 *   a Send_init of 20 ints to prev and a Recv_init of 20 ints from next, started together by
 *   MPI_Startall 3 times (MPI_Waitall each);
 *   a Send_init of 7 ints to MPI_PROC_NULL, started once (MPI_Wait);
 *   on a communicator of the ranks reversed, world 2 (its rank 0) Ssend_init's 5 ints to its
 *   rank 1 (world 1), which Recv_init's 10 ints from MPI_ANY_SOURCE: each started twice
 *   (MPI_Wait each);
 *   world 0 Rsend_init's 3 doubles to world 2, whose Recv_init from MPI_ANY_SOURCE was
 *   started before a barrier (MPI_Wait each);
 *   world 1 Bsend_init's 4 ints to world 0, which receives them with MPI_Recv (MPI_Wait);
 *   every request is freed with MPI_Request_free, and the first two made again with other
 *   counts (a Send_init of 50 doubles, a Recv_init of 60) and started once by MPI_Startall,
 *   so the table must take the new sizes where the library reuses a freed request's handle.
 * The requests that only MPI_Startall started (the second pair) have equal shares of its time.
 */
#include <mpi.h>

#define N 128

int main(int argc, char **argv)
{
    int rank, size, reversed_rank, ints[N] = {0}, more[N] = {0};
    double doubles[N] = {0}, other[N] = {0};
    char attached[2000];
    MPI_Comm reversed;
    MPI_Request ring[2], back[2], nowhere, request;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int next = (rank + 1) % 3, prev = (rank + 2) % 3;

    MPI_Send_init(doubles, 100, MPI_DOUBLE, next, 1, MPI_COMM_WORLD, &ring[0]);
    MPI_Recv_init(other, 100, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, &ring[1]);
    for (int i = 0; i < 4; i++) {
        MPI_Start(&ring[1]);
        MPI_Start(&ring[0]);
        MPI_Waitall(2, ring, MPI_STATUSES_IGNORE);
    }

    MPI_Send_init(ints, 20, MPI_INT, prev, 2, MPI_COMM_WORLD, &back[0]);
    MPI_Recv_init(more, 20, MPI_INT, next, 2, MPI_COMM_WORLD, &back[1]);
    for (int i = 0; i < 3; i++) {
        MPI_Startall(2, back);
        MPI_Waitall(2, back, MPI_STATUSES_IGNORE);
    }

    MPI_Send_init(ints, 7, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &nowhere);
    MPI_Start(&nowhere);
    MPI_Wait(&nowhere, MPI_STATUS_IGNORE);
    MPI_Request_free(&nowhere);

    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);
    MPI_Comm_rank(reversed, &reversed_rank);
    if (reversed_rank <= 1) {
        if (reversed_rank == 0)
            MPI_Ssend_init(ints, 5, MPI_INT, 1, 4, reversed, &request);
        else
            MPI_Recv_init(more, 10, MPI_INT, MPI_ANY_SOURCE, 4, reversed, &request);
        for (int i = 0; i < 2; i++) {
            MPI_Start(&request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&request);
    }

    if (rank == 2) {
        MPI_Recv_init(other, 3, MPI_DOUBLE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &request);
        MPI_Start(&request);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Rsend_init(doubles, 3, MPI_DOUBLE, 2, 5, MPI_COMM_WORLD, &request);
        MPI_Start(&request);
    }
    if (rank == 0 || rank == 2) {
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Request_free(&request);
    }

    if (rank == 1) {
        MPI_Buffer_attach(attached, sizeof attached);
        MPI_Bsend_init(ints, 4, MPI_INT, 0, 6, MPI_COMM_WORLD, &request);
        MPI_Start(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Request_free(&request);
    } else if (rank == 0) {
        MPI_Recv(more, 4, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    for (int i = 0; i < 2; i++) {
        MPI_Request_free(&ring[i]);
        MPI_Request_free(&back[i]);
    }
    MPI_Send_init(doubles, 50, MPI_DOUBLE, next, 7, MPI_COMM_WORLD, &ring[0]);
    MPI_Recv_init(other, 60, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, &ring[1]);
    MPI_Startall(2, ring);
    MPI_Waitall(2, ring, MPI_STATUSES_IGNORE);
    MPI_Request_free(&ring[0]);
    MPI_Request_free(&ring[1]);

    MPI_Comm_free(&reversed);
    MPI_Finalize();
    return 0;
}
