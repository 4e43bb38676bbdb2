! The traffic of onesided.c (see there, also for why the window is a shared one), with 3 ranks,
! through the bindings of use mpi_f08.
program onesided
    use mpi_f08
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    use, intrinsic :: iso_fortran_env, only: int64
    implicit none
    integer, parameter :: n = 64
    integer :: rank, size, next, prev
    double precision, pointer :: window(:)
    double precision, asynchronous :: source(n), fetched(n), result(n), readback(n), nothing(1)
    double precision :: one, old
    integer(kind=int64) :: swap, compare, was
    type(c_ptr) :: base
    type(MPI_Comm) :: reversed
    type(MPI_Win) :: win
    type(MPI_Group) :: group, post_group, start_group
    type(MPI_Request) :: requests(4)

    source = 0; fetched = 0; result = 0; readback = 0; nothing = 0
    one = 1; swap = 7; compare = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    if (size /= 3) call MPI_Abort(MPI_COMM_WORLD, 2)
    call MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, reversed)
    next = 2 - mod(rank + 1, 3)     ! as ranks of reversed
    prev = 2 - mod(rank + 2, 3)
    call MPI_Win_allocate_shared(int(n * 8, MPI_ADDRESS_KIND), 8, MPI_INFO_NULL, reversed, base, &
                                 win)
    call c_f_pointer(base, window, [n])
    window = 0

    call MPI_Win_fence(0, win)
    call MPI_Put(source, 10, MPI_DOUBLE_PRECISION, next, 0_MPI_ADDRESS_KIND, 10, &
                 MPI_DOUBLE_PRECISION, win)
    call MPI_Get(fetched, 6, MPI_DOUBLE_PRECISION, prev, 10_MPI_ADDRESS_KIND, 6, &
                 MPI_DOUBLE_PRECISION, win)
    call MPI_Accumulate(source, 3, MPI_DOUBLE_PRECISION, next, 16_MPI_ADDRESS_KIND, 3, &
                        MPI_DOUBLE_PRECISION, MPI_SUM, win)
    call MPI_Put(source, 2, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, 0_MPI_ADDRESS_KIND, 2, &
                 MPI_DOUBLE_PRECISION, win)
    call MPI_Win_fence(MPI_MODE_NOSUCCEED, win)

    call MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win)
    call MPI_Get_accumulate(source, 4, MPI_DOUBLE_PRECISION, result, 4, MPI_DOUBLE_PRECISION, &
                            next, 20_MPI_ADDRESS_KIND, 4, MPI_DOUBLE_PRECISION, MPI_SUM, win)
    call MPI_Get_accumulate(nothing, 0, MPI_DOUBLE_PRECISION, readback, 5, MPI_DOUBLE_PRECISION, &
                            next, 30_MPI_ADDRESS_KIND, 5, MPI_DOUBLE_PRECISION, MPI_NO_OP, win)
    call MPI_Win_flush(next, win)
    call MPI_Fetch_and_op(one, old, MPI_DOUBLE_PRECISION, next, 40_MPI_ADDRESS_KIND, MPI_SUM, &
                          win)
    call MPI_Compare_and_swap(swap, compare, was, MPI_INTEGER8, next, 41_MPI_ADDRESS_KIND, win)
    call MPI_Win_flush_local(next, win)
    call MPI_Win_unlock(next, win)
    call MPI_Barrier(MPI_COMM_WORLD)

    call MPI_Win_lock_all(0, win)
    call MPI_Rput(source, 5, MPI_DOUBLE_PRECISION, prev, 50_MPI_ADDRESS_KIND, 5, &
                  MPI_DOUBLE_PRECISION, win, requests(1))
    call MPI_Rget(fetched, 2, MPI_DOUBLE_PRECISION, next, 60_MPI_ADDRESS_KIND, 2, &
                  MPI_DOUBLE_PRECISION, win, requests(2))
    call MPI_Raccumulate(source, 1, MPI_DOUBLE_PRECISION, prev, 55_MPI_ADDRESS_KIND, 1, &
                         MPI_DOUBLE_PRECISION, MPI_SUM, win, requests(3))
    call MPI_Rget_accumulate(source, 3, MPI_DOUBLE_PRECISION, result, 3, MPI_DOUBLE_PRECISION, &
                             next, 56_MPI_ADDRESS_KIND, 3, MPI_DOUBLE_PRECISION, MPI_MAX, win, &
                             requests(4))
    call MPI_Waitall(4, requests, MPI_STATUSES_IGNORE)
    call MPI_Win_flush_all(win)
    call MPI_Win_flush_local_all(win)
    call MPI_Win_sync(win)
    call MPI_Win_unlock_all(win)
    call MPI_Barrier(MPI_COMM_WORLD)

    call MPI_Win_get_group(win, group)
    call MPI_Group_incl(group, 1, [prev], post_group)
    call MPI_Group_incl(group, 1, [next], start_group)
    call MPI_Win_post(post_group, 0, win)
    call MPI_Win_start(start_group, 0, win)
    call MPI_Put(source, 4, MPI_DOUBLE_PRECISION, next, 44_MPI_ADDRESS_KIND, 4, &
                 MPI_DOUBLE_PRECISION, win)
    call MPI_Win_complete(win)
    call MPI_Win_wait(win)

    call MPI_Group_free(start_group)
    call MPI_Group_free(post_group)
    call MPI_Group_free(group)
    call MPI_Win_free(win)
    call MPI_Comm_free(reversed)
    call MPI_Finalize()
end program onesided
