/* A run that dies before MPI_Finalize on one rank, with 2 ranks: rank 1 sends rank 0 an int
 * and finalizes (writing its trace); rank 0 receives it, waits until rank 1's trace exists
 * (at most 20 s), and calls MPI_Abort, so it never writes one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, value = 0;
    char path[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        MPI_Send(&value, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    MPI_Recv(&value, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const char *dir = getenv("APMT_PMPI_DIR");
    snprintf(path, sizeof path, "%s/pmpi.1.tsv", dir ? dir : ".");
    for (int i = 0; i < 2000 && access(path, F_OK) != 0; i++)
        usleep(10000);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 1;
}
