/* apmt's PMPI tracing library: the counters, the peers, and the trace file.
 *
 * Counters live in one open-addressing hash table keyed by (operation, peer). It is allocated
 * at MPI_Init and doubles when half full, so a call costs two clock reads and a table probe,
 * never an allocation (the table grows at most log2(entries) times in a run).
 *
 * Persistent requests live in a second one, keyed by the request handle's bytes (a pointer in
 * Open MPI, an int in MPICH: compared with memcmp, so either works), allocated at the first
 * *_init call and doubled when half full; MPI_Request_free empties a slot by moving the
 * entries after it back (linear probing needs no tombstones then).
 *
 * Both tables, like the peers' caches, are locked only under MPI_THREAD_MULTIPLE, where
 * several threads may call MPI at once.
 *
 * The trace file, written at MPI_Finalize to $APMT_PMPI_DIR/pmpi.<rank>.tsv:
 *     # apmt-pmpi 1 rank=<r> size=<P> pid=<pid> host=<hostname>
 *     op	peer	calls	bytes	time
 *     MPI_Send	1	3	24000	0.000123
 *     ...
 *     # end
 * It is written to a hidden temporary file and renamed, so a rank that dies before or during
 * MPI_Finalize leaves no pmpi.<rank>.tsv at all, and a file that exists is complete.
 */
#define _GNU_SOURCE
#include "apmt_pmpi.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FORMAT_VERSION 1
#define INITIAL_SLOTS 256 /* a power of two */

static const char *const operation_names[OP_COUNT] = {
#define APMT_NAME(name) "MPI_" #name,
    APMT_OPERATIONS(APMT_NAME)
#undef APMT_NAME
};

struct slot {
    int op; /* -1: empty */
    int peer;
    uint64_t calls;
    uint64_t bytes;
    double time;
};

int apmt_tracing = 0;

static int started = 0;
static int out_of_memory = 0;
static int threaded = 0; /* MPI_THREAD_MULTIPLE: several threads may record at once */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots = NULL;
static size_t slot_count = 0, slots_used = 0;
static int world_rank = 0, world_size = 0;
static char directory[PATH_MAX];
static int rank_map_keyval = MPI_KEYVAL_INVALID;
static int win_map_keyval = MPI_KEYVAL_INVALID;

double apmt_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* ---- counters ---------------------------------------------------------------------------- */

static size_t slot_index(int op, int peer, size_t count)
{
    uint32_t hash = (uint32_t)op * 0x9E3779B1u ^ (uint32_t)peer * 0x85EBCA77u;
    hash ^= hash >> 15;
    return hash & (count - 1);
}

static struct slot *new_slots(size_t count)
{
    struct slot *table = malloc(count * sizeof *table);
    if (table)
        for (size_t i = 0; i < count; i++)
            table[i].op = -1;
    return table;
}

/* Double the table; on failure keep the old one (find_slot then reports it full). */
static void grow(void)
{
    size_t count = slot_count * 2;
    struct slot *table = new_slots(count);
    if (!table)
        return;
    for (size_t i = 0; i < slot_count; i++) {
        if (slots[i].op < 0)
            continue;
        size_t j = slot_index(slots[i].op, slots[i].peer, count);
        while (table[j].op >= 0)
            j = (j + 1) & (count - 1);
        table[j] = slots[i];
    }
    free(slots);
    slots = table;
    slot_count = count;
}

static struct slot *find_slot(int op, int peer)
{
    if (2 * (slots_used + 1) > slot_count)
        grow(); /* keeps the old table when out of memory */
    size_t i = slot_index(op, peer, slot_count);
    while (slots[i].op >= 0) {
        if (slots[i].op == op && slots[i].peer == peer)
            return &slots[i];
        i = (i + 1) & (slot_count - 1);
    }
    if (slots_used + 2 > slot_count) /* keep a slot empty, or probes would never end */
        return NULL;
    slots[i] = (struct slot){.op = op, .peer = peer};
    slots_used++;
    return &slots[i];
}

