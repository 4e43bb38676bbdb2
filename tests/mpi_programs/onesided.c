/* One-sided communication, with 3 ranks (tests/test_pmpi.py knows the exact traffic); rank r
 * of 3, next = r+1 and prev = r-1 (mod 3). The window, 64 doubles per rank, is on a
 * communicator of the ranks reversed (its rank i is world rank 2-i), so every target is a
 * world rank only through the window's group. It is allocated with MPI_Win_allocate_shared,
 * which Open MPI 4.1 serves with its shared-memory component: MPI_Win_allocate's windows go to
 * its osc rdma, whose MPI_Compare_and_swap crashes over the vader BTL (with or without apmt).
 *   a fence epoch (MPI_Win_fence twice): MPI_Put of 10 doubles to next, MPI_Get of 6 doubles
 *   from prev, MPI_Accumulate of 3 doubles to next, MPI_Put of 2 doubles to MPI_PROC_NULL;
 *   a passive target epoch on next (MPI_Win_lock, MPI_Win_unlock): MPI_Get_accumulate of 4
 *   doubles (MPI_SUM, 4 doubles of result), MPI_Get_accumulate with MPI_NO_OP (no origin
 *   data, 5 doubles of result), MPI_Win_flush, MPI_Fetch_and_op of a double,
 *   MPI_Compare_and_swap of an int64_t, MPI_Win_flush_local; then MPI_Barrier;
 *   a passive target epoch on all (MPI_Win_lock_all, MPI_Win_unlock_all): MPI_Rput of 5
 *   doubles to prev, MPI_Rget of 2 doubles from next, MPI_Raccumulate of 1 double to prev,
 *   MPI_Rget_accumulate of 3 doubles (MPI_MAX, 3 doubles of result) to next, their requests
 *   completed by one MPI_Waitall, then MPI_Win_flush_all, MPI_Win_flush_local_all and
 *   MPI_Win_sync; then MPI_Barrier;
 *   a general active target epoch: MPI_Win_post to prev, MPI_Win_start of next, MPI_Put of 4
 *   doubles to next, MPI_Win_complete, MPI_Win_wait.
 * Each rank's targets in one epoch are apart from the others' (displacements 0-61).
 */
#include <mpi.h>
#include <stdint.h>

#define N 64

int main(int argc, char **argv)
{
    int rank, size;
    double *window, source[N] = {0}, fetched[N] = {0}, result[N] = {0}, one = 1, old;
    int64_t swap = 7, compare = 0, was;
    MPI_Comm reversed;
    MPI_Win win;
    MPI_Group group, post_group, start_group;
    MPI_Request requests[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);
    int next = 2 - (rank + 1) % 3, prev = 2 - (rank + 2) % 3; /* as ranks of reversed */
    MPI_Win_allocate_shared(N * sizeof(double), sizeof(double), MPI_INFO_NULL, reversed, &window,
                            &win);
    for (int i = 0; i < N; i++)
        window[i] = 0;

    MPI_Win_fence(0, win);
    MPI_Put(source, 10, MPI_DOUBLE, next, 0, 10, MPI_DOUBLE, win);
    MPI_Get(fetched, 6, MPI_DOUBLE, prev, 10, 6, MPI_DOUBLE, win);
    MPI_Accumulate(source, 3, MPI_DOUBLE, next, 16, 3, MPI_DOUBLE, MPI_SUM, win);
    MPI_Put(source, 2, MPI_DOUBLE, MPI_PROC_NULL, 0, 2, MPI_DOUBLE, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    MPI_Get_accumulate(source, 4, MPI_DOUBLE, result, 4, MPI_DOUBLE, next, 20, 4, MPI_DOUBLE,
                       MPI_SUM, win);
    MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, result + 8, 5, MPI_DOUBLE, next, 30, 5, MPI_DOUBLE,
                       MPI_NO_OP, win);
    MPI_Win_flush(next, win);
    MPI_Fetch_and_op(&one, &old, MPI_DOUBLE, next, 40, MPI_SUM, win);
    MPI_Compare_and_swap(&swap, &compare, &was, MPI_INT64_T, next, 41, win);
    MPI_Win_flush_local(next, win);
    MPI_Win_unlock(next, win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    MPI_Rput(source, 5, MPI_DOUBLE, prev, 50, 5, MPI_DOUBLE, win, &requests[0]);
    MPI_Rget(fetched, 2, MPI_DOUBLE, next, 60, 2, MPI_DOUBLE, win, &requests[1]);
    MPI_Raccumulate(source, 1, MPI_DOUBLE, prev, 55, 1, MPI_DOUBLE, MPI_SUM, win, &requests[2]);
    MPI_Rget_accumulate(source, 3, MPI_DOUBLE, result, 3, MPI_DOUBLE, next, 56, 3, MPI_DOUBLE,
                        MPI_MAX, win, &requests[3]);
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    MPI_Win_flush_all(win);
    MPI_Win_flush_local_all(win);
    MPI_Win_sync(win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_get_group(win, &group);
    MPI_Group_incl(group, 1, &prev, &post_group);
    MPI_Group_incl(group, 1, &next, &start_group);
    MPI_Win_post(post_group, 0, win);
    MPI_Win_start(start_group, 0, win);
    MPI_Put(source, 4, MPI_DOUBLE, next, 44, 4, MPI_DOUBLE, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);

    MPI_Group_free(&start_group);
    MPI_Group_free(&post_group);
    MPI_Group_free(&group);
    MPI_Win_free(&win);
    MPI_Comm_free(&reversed);
    MPI_Finalize();
    return 0;
}
