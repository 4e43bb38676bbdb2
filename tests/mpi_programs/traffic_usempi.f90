! The traffic of traffic.c (see there), through the Fortran bindings of use mpi.
program traffic
    use mpi
    implicit none
    double precision :: big(1000), buffers(1000, 2), seven(7), reduced(7), gathered(2)
    integer :: rank, ierr, i, small(5), ones(10), total(10), out(6), in(6), pair(4), mine(2)
    integer :: requests(2), none
    logical :: flag
    character :: message(100)

    big = 0; seven = 0; small = 0; ones = 1; out = 0; pair = 0; mine = 0; message = 'x'
    none = MPI_REQUEST_NULL
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    if (rank == 0) then
        do i = 1, 3
            call MPI_Send(big, 1000, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD, ierr)
        end do
        do i = 1, 2
            call MPI_Isend(big, 1000, MPI_DOUBLE_PRECISION, 1, 2, MPI_COMM_WORLD, &
                           requests(1), ierr)
            call MPI_Wait(requests(1), MPI_STATUS_IGNORE, ierr)
        end do
        call MPI_Recv(small, 5, MPI_INTEGER, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
    else
        do i = 1, 3
            call MPI_Recv(big, 1000, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD, &
                          MPI_STATUS_IGNORE, ierr)
        end do
        do i = 1, 2
            call MPI_Irecv(buffers(1, i), 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 2, &
                           MPI_COMM_WORLD, requests(i), ierr)
        end do
        call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
        call MPI_Send(small, 5, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, ierr)
    end if
    call MPI_Test(none, flag, MPI_STATUS_IGNORE, ierr)
    call MPI_Iprobe(1 - rank, 99, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
    do i = 1, 4
        call MPI_Allreduce(ones, total, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    end do
    call MPI_Bcast(message, 100, MPI_BYTE, 0, MPI_COMM_WORLD, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Alltoall(out, 3, MPI_INTEGER, in, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call MPI_Reduce(seven, reduced, 7, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call MPI_Gather(mine, 2, MPI_INTEGER, pair, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Scatter(pair, 2, MPI_INTEGER, mine, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    gathered(rank + 1) = rank
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 1, &
                       MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call MPI_Finalize(ierr)
end program traffic