/* Count one call of op with peer and bytes that took elapsed seconds. */
static void tally(enum apmt_op op, int peer, int64_t bytes, double elapsed)
{
    if (!apmt_tracing)
        return;
    if (threaded)
        pthread_mutex_lock(&lock);
    struct slot *slot = find_slot((int)op, peer);
    if (slot) {
        slot->calls += 1;
        slot->bytes += bytes > 0 ? (uint64_t)bytes : 0;
        slot->time += elapsed;
    } else {
        out_of_memory = 1;
    }
    if (threaded)
        pthread_mutex_unlock(&lock);
}

void apmt_record(enum apmt_op op, int peer, int64_t bytes, double start)
{
    tally(op, peer, bytes, apmt_now() - start);
}

/* ---- sizes ------------------------------------------------------------------------------- */

int64_t apmt_volume(int64_t count, MPI_Datatype type)
{
    int size = 0;
    if (type == MPI_DATATYPE_NULL || type == NULL || count <= 0)
        return 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size == MPI_UNDEFINED)
        return 0;
    return count * (int64_t)size;
}

int64_t apmt_sum(const int *counts, int n)
{
    int64_t sum = 0;
    for (int i = 0; counts && i < n; i++)
        sum += counts[i];
    return sum;
}

int apmt_comm_ranks(MPI_Comm comm)
{
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &size);
    else
        PMPI_Comm_size(comm, &size);
    return size;
}

int apmt_comm_rank(MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

/* ---- peers: ranks of a communicator as ranks of MPI_COMM_WORLD ---------------------------- */

/* Cached on each communicator (and window) as an MPI attribute, so it is computed once per
 * communicator and freed by MPI with it (whichever binding frees it). */
struct rank_map {
    int identity; /* rank i of the communicator is world rank i */
    int size;
    int world[]; /* when not identity */
};

static int free_rank_map(MPI_Comm comm, int keyval, void *map, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    free(map);
    return MPI_SUCCESS;
}

static int free_win_rank_map(MPI_Win win, int keyval, void *map, void *extra)
{
    (void)win, (void)keyval, (void)extra;
    free(map);
    return MPI_SUCCESS;
}

/* The world ranks of group's ranks (NULL when out of memory); frees group. */
static struct rank_map *new_rank_map(MPI_Group group)
{
    MPI_Group world;
    int size = 0;
    PMPI_Group_size(group, &size);
    struct rank_map *map = malloc(sizeof *map + (size_t)size * sizeof(int));
    int *ranks = malloc((size_t)size * sizeof(int) + 1);
    if (!map || !ranks) {
        free(map), free(ranks);
        PMPI_Group_free(&group);
        return NULL;
    }
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    PMPI_Group_translate_ranks(group, size, ranks, world, map->world);
    map->size = size;
    map->identity = 1;
    for (int i = 0; i < size; i++)
        map->identity &= map->world[i] == i;
    free(ranks);
    if (map->identity) { /* the common case (a duplicate of MPI_COMM_WORLD): no table */
        struct rank_map *small = realloc(map, sizeof *map);
        map = small ? small : map;
    }
    PMPI_Group_free(&world);
    PMPI_Group_free(&group);
    return map;
}

static struct rank_map *new_comm_rank_map(MPI_Comm comm)
{
    MPI_Group group;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_group(comm, &group);
    else
        PMPI_Comm_group(comm, &group);
    struct rank_map *map = new_rank_map(group);
    if (map)
        PMPI_Comm_set_attr(comm, rank_map_keyval, map);
    return map;
}

static struct rank_map *rank_map_of(MPI_Comm comm)
{
    struct rank_map *map = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, rank_map_keyval, &map, &found);
    if (found)
        return map;
    if (threaded)
        pthread_mutex_lock(&lock);
    PMPI_Comm_get_attr(comm, rank_map_keyval, &map, &found);
    if (!found)
        map = new_comm_rank_map(comm);
    if (threaded)
        pthread_mutex_unlock(&lock);
    return map;
}

