! The traffic of persistent.c (see there), with 3 ranks, through the bindings of use mpi_f08.
program persistent
    use mpi_f08
    implicit none
    integer :: rank, size, reversed_rank, next, prev, i
    integer, asynchronous :: ints(128), more(128)
    double precision, asynchronous :: doubles(128), other(128)
    character :: attached(2000)
    type(MPI_Comm) :: reversed
    type(MPI_Request) :: ring(2), back(2), nowhere, request

    ints = 0; more = 0; doubles = 0; other = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    if (size /= 3) call MPI_Abort(MPI_COMM_WORLD, 2)
    next = mod(rank + 1, 3)
    prev = mod(rank + 2, 3)

    call MPI_Send_init(doubles, 100, MPI_DOUBLE_PRECISION, next, 1, MPI_COMM_WORLD, ring(1))
    call MPI_Recv_init(other, 100, MPI_DOUBLE_PRECISION, prev, 1, MPI_COMM_WORLD, ring(2))
    do i = 1, 4
        call MPI_Start(ring(2))
        call MPI_Start(ring(1))
        call MPI_Waitall(2, ring, MPI_STATUSES_IGNORE)
    end do

    call MPI_Send_init(ints, 20, MPI_INTEGER, prev, 2, MPI_COMM_WORLD, back(1))
    call MPI_Recv_init(more, 20, MPI_INTEGER, next, 2, MPI_COMM_WORLD, back(2))
    do i = 1, 3
        call MPI_Startall(2, back)
        call MPI_Waitall(2, back, MPI_STATUSES_IGNORE)
    end do

    call MPI_Send_init(ints, 7, MPI_INTEGER, MPI_PROC_NULL, 3, MPI_COMM_WORLD, nowhere)
    call MPI_Start(nowhere)
    call MPI_Wait(nowhere, MPI_STATUS_IGNORE)
    call MPI_Request_free(nowhere)

    call MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, reversed)
    call MPI_Comm_rank(reversed, reversed_rank)
    if (reversed_rank <= 1) then
        if (reversed_rank == 0) then
            call MPI_Ssend_init(ints, 5, MPI_INTEGER, 1, 4, reversed, request)
        else
            call MPI_Recv_init(more, 10, MPI_INTEGER, MPI_ANY_SOURCE, 4, reversed, request)
        end if
        do i = 1, 2
            call MPI_Start(request)
            call MPI_Wait(request, MPI_STATUS_IGNORE)
        end do
        call MPI_Request_free(request)
    end if

    if (rank == 2) then
        call MPI_Recv_init(other, 3, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &
                           request)
        call MPI_Start(request)
    end if
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) then
        call MPI_Rsend_init(doubles, 3, MPI_DOUBLE_PRECISION, 2, 5, MPI_COMM_WORLD, request)
        call MPI_Start(request)
    end if
    if (rank == 0 .or. rank == 2) then
        call MPI_Wait(request, MPI_STATUS_IGNORE)
        call MPI_Request_free(request)
    end if

    if (rank == 1) then
        call MPI_Buffer_attach(attached, 2000)
        call MPI_Bsend_init(ints, 4, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, request)
        call MPI_Start(request)
        call MPI_Wait(request, MPI_STATUS_IGNORE)
        call MPI_Request_free(request)
    else if (rank == 0) then
        call MPI_Recv(more, 4, MPI_INTEGER, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    end if

    do i = 1, 2
        call MPI_Request_free(ring(i))
        call MPI_Request_free(back(i))
    end do
    call MPI_Send_init(doubles, 50, MPI_DOUBLE_PRECISION, next, 7, MPI_COMM_WORLD, ring(1))
    call MPI_Recv_init(other, 60, MPI_DOUBLE_PRECISION, prev, 7, MPI_COMM_WORLD, ring(2))
    call MPI_Startall(2, ring)
    call MPI_Waitall(2, ring, MPI_STATUSES_IGNORE)
    call MPI_Request_free(ring(1))
    call MPI_Request_free(ring(2))

    call MPI_Comm_free(reversed)
    call MPI_Finalize()
end program persistent
