! The traffic of extras.c (see there), with 3 ranks, through the bindings of use mpi_f08.
program extras
    use mpi_f08
    implicit none
    integer :: rank, size, reversed_rank, next, previous, idx, cnt, indices(2), i
    integer :: ints(64), more(64), counts(3), displs(3), mine(3), mine_displs(3), blocks(3)
    double precision :: doubles(64), other(64)
    character :: chars(100), attached(2000)
    logical :: flag
    type(MPI_Comm) :: reversed
    type(MPI_Request) :: request, requests(2)
    type(MPI_Status) :: status

    ints = 0; doubles = 0; chars = 'x'
    requests = MPI_REQUEST_NULL
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    if (size /= 3) call MPI_Abort(MPI_COMM_WORLD, 2)
    next = mod(rank + 1, 3)
    previous = mod(rank + 2, 3)

    call MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, reversed)
    call MPI_Comm_rank(reversed, reversed_rank)
    if (reversed_rank == 0) then
        call MPI_Send(ints, 4, MPI_INTEGER, 1, 10, reversed)
    else if (reversed_rank == 1) then
        call MPI_Recv(ints, 4, MPI_INTEGER, 0, 10, reversed, MPI_STATUS_IGNORE)
    end if

    call MPI_Send(ints, 1, MPI_INTEGER, MPI_PROC_NULL, 11, MPI_COMM_WORLD)
    call MPI_Recv(ints, 1, MPI_INTEGER, MPI_PROC_NULL, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE)

    call MPI_Sendrecv(doubles, 8, MPI_DOUBLE_PRECISION, next, 12, other, 8, &
                      MPI_DOUBLE_PRECISION, previous, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call MPI_Sendrecv_replace(ints, 2, MPI_INTEGER, next, 13, previous, 13, MPI_COMM_WORLD, &
                              status)

    if (rank == 0) then
        call MPI_Ssend(chars, 10, MPI_CHARACTER, 1, 14, MPI_COMM_WORLD)
    else if (rank == 1) then
        call MPI_Probe(MPI_ANY_SOURCE, 14, MPI_COMM_WORLD, status)
        call MPI_Recv(chars, 100, MPI_CHARACTER, status%MPI_SOURCE, 14, MPI_COMM_WORLD, status)
    end if

    if (rank == 1) then
        call MPI_Buffer_attach(attached, 2000)
        call MPI_Bsend(doubles, 3, MPI_DOUBLE_PRECISION, 2, 15, MPI_COMM_WORLD)
    else if (rank == 2) then
        call MPI_Irecv(other, 3, MPI_DOUBLE_PRECISION, 1, 15, MPI_COMM_WORLD, requests(1))
        call MPI_Waitany(2, requests, idx, MPI_STATUS_IGNORE)
    end if

    if (rank == 2) call MPI_Irecv(more, 5, MPI_INTEGER, 0, 16, MPI_COMM_WORLD, requests(2))
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) then
        call MPI_Rsend(ints, 5, MPI_INTEGER, 2, 16, MPI_COMM_WORLD)
    else if (rank == 2) then
        call MPI_Waitsome(2, requests, cnt, indices, MPI_STATUSES_IGNORE)
    end if

    if (rank == 0) then
        call MPI_Issend(ints, 6, MPI_INTEGER, 2, 17, MPI_COMM_WORLD, request)
        call MPI_Wait(request, MPI_STATUS_IGNORE)
    else if (rank == 2) then
        call MPI_Recv(more, 6, MPI_INTEGER, 0, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    end if

    requests = MPI_REQUEST_NULL
    call MPI_Testall(2, requests, flag, MPI_STATUSES_IGNORE)
    call MPI_Testany(2, requests, idx, flag, MPI_STATUS_IGNORE)
    call MPI_Testsome(2, requests, cnt, indices, MPI_STATUSES_IGNORE)

    do i = 1, 3
        counts(i) = rank + 1
        mine(i) = i
        displs(i) = 8 * (i - 1)
    end do
    mine_displs = [0, 8, 16]
    call MPI_Alltoallv(ints, counts, displs, MPI_INTEGER, more, mine, mine_displs, &
                       MPI_INTEGER, MPI_COMM_WORLD)
    call MPI_Allgatherv(doubles, rank + 1, MPI_DOUBLE_PRECISION, other, mine, mine_displs, &
                        MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
    call MPI_Gatherv(ints, rank + 1, MPI_INTEGER, more, mine, mine_displs, MPI_INTEGER, 0, &
                     MPI_COMM_WORLD)
    call MPI_Scatterv(ints, mine, mine_displs, MPI_INTEGER, more, rank + 1, MPI_INTEGER, 0, &
                      MPI_COMM_WORLD)
    blocks = [1, 2, 3]
    call MPI_Reduce_scatter(doubles, other, blocks, MPI_DOUBLE_PRECISION, MPI_SUM, &
                            MPI_COMM_WORLD)
    call MPI_Reduce_scatter_block(ints, more, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Scan(ints, more, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Exscan(ints, more, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Alltoall(doubles, 2, MPI_DOUBLE_PRECISION, other, 2, MPI_DOUBLE_PRECISION, &
                      MPI_COMM_WORLD)
    call MPI_Allgather(ints, 4, MPI_INTEGER, more, 4, MPI_INTEGER, MPI_COMM_WORLD)
    if (rank == 0) then
        call MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, other, 2, MPI_DOUBLE_PRECISION, &
                        0, MPI_COMM_WORLD)
    else
        call MPI_Gather(doubles, 2, MPI_DOUBLE_PRECISION, other, 0, MPI_DATATYPE_NULL, 0, &
                        MPI_COMM_WORLD)
    end if
    call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints, 1, MPI_INTEGER, MPI_COMM_WORLD)
    call MPI_Bcast(ints, 5, MPI_INTEGER, 0, reversed)

    call MPI_Comm_free(reversed)
    call MPI_Finalize()
end program extras