/* The rank map of a window's group, cached on the window as rank_map_of caches a
 * communicator's. */
static struct rank_map *win_rank_map_of(MPI_Win win)
{
    struct rank_map *map = NULL;
    int found = 0;
    PMPI_Win_get_attr(win, win_map_keyval, &map, &found);
    if (found)
        return map;
    if (threaded)
        pthread_mutex_lock(&lock);
    PMPI_Win_get_attr(win, win_map_keyval, &map, &found);
    if (!found) {
        MPI_Group group;
        PMPI_Win_get_group(win, &group);
        map = new_rank_map(group);
        if (map)
            PMPI_Win_set_attr(win, win_map_keyval, map);
    }
    if (threaded)
        pthread_mutex_unlock(&lock);
    return map;
}

static int world_rank_of(const struct rank_map *map, int rank)
{
    if (!map || map->identity || rank >= map->size || map->world[rank] == MPI_UNDEFINED)
        return rank;
    return map->world[rank];
}

int apmt_world_peer(MPI_Comm comm, int rank)
{
    if (rank == MPI_ANY_SOURCE)
        return PEER_ANY;
    if (rank == MPI_PROC_NULL)
        return PEER_PROC_NULL;
    if (rank < 0 || comm == MPI_COMM_WORLD || rank_map_keyval == MPI_KEYVAL_INVALID)
        return rank;
    return world_rank_of(rank_map_of(comm), rank);
}

int apmt_win_peer(MPI_Win win, int rank)
{
    if (rank == MPI_PROC_NULL)
        return PEER_PROC_NULL;
    if (rank < 0 || win_map_keyval == MPI_KEYVAL_INVALID)
        return rank;
    return world_rank_of(win_rank_map_of(win), rank);
}

void apmt_p2p(enum apmt_op op, MPI_Comm comm, int peer, int64_t count, MPI_Datatype type,
              double start)
{
    if (!apmt_tracing)
        return;
    int world_peer = apmt_world_peer(comm, peer);
    int64_t bytes = world_peer == PEER_PROC_NULL ? 0 : apmt_volume(count, type);
    apmt_record(op, world_peer, bytes, start);
}

void apmt_rma(enum apmt_op op, MPI_Win win, int target, int64_t count, MPI_Datatype type,
              double start)
{
    if (!apmt_tracing)
        return;
    int peer = apmt_win_peer(win, target);
    int64_t bytes = peer == PEER_PROC_NULL ? 0 : apmt_volume(count, type);
    apmt_record(op, peer, bytes, start);
}

void apmt_get_accumulate(enum apmt_op op, MPI_Win win, int target, MPI_Op operation,
                         int origin_count, MPI_Datatype origin_type, int result_count,
                         MPI_Datatype result_type, double start)
{
    if (operation == MPI_NO_OP)
        apmt_rma(op, win, target, result_count, result_type, start);
    else
        apmt_rma(op, win, target, origin_count, origin_type, start);
}

void apmt_received(enum apmt_op op, MPI_Comm comm, int source, const MPI_Status *status,
                   int64_t count, MPI_Datatype type, double start)
{
    if (!apmt_tracing)
        return;
    if (source == MPI_ANY_SOURCE && status)
        source = status->MPI_SOURCE;
    int peer = apmt_world_peer(comm, source);
    int64_t bytes = 0;
    if (type != MPI_DATATYPE_NULL && peer != PEER_PROC_NULL) {
        int received = MPI_UNDEFINED;
        /* the message may be shorter than the buffer: count what arrived */
        if (status && PMPI_Get_count(status, type, &received) == MPI_SUCCESS
            && received != MPI_UNDEFINED)
            count = received;
        bytes = apmt_volume(count, type);
    }
    apmt_record(op, peer, bytes, start);
}

