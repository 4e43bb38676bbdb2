! The traffic of nonblocking.c (see there), with 3 ranks, through the bindings of use mpi_f08.
program nonblocking
    use mpi_f08
    implicit none
    integer :: rank, size, one, total, i
    integer :: counts(3), displs(3), mine(3), mine_displs(3), blocks(3)
    integer, asynchronous :: send(64), reduced(64), bcast(64), alltoallv(64), gathered(64)
    integer, asynchronous :: gatherv(64), scatterv(64), block(64), scan(64)
    double precision, asynchronous :: dsend(64), dreduced(64), alltoall(64), allgather(64)
    double precision, asynchronous :: allgatherv(64), reduce_scatter(64), exscan(64)
    character, asynchronous :: chars(64), scattered(64)
    type(MPI_Request) :: request, requests(14)

    send = 0; reduced = 0; bcast = 0; gathered = 0; scatterv = 0
    dsend = 0; allgather = 0; chars = 'x'; one = 1
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    if (size /= 3) call MPI_Abort(MPI_COMM_WORLD, 2)

    call MPI_Ibarrier(MPI_COMM_WORLD, request)
    call MPI_Wait(request, MPI_STATUS_IGNORE)
    call MPI_Iallreduce(MPI_IN_PLACE, reduced, 6, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, request)
    call MPI_Wait(request, MPI_STATUS_IGNORE)
    call MPI_Allreduce(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)

    do i = 1, 3
        counts(i) = rank + 1
        mine(i) = i
        displs(i) = 8 * (i - 1)
    end do
    mine_displs = [0, 8, 16]
    blocks = [1, 2, 3]
    call MPI_Ibcast(bcast, 7, MPI_INTEGER, 1, MPI_COMM_WORLD, requests(1))
    call MPI_Ireduce(dsend, dreduced, 5, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, &
                     requests(2))
    call MPI_Ialltoall(dsend, 2, MPI_DOUBLE_PRECISION, alltoall, 2, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, requests(3))
    call MPI_Ialltoallv(send, counts, displs, MPI_INTEGER, alltoallv, mine, mine_displs, &
                        MPI_INTEGER, MPI_COMM_WORLD, requests(4))
    call MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, allgather, 3, &
                        MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, requests(5))
    call MPI_Iallgatherv(dsend, rank + 1, MPI_DOUBLE_PRECISION, allgatherv, mine, &
                         mine_displs, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, requests(6))
    if (rank == 2) then
        call MPI_Igather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 4, MPI_INTEGER, 2, &
                         MPI_COMM_WORLD, requests(7))
    else
        call MPI_Igather(send, 4, MPI_INTEGER, gathered, 0, MPI_DATATYPE_NULL, 2, &
                         MPI_COMM_WORLD, requests(7))
    end if
    call MPI_Igatherv(send, rank + 1, MPI_INTEGER, gatherv, mine, mine_displs, MPI_INTEGER, &
                      0, MPI_COMM_WORLD, requests(8))
    call MPI_Iscatter(chars, 10, MPI_CHARACTER, scattered, 10, MPI_CHARACTER, 0, &
                      MPI_COMM_WORLD, requests(9))
    if (rank == 0) then
        call MPI_Iscatterv(scatterv, mine, mine_displs, MPI_INTEGER, MPI_IN_PLACE, 0, &
                           MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD, requests(10))
    else
        call MPI_Iscatterv(send, mine, mine_displs, MPI_DATATYPE_NULL, scatterv, rank + 1, &
                           MPI_INTEGER, 0, MPI_COMM_WORLD, requests(10))
    end if
    call MPI_Ireduce_scatter(dsend, reduce_scatter, blocks, MPI_DOUBLE_PRECISION, MPI_SUM, &
                             MPI_COMM_WORLD, requests(11))
    call MPI_Ireduce_scatter_block(send, block, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                   requests(12))
    call MPI_Iscan(send, scan, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, requests(13))
    call MPI_Iexscan(dsend, exscan, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &
                     requests(14))
    call MPI_Waitall(14, requests, MPI_STATUSES_IGNORE)

    call MPI_Finalize()
end program nonblocking
