/* A planted data-access bottleneck for apmt diagnose (tests/test_diagnose_lcpi.py).
 *
 *   strided [STRIDE [MIB]]
 *
 * sweep() walks an array of MIB MiB (default 64, more than the simulated last-level caches of
 * the shipped machine files, 32 and 40 MiB) with a fixed stride of STRIDE doubles (default
 * 4099, 32 KiB and one element: every access lands on a new cache line and page, out of the
 * prefetchers' reach), so that nearly every load misses every cache. Each next index depends
 * on the loaded value (all zeros), so the misses cannot overlap. compact() does half as many
 * loads over 16 KiB, which stays in the L1. With STRIDE 1 and MIB 0 (16 KiB) sweep() is the
 * compact variant: the same work with cache hits, for comparing two runs.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COMPACT_DOUBLES 2048L   /* 16 KiB */

__attribute__((noinline)) double sweep(const double *a, long n, long stride, long steps) {
    double sum = 0.0;
    long i = 0;
    for (long k = 0; k < steps; k++) {
        sum += a[i];
        /* n is a power of two and the stride odd: every element once; a[i] is 0 */
        i = (i + stride + (long)a[i]) & (n - 1);
    }
    return sum;
}

__attribute__((noinline)) double compact(const double *b, long steps) {
    double sum = 0.0;
    for (long k = 0; k < steps; k++)
        sum += b[k & (COMPACT_DOUBLES - 1)];
    return sum;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long stride = argc > 1 ? atol(argv[1]) : 4099;
    long mib = argc > 2 ? atol(argv[2]) : 64;
    long n = mib > 0 ? mib * 131072L : COMPACT_DOUBLES;   /* doubles: a power of two */
    long steps = 1L << 23;
    double *a = calloc(n, sizeof *a), *b = malloc(COMPACT_DOUBLES * sizeof *b);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < n; i += 512) a[i] = 0.0;   /* a page of its own for every 4 KiB */
    for (long i = 0; i < COMPACT_DOUBLES; i++) b[i] = (double)(i % 5);
    double local = sweep(a, n, stride | 1, steps) + compact(b, steps / 2), total = 0.0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("strided: stride %ld, %ld MiB, checksum %g\n", stride | 1, mib, total);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