/* ---- persistent requests ---------------------------------------------------------------- */

#define INITIAL_REQUEST_SLOTS 64 /* a power of two */

struct persistent {
    MPI_Request handle;
    int used;
    int op;
    int peer;
    int64_t bytes;
};

static struct persistent *requests = NULL;
static size_t request_slots = 0, requests_used = 0;

static int same_request(MPI_Request a, MPI_Request b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static size_t request_index(MPI_Request handle, size_t count)
{
    unsigned char bytes[sizeof handle];
    uint64_t hash = 14695981039346656037u; /* FNV-1a over the handle's bytes */
    memcpy(bytes, &handle, sizeof handle);
    for (size_t i = 0; i < sizeof handle; i++)
        hash = (hash ^ bytes[i]) * 1099511628211u;
    return (size_t)(hash ^ hash >> 32) & (count - 1);
}

/* The slot of handle, or the empty slot where it would go. */
static size_t request_slot(MPI_Request handle)
{
    size_t i = request_index(handle, request_slots);
    while (requests[i].used && !same_request(requests[i].handle, handle))
        i = (i + 1) & (request_slots - 1);
    return i;
}

/* Room for one more request: allocate or double the table; 0 when out of memory. */
static int request_room(void)
{
    if (2 * (requests_used + 1) <= request_slots)
        return 1;
    size_t count = request_slots ? 2 * request_slots : INITIAL_REQUEST_SLOTS;
    struct persistent *table = calloc(count, sizeof *table), *old = requests;
    size_t old_count = request_slots;
    if (!table)
        return requests_used + 2 <= request_slots; /* keep a slot empty */
    requests = table;
    request_slots = count;
    for (size_t i = 0; i < old_count; i++)
        if (old[i].used)
            requests[request_slot(old[i].handle)] = old[i];
    free(old);
    return 1;
}

void apmt_persistent(enum apmt_op op, MPI_Request request, MPI_Comm comm, int peer,
                     int64_t count, MPI_Datatype type)
{
    if (!apmt_tracing)
        return;
    int world_peer = apmt_world_peer(comm, peer);
    struct persistent entry = {.handle = request, .used = 1, .op = (int)op, .peer = world_peer,
                               .bytes = world_peer == PEER_PROC_NULL ? 0
                                                                     : apmt_volume(count, type)};
    if (threaded)
        pthread_mutex_lock(&lock);
    if (request_room()) {
        size_t i = request_slot(request);
        requests_used += !requests[i].used;
        requests[i] = entry;
    } else {
        out_of_memory = 1; /* its starts could not be counted: no trace */
    }
    if (threaded)
        pthread_mutex_unlock(&lock);
}

/* Copy the entry of request into found; 0 if it has none. */
static int find_request(MPI_Request request, struct persistent *found)
{
    int known = 0;
    if (threaded)
        pthread_mutex_lock(&lock);
    if (requests) {
        size_t i = request_slot(request);
        if (requests[i].used) {
            *found = requests[i];
            known = 1;
        }
    }
    if (threaded)
        pthread_mutex_unlock(&lock);
    return known;
}

void apmt_started(enum apmt_op call, int n, const void *started, apmt_request_at *at,
                  double start)
{
    struct persistent found;
    int known = 0;
    if (!apmt_tracing)
        return;
    double elapsed = apmt_now() - start, share = n > 0 ? elapsed / n : 0;
    for (int i = 0; i < n; i++)
        if (find_request(at(started, i), &found)) {
            tally((enum apmt_op)found.op, found.peer, found.bytes, share);
            known++;
        }
    if (known < n || n == 0)
        tally(call, PEER_NONE, 0, elapsed - known * share);
}

/* Empty slot hole, moving back each later entry of its run whose home slot does not lie
 * after the hole (cyclically, up to the entry), which the hole would hide from probes. */
static void empty_request_slot(size_t hole)
{
    size_t mask = request_slots - 1;
    for (size_t j = (hole + 1) & mask; requests[j].used; j = (j + 1) & mask) {
        size_t home = request_index(requests[j].handle, request_slots);
        int reachable = hole <= j ? hole < home && home <= j : hole < home || home <= j;
        if (!reachable) {
            requests[hole] = requests[j];
            hole = j;
        }
    }
    requests[hole].used = 0;
}

void apmt_request_freed(MPI_Request request)
{
    if (!apmt_tracing)
        return;
    if (threaded)
        pthread_mutex_lock(&lock);
    if (requests) {
        size_t i = request_slot(request);
        if (requests[i].used) {
            empty_request_slot(i);
            requests_used--;
        }
    }
    if (threaded)
        pthread_mutex_unlock(&lock);
}

/* ---- start and finish -------------------------------------------------------------------- */

void apmt_start(int thread_level)
{
    const char *dir = getenv("APMT_PMPI_DIR");
    if (started)
        return;
    started = 1;
    if (!dir || !*dir || strlen(dir) >= sizeof directory)
        return;
    strcpy(directory, dir);
    slots = new_slots(INITIAL_SLOTS);
    if (!slots)
        return;
    slot_count = INITIAL_SLOTS;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_rank_map, &rank_map_keyval, NULL);
    PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, free_win_rank_map, &win_map_keyval, NULL);
    threaded = thread_level == MPI_THREAD_MULTIPLE;
    apmt_tracing = 1;
}

