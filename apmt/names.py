"""Function names as apmt speaks them, whichever tool measured them: one name per function
(``function_name``), MPI calls told by their name, and the run-time system's parts as the
buckets the model groups them into (``<MPI runtime>``, ``<loader>``, ``<system>``,
``<unknown>``). The backends name what they sample with it and the kernel classification
groups with it, so measurement and modeling agree without importing each other.
"""

from __future__ import annotations

import re

MPI_RUNTIME, LOADER, SYSTEM, UNKNOWN = "<MPI runtime>", "<loader>", "<system>", "<unknown>"
KERNEL = "<kernel>"   # the OS kernel, as samplers name it
PLT_SUFFIX = "@plt"   # a procedure linkage table stub, as perf names it
# the ELF's start-up and shut-down stubs (crti's _init and _fini) and GCC's (crtstuff's
# transactional-memory clones' registration, the destructors' and frame_dummy): symbols
# without a size, which perf stretches to the next symbol (a sample in the PLT's resolver
# entry right after .init is named _init) and cachegrind does not name (their counts go to
# ???); no function of the application, they run once at start or exit. NPB SP S's runs
# sampled frame_dummy once; a test run sampled __do_global_dtors_aux as the program ended.
ELF_STUBS = frozenset({"_init", "_fini", "deregister_tm_clones", "register_tm_clones",
                       "__do_global_dtors_aux", "frame_dummy"})
RUNTIME_BUCKETS = (MPI_RUNTIME, LOADER, SYSTEM, UNKNOWN)
MPI_NAME = re.compile(r"^(P?MPI_|p?mpi_)\w+", re.IGNORECASE)
# the libraries of MPI implementations, their transports and helpers, and apmt's own PMPI
# tracer, whose internals samplers group into one kernel per library, e.g. <libmpi>
MPI_LIBRARY = re.compile(
    r"^(libmpi\w*|libmpich\w*|libmpifort\w*|libopen-pal|libopen-rte|libopen-orted-mpir|libpmix"
    r"|libprrte|libucp|libuct|libucs|libucm|libfabric|libpsm2?|libhcoll|libmca_\w+|mca_\w+"
    r"|libompi\w*|libhwloc|libevent[\w.-]*|libapmt_pmpi|pmix_mca_\w+|libibverbs|librdmacm"
    r"|libinfinipath|libpsm_infinipath|libnl[\w-]*)$")
TRACER_LIBRARY = "libapmt_pmpi"   # apmt's own PMPI tracer (apmt.collect.pmpi), one of them
TRACER = f"<{TRACER_LIBRARY}>"     # its kernel, as samplers group it
# the MPI library's functions the tracer itself calls on every traced call (apmt/pmpi: a
# message's size, a rank's world rank, a one-sided target's world rank through its window's
# group, a neighborhood collective's out-neighbours from its communicator's topology, a
# Fortran handle's C one), beside the call it wraps
TRACER_CALLS = frozenset({
    "PMPI_Comm_create_keyval", "PMPI_Comm_get_attr", "PMPI_Comm_group", "PMPI_Comm_rank",
    "PMPI_Comm_remote_group", "PMPI_Comm_remote_size", "PMPI_Comm_set_attr", "PMPI_Comm_size",
    "PMPI_Comm_test_inter", "PMPI_Get_count", "PMPI_Group_free", "PMPI_Group_size",
    "PMPI_Group_translate_ranks", "PMPI_Type_size", "PMPI_Comm_f2c", "PMPI_Type_f2c",
    "PMPI_Status_f2c", "PMPI_Request_f2c", "PMPI_Win_f2c", "PMPI_Op_f2c",
    "PMPI_Win_create_keyval", "PMPI_Win_get_attr", "PMPI_Win_set_attr", "PMPI_Win_get_group",
    "PMPI_Topo_test", "PMPI_Cartdim_get", "PMPI_Cart_shift", "PMPI_Graph_neighbors_count",
    "PMPI_Dist_graph_neighbors_count"})
TRACER_OWN = frozenset(name.removeprefix("P") for name in TRACER_CALLS)   # as MPI_ spells them
# the C library's parts, the OS kernel, the shell that starts each rank and the system
# libraries MPI's helpers load (device and display discovery), as samplers name them grouped
# (<libc>, <kernel>, <dash>)
SYSTEM_LIBRARY = re.compile(r"^(libc|libpthread|librt|libdl|libutil|libresolv|libanl|vdso"
                            r"|vsyscall|kernel|libc\.musl[\w.-]*|ld-musl[\w.-]*|dash|bash|sh"
                            r"|busybox|libudev|libsystemd|libX11[\w-]*|libxcb[\w-]*|libxml2"
                            r"|libltdl|libnuma|libcap|libselinux)$")


VERSION_SUFFIX = re.compile(r"@+[A-Za-z_][\w.]*$")
# glibc's name for an IFUNC resolver (libm's __sincosf_ifunc), a local alias at the address
# of the IFUNC symbol it resolves (sincosf), by which valgrind names the same code
IFUNC_RESOLVER = re.compile(r"^__(\w+)_ifunc$")
CLONE_SUFFIX = re.compile(r"(\s*\[clone [^\]]*\])+$")   # gcc's copies: [clone .isra.0]
# demangled names that are not a function with a return type: their words belong to them
SPECIAL_PREFIX = re.compile(r"^(non-virtual thunk to|virtual thunk to|covariant return thunk to"
                            r"|construction vtable for|vtable for|typeinfo for|typeinfo name for"
                            r"|VTT for|guard variable for|transaction clone for"
                            r"|TLS init function for|TLS wrapper function for) ")
