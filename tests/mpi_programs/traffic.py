"""The traffic of traffic.c (see there), from mpi4py's buffer interface (upper-case methods)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
big = np.zeros(1000)
small = np.zeros(5, dtype=np.int32)
if rank == 0:
    for _ in range(3):
        comm.Send([big, MPI.DOUBLE], dest=1, tag=1)
    for _ in range(2):
        comm.Isend([big, MPI.DOUBLE], dest=1, tag=2).Wait()
    comm.Recv([small, MPI.INT], source=MPI.ANY_SOURCE, tag=3)
else:
    for _ in range(3):
        comm.Recv([big, MPI.DOUBLE], source=0, tag=1)
    buffers = [np.zeros(1000) for _ in range(2)]
    requests = [comm.Irecv([b, MPI.DOUBLE], source=MPI.ANY_SOURCE, tag=2) for b in buffers]
    MPI.Request.Waitall(requests)
    comm.Send([small, MPI.INT], dest=0, tag=3)
MPI.REQUEST_NULL.Test()
comm.Iprobe(source=1 - rank, tag=99)
ones, total = np.ones(10, dtype=np.int32), np.zeros(10, dtype=np.int32)
for _ in range(4):
    comm.Allreduce([ones, MPI.INT], [total, MPI.INT], op=MPI.SUM)
comm.Bcast([np.zeros(100, dtype=np.uint8), MPI.BYTE], root=0)
comm.Barrier()
comm.Alltoall([np.zeros(6, dtype=np.int32), MPI.INT], [np.zeros(6, dtype=np.int32), MPI.INT])
comm.Reduce([np.zeros(7), MPI.DOUBLE], [np.zeros(7), MPI.DOUBLE], op=MPI.SUM, root=0)
mine, pair = np.zeros(2, dtype=np.int32), np.zeros(4, dtype=np.int32)
comm.Gather([mine, MPI.INT], [pair, MPI.INT], root=0)
comm.Scatter([pair, MPI.INT], [mine, MPI.INT], root=0)
gathered = np.zeros(2)
comm.Allgather(MPI.IN_PLACE, [gathered, MPI.DOUBLE])