static int by_op_then_peer(const void *a, const void *b)
{
    const struct slot *x = a, *y = b;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return (x->peer > y->peer) - (x->peer < y->peer);
}

static int write_rows(FILE *out)
{
    struct slot *rows = malloc((slots_used + 1) * sizeof *rows);
    size_t n = 0;
    char host[256] = "unknown";
    if (!rows)
        return -1;
    for (size_t i = 0; i < slot_count; i++)
        if (slots[i].op >= 0)
            rows[n++] = slots[i];
    qsort(rows, n, sizeof *rows, by_op_then_peer);
    gethostname(host, sizeof host - 1);
    host[strcspn(host, " \t\n")] = '\0';
    fprintf(out, "# apmt-pmpi %d rank=%d size=%d pid=%ld host=%s\n", FORMAT_VERSION,
            world_rank, world_size, (long)getpid(), host);
    fprintf(out, "op\tpeer\tcalls\tbytes\ttime\n");
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s\t%d\t%llu\t%llu\t%.9g\n", operation_names[rows[i].op], rows[i].peer,
                (unsigned long long)rows[i].calls, (unsigned long long)rows[i].bytes,
                rows[i].time);
    fprintf(out, "# end\n");
    free(rows);
    return 0;
}

static void fail(const char *what, const char *path)
{
    fprintf(stderr, "apmt-pmpi: rank %d: %s %s: %s\n", world_rank, what, path, strerror(errno));
}

void apmt_finish(void)
{
    char path[PATH_MAX + 64], temporary[PATH_MAX + 96];
    if (!apmt_tracing)
        return;
    apmt_tracing = 0;
    if (out_of_memory) {
        fprintf(stderr, "apmt-pmpi: rank %d: out of memory, no trace written\n", world_rank);
        return;
    }
    if (mkdir(directory, 0777) != 0 && errno != EEXIST) {
        fail("cannot create", directory);
        return;
    }
    snprintf(path, sizeof path, "%s/pmpi.%d.tsv", directory, world_rank);
    snprintf(temporary, sizeof temporary, "%s/.pmpi.%d.tsv.%ld", directory, world_rank,
             (long)getpid());
    FILE *out = fopen(temporary, "w");
    if (!out) {
        fail("cannot write", temporary);
        return;
    }
    int failed = write_rows(out) != 0;
    failed |= fflush(out) != 0 || ferror(out);
    failed |= fclose(out) != 0;
    if (failed || rename(temporary, path) != 0) {
        fail("cannot write", path);
        unlink(temporary);
    }
}