OPENING, CLOSING = "<([{", ">)]}"


def function_name(symbol: str) -> str:
    """One name per function whichever tool saw it: without a symbol version (``@GLIBC_2.2.5``),
    a C++ parameter list (cachegrind prints ``ns::f(int, int)``, perf ``ns::f``), the return
    type that a template function's demangled name carries in cachegrind's output and not in
    perf's (``void ns::solve<double>``), and gcc's clone suffix (``[clone .isra.0]``): on
    miniFE every template kernel's time and counts went to two names, and the diagnosis found
    no counts for any key kernel. An IFUNC resolver, which the loader runs once per process
    to choose an implementation, goes by the symbol it resolves (perf's ``__sincosf_ifunc``,
    valgrind's ``sincosf``): a perf sample in libm's while MPI started once was a function
    with time and never a count."""
    name = VERSION_SUFFIX.sub("", symbol.strip()) or symbol.strip()   # "@plt" stays itself
    name = IFUNC_RESOLVER.sub(r"\1", name)
    name = CLONE_SUFFIX.sub("", name) or name
    return _without_return_type(_without_parameters(name))


def joined_aliases(seen: list[set[str]]) -> dict[str, str]:
    """Names of one function under two symbols, each seen by one tool only (``seen``: the
    kernels each tool named in a study), to join: a name with leading underscores that only
    one tool saw, and the same name without them that only another saw, are one function, the
    shorter name kept. A C library exports its functions as weak aliases of internal ones at
    the same address (glibc's ``fmod`` of ``__fmod``): perf names such a function by its global
    symbol, valgrind by the shortest, and the ParRes PIC kernel's fmod had its time under one
    name and its counts under the other."""
    found = {}
    for index, names in enumerate(seen):
        others = set().union(*(s for j, s in enumerate(seen) if j != index))
        only_here = names - others
        only_there = {name.lstrip("_"): name for name in others - names}
        for name in only_here:
            partner = only_there.get(name.lstrip("_"))
            if name.startswith("_") and partner is not None and len(partner) < len(name):
                found[name] = partner
    return found


def linker_stub(symbol: str) -> bool:
    """Whether a symbol is the linker's code, not a function of the program: a PLT stub
    (``memcpy@plt``, the jump through which a program calls a shared library) or one of the
    ELF_STUBS. perf names them; cachegrind counts the PLT under ``???``; both put them in
    UNKNOWN, so that their time and counts meet."""
    return symbol.endswith(PLT_SUFFIX) or symbol in ELF_STUBS


def tracer_callees(traced: set[str], untraced: list[set[str]]) -> dict[str, str]:
    """The tracer's own calls among the functions a traced pass sampled (``traced``), to join
    to the tracer's kernel: those of TRACER_CALLS (in either spelling, MPI_ or PMPI_) that no
    untraced pass (``untraced``: the kernels each named, e.g. cachegrind's, which runs the
    application without the tracer) ever saw executed, so the application never called them.
    The ParRes Synch_p2p, which receives 400,000 single values per rank, showed perf time in
    PMPI_Get_count and PMPI_Type_size, the tracer's sizing of each message, as the
    application's functions, with no count. Without an untraced pass nothing can tell the
    caller, and nothing is joined; a function both call keeps its name and both times."""
    if not untraced:
        return {}
    callees = TRACER_OWN - {name.removeprefix("P") for name in set().union(*untraced)}
    return {name: TRACER for name in traced if name.removeprefix("P") in callees}


def _without_parameters(name: str) -> str:
    name = re.sub(r"\)\s*(const|volatile|&|&&|\s)*$", ")", name)
    if not name.endswith(")"):
        return name
    depth = 0
    for index in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[index], 0)
        if depth == 0:
            head = name[:index]
            return name if not head or head.endswith("operator") else head
    return name


def _without_return_type(name: str) -> str:
    """The name after its last space outside brackets (``unsigned long ns::f<int, 2>`` ->
    ``ns::f<int, 2>``), looking only before an operator's name, whose brackets are no
    brackets (``bool ns::operator< <int>``)."""
    if SPECIAL_PREFIX.match(name):
        return name
    operator = re.search(r"\boperator\b", name)
    head = name[:operator.start()] if operator else name
    depth, cut = 0, -1
    for index, character in enumerate(head):
        if character in OPENING:
            depth += 1
        elif character in CLOSING:
            depth -= 1
        elif character == " " and depth == 0:
            cut = index
    return name[cut + 1:] if 0 <= cut < len(name) - 1 else name


def is_mpi(kernel: str) -> bool:
    """An MPI call by the leaf name of its call path (C, Fortran and PMPI spellings), or an
    MPI library's internals grouped as ``<library>``."""
    leaf = kernel.rsplit("/", 1)[-1].strip()
    return runtime_bucket(leaf) == MPI_RUNTIME or bool(MPI_NAME.match(leaf))


def runtime_bucket(kernel: str) -> str | None:
    """The run-time system's bucket a kernel belongs to, or None for the application's own
    code: a samplers' group of an MPI library, the loader, the C library or the OS kernel."""
    if kernel in RUNTIME_BUCKETS:
        return kernel
    if not (kernel.startswith("<") and kernel.endswith(">")):
        return None
    library = kernel[1:-1]
    if MPI_LIBRARY.match(library):
        return MPI_RUNTIME
    return SYSTEM if SYSTEM_LIBRARY.match(library) else None
