"""apmt: automatic hardware-counter-based performance modeling for MPI applications."""

__version__ = "0.1.0"
