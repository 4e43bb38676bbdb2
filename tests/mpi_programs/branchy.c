/* A planted branch bottleneck for apmt diagnose (tests/test_diagnose_lcpi.py).
 *
 *   branchy [STEPS_LOG2]
 *
 * branchy() takes 2^STEPS_LOG2 steps (default 2^25), each a branch on a random bit, which no
 * predictor can learn: about half of them are mispredicted. steady() runs a quarter as many
 * steps of the same loop with a branch on the loop counter (taken in the first half only),
 * which is predicted right almost always. The empty volatile asm in each arm keeps the
 * compiler from turning the branches into conditional moves.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BYTES 65536L   /* 64 KiB of random bytes: L2-resident */

__attribute__((noinline)) long branchy(const unsigned char *r, long steps) {
    long odd = 0, even = 0;
    for (long k = 0; k < steps; k++) {
        if (r[k & (BYTES - 1)] & 1) {
            __asm__ volatile("" ::: "memory");
            odd += 3;
        } else {
            __asm__ volatile("" ::: "memory");
            even += 1;
        }
    }
    return odd - even;
}

__attribute__((noinline)) long steady(const unsigned char *r, long steps) {
    long first = 0, second = 0;
    for (long k = 0; k < steps; k++) {
        if (k < steps / 2) {
            __asm__ volatile("" ::: "memory");
            first += r[k & (BYTES - 1)];
        } else {
            __asm__ volatile("" ::: "memory");
            second += 1;
        }
    }
    return first - second;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long steps = 1L << (argc > 1 ? atoi(argv[1]) : 25);
    unsigned char *r = malloc(BYTES);
    if (r == NULL) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsigned int state = 12345u + (unsigned int)rank;
    for (long i = 0; i < BYTES; i++) {
        state = state * 1103515245u + 12345u;   /* the C standard's example generator */
        r[i] = (unsigned char)(state >> 16);
    }
    long local = branchy(r, steps) + steady(r, steps / 4), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("branchy: %ld steps, checksum %ld\n", steps, total);
    free(r);
    MPI_Finalize();
    return 0;
}
