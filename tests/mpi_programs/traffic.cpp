// The traffic of traffic.c (see there), from C++ (the C bindings, with std::vector buffers).
#include <mpi.h>

#include <vector>

int main(int argc, char **argv)
{
    std::vector<double> big(1000), seven(7), reduced(7), gathered(2);
    std::vector<std::vector<double>> buffers(2, std::vector<double>(1000));
    std::vector<int> small(5), sum(10), ones(10, 1), out(6), in(6), pair(4), mine(2);
    std::vector<char> message(100);
    MPI_Request requests[2], none = MPI_REQUEST_NULL;
    int rank, flag;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < 3; i++)
            MPI_Send(big.data(), 1000, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
        for (int i = 0; i < 2; i++) {
            MPI_Isend(big.data(), 1000, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, &requests[0]);
            MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
        }
        MPI_Recv(small.data(), 5, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int i = 0; i < 3; i++)
            MPI_Recv(big.data(), 1000, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2; i++)
            MPI_Irecv(buffers[i].data(), 1000, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD,
                      &requests[i]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        MPI_Send(small.data(), 5, MPI_INT, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Test(&none, &flag, MPI_STATUS_IGNORE);
    MPI_Iprobe(1 - rank, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        MPI_Allreduce(ones.data(), sum.data(), 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(message.data(), 100, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Alltoall(out.data(), 3, MPI_INT, in.data(), 3, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce(seven.data(), reduced.data(), 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(mine.data(), 2, MPI_INT, pair.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(pair.data(), 2, MPI_INT, mine.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
    gathered[rank] = rank;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered.data(), 1, MPI_DOUBLE,
                  MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
