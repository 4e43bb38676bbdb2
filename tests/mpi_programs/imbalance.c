/* A load imbalance planted on purpose, for tests/test_diagnose_scaling.py.
 *
 * Usage: imbalance N [STEPS]. N units of work are shared among the P ranks (strong scaling),
 * but the last rank gets 3 times the share of the others: in each of STEPS (default 10)
 * steps every rank runs update_cells on its share, then all meet in MPI_Allreduce, so the
 * other ranks wait there for the last one; an MPI_Barrier ends the run. With one rank, that
 * rank is the last one.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* the planted hot spot: its time per rank is 3x the others' on the last rank */
__attribute__((noinline)) double update_cells(long cells)
{
    volatile double sum = 0;
    for (long i = 0; i < cells; i++)
        sum += i * 0.5;
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size;
    long total = argc > 1 ? atol(argv[1]) : 100000000;
    int steps = argc > 2 ? atoi(argv[2]) : 10;
    double local = 0, global = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* shares 1 : 1 : ... : 3, the 3 on the last rank */
    long share = total / (size + 2) * (rank == size - 1 ? 3 : 1) / steps;
    for (int step = 0; step < steps; step++) {
        local += update_cells(share);
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks %d, steps %d, result %g\n", size, steps, global);
    MPI_Finalize();
    return 0;
}
