/* A small bulk-synchronous MPI application for the workflow's end-to-end tests: each step a
 * rank computes on its share of N cells (`relax`, work ~ N/P), swaps a halo of H doubles with
 * its two ring neighbours (MPI_Sendrecv) and agrees on a residual (MPI_Allreduce).
 * Usage: ring N STEPS [H]; prints the residual. A negative N makes it fail (exit 3), as a
 * broken application would.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double relax(double *cells, long n)
{
    double change = 0.0;
    for (long i = 1; i + 1 < n; i++) {
        double next = 0.5 * cells[i] + 0.25 * (cells[i - 1] + cells[i + 1]);
        change += (next - cells[i]) * (next - cells[i]);
        cells[i] = next;
    }
    return change;
}

__attribute__((noinline)) static void swap_halo(double *halo_out, double *halo_in, int h,
                                                int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(halo_out, h, MPI_DOUBLE, right, 0, halo_in, h, MPI_DOUBLE, left, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long total = argc > 1 ? atol(argv[1]) : 1000000;
    int steps = argc > 2 ? atoi(argv[2]) : 100;
    int h = argc > 3 ? atoi(argv[3]) : 1000;
    if (total < 0) {
        if (rank == 0)
            fprintf(stderr, "ring: N must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    long n = total / size + 2;
    double *cells = malloc(n * sizeof(double));
    double *halo_out = calloc(h, sizeof(double)), *halo_in = calloc(h, sizeof(double));
    for (long i = 0; i < n; i++)
        cells[i] = (double)((i * 7919 + rank) % 1000);
    double residual = 0.0;
    for (int step = 0; step < steps; step++) {
        double local = relax(cells, n), global;
        swap_halo(halo_out, halo_in, h, rank, size);
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        residual = global;
    }
    if (rank == 0)
        printf("residual %.6g after %d steps on %d ranks\n", residual, steps, size);
    free(cells);
    free(halo_out);
    free(halo_in);
    MPI_Finalize();
    return 0;
}
