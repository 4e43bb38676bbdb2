! The traffic of neighbors.c (see there), with 3 ranks, through the Fortran bindings of
! include 'mpif.h'.
program neighbors
    implicit none
    include 'mpif.h'
    integer, parameter :: n = 64
    integer :: rank, size, ierr, i, indegree, outdegree
    integer :: ring, line, graph, triangle, requests(5)
    integer :: counts(2), displs(2), gathers(2), gather_displs(2), index(3), edges(6)
    integer :: sources(2), destinations(2), wcounts(2), rcounts(2), wtypes(2), rtypes(2)
    integer(kind=MPI_ADDRESS_KIND) :: wdispls(2), rdispls(2)
    integer, asynchronous :: ints(n), gathered(n), received(n)
    double precision, asynchronous :: doubles(n), dgathered(n), dreceived(n), wsend(n)
    double precision, asynchronous :: wreceived(n)
    character, asynchronous :: chars(n), creceived(n)

    ints = 0; doubles = 0; wsend = 0; chars = 'x'
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    if (size /= 3) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)

    call MPI_Cart_create(MPI_COMM_WORLD, 1, [3], [.true.], .false., ring, ierr)
    call MPI_Neighbor_allgather(ints, 2, MPI_INTEGER, gathered, 2, MPI_INTEGER, ring, ierr)
    call MPI_Neighbor_alltoall(doubles, 3, MPI_DOUBLE_PRECISION, dreceived, 3, &
                               MPI_DOUBLE_PRECISION, ring, ierr)
    call MPI_Ineighbor_alltoall(ints, 1, MPI_INTEGER, received, 1, MPI_INTEGER, ring, &
                                requests(1), ierr)

    ! a rank sends r+1 to the rank before, r+2 to the one after, and so receives as much
    counts = [rank + 1, rank + 2]
    displs = [0, 8]
    call MPI_Cart_create(MPI_COMM_WORLD, 1, [3], [.false.], .false., line, ierr)
    call MPI_Neighbor_alltoallv(ints, counts, displs, MPI_INTEGER, received(17), counts, &
                                displs, MPI_INTEGER, line, ierr)
    call MPI_Ineighbor_allgather(doubles, 1, MPI_DOUBLE_PRECISION, dgathered, 1, &
                                 MPI_DOUBLE_PRECISION, line, requests(2), ierr)
    call MPI_Ineighbor_alltoallv(doubles, counts, displs, MPI_DOUBLE_PRECISION, dreceived(17), &
                                 counts, displs, MPI_DOUBLE_PRECISION, line, requests(3), ierr)

    ! rank r's in-neighbours are the first r of 0, 1; its out-neighbours the first 2 - r of
    ! r + 1, 2
    indegree = rank
    outdegree = 2 - rank
    sources = [0, 1]
    destinations = [rank + 1, 2]
    gathers = [4, 4]
    gather_displs = [0, 8]
    wdispls = [0, 128]
    rdispls = [0, 128]
    wcounts = 0; rcounts = 0; wtypes = MPI_INTEGER; rtypes = MPI_INTEGER
    do i = 1, outdegree
        wcounts(i) = rank + destinations(i)
        wtypes(i) = merge(MPI_INTEGER, MPI_DOUBLE_PRECISION, destinations(i) == 1)
    end do
    do i = 1, indegree
        rcounts(i) = sources(i) + rank
        rtypes(i) = merge(MPI_INTEGER, MPI_DOUBLE_PRECISION, rank == 1)
    end do
    call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indegree, sources, MPI_UNWEIGHTED, &
                                        outdegree, destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, &
                                        .false., graph, ierr)
    call MPI_Neighbor_allgatherv(ints, 4, MPI_INTEGER, gathered, gathers, gather_displs, &
                                 MPI_INTEGER, graph, ierr)
    call MPI_Ineighbor_allgatherv(doubles, 2, MPI_DOUBLE_PRECISION, dgathered(17), gathers, &
                                  gather_displs, MPI_DOUBLE_PRECISION, graph, requests(4), ierr)
    call MPI_Neighbor_alltoallw(wsend, wcounts, wdispls, wtypes, wreceived, rcounts, rdispls, &
                                rtypes, graph, ierr)
    call MPI_Ineighbor_alltoallw(wsend, wcounts, wdispls, wtypes, wreceived(33), rcounts, &
                                 rdispls, rtypes, graph, requests(5), ierr)
    call MPI_Waitall(5, requests, MPI_STATUSES_IGNORE, ierr)

    index = [2, 4, 6]
    edges = [1, 2, 0, 2, 0, 1]
    call MPI_Graph_create(MPI_COMM_WORLD, 3, index, edges, .false., triangle, ierr)
    call MPI_Neighbor_alltoall(chars, 5, MPI_CHARACTER, creceived, 5, MPI_CHARACTER, triangle, &
                               ierr)

    call MPI_Comm_free(triangle, ierr)
    call MPI_Comm_free(graph, ierr)
    call MPI_Comm_free(line, ierr)
    call MPI_Comm_free(ring, ierr)
    call MPI_Finalize(ierr)
end program neighbors
