/*
 * chase.c: load latency per working-set size by pointer chasing, and the core clock.
 *
 * Part of apmt (`apmt machine probe`, see apmt/probe/__init__.py, which compiles and runs it).
 *
 * Latency: for each working-set size given on the command line, the buffer's first SIZE bytes
 * are cut into cache-line-sized elements and linked into ONE random cycle (Sattolo's
 * algorithm). Following it (`p = *p`) makes every load depend on the previous one, so the time
 * per load is the load-to-use latency of whichever level holds the working set. The random
 * order defeats the hardware prefetchers, as lmbench's lat_mem_rd (random mode) and Intel's
 * Memory Latency Checker do. The buffer is 2 MiB aligned and asked for transparent huge
 * pages, so TLB misses stay out of the cache latencies where the kernel grants huge pages
 * (the model charges TLB misses separately).
 *
 * Clock: a chain of dependent register-register integer adds takes one cycle per add on every
 * x86-64 core since the K8 and the Core 2 (and on 64-bit Arm cores), so adds per nanosecond is
 * the running clock in GHz, turbo included. Only register operands are used: some recent cores
 * fold add-immediate at rename. The caller may prefer a value from sysfs or /proc/cpuinfo.
 *
 * Usage: chase [-l LINE] [-t MS] [-r REPS] [-c CPU] [-f] SIZE...
 *   -l LINE  element size in bytes (the cache line; default 64)
 *   -t MS    timed milliseconds per size, split over the repetitions (default 100)
 *   -r REPS  repetitions per size; the fastest counts, since noise only adds time (default 5;
 *            many short ones beat few long ones where the host deschedules the CPU now and then)
 *   -c CPU   pin to this CPU (default: stay where started)
 *   -f       also measure the clock first
 * Output: comment lines starting with '#' ("# frequency_ghz G", "# sink X"), then one line per
 * size: "size_bytes ns_per_load".
 *
 * Build: cc -O2 -o chase chase.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HUGE_PAGE (2u << 20)

/* Every chain result lands here, so the compiler cannot drop the loads. */
static volatile uintptr_t sink;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* xorshift64*: fast, good enough to scramble the chain, reproducible from a fixed seed. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/*
 * Link the first `count` elements of `base` (each `line` bytes) into one random cycle.
 * Sattolo's shuffle yields a single cycle through all elements, so the chase visits the
 * whole working set before repeating.
 */
static int build_cycle(char *base, size_t count, size_t line)
{
    size_t *order = malloc(count * sizeof *order);
    if (order == NULL)
        return -1;
    for (size_t i = 0; i < count; i++)
        order[i] = i;
    for (size_t i = count - 1; i > 0; i--) {
        size_t j = (size_t)(next_random() % i); /* j < i: Sattolo, not Fisher-Yates */
        size_t swap = order[i];
        order[i] = order[j];
        order[j] = swap;
    }
    for (size_t i = 0; i < count; i++)
        *(void **)(base + i * line) = base + order[i] * line;
    free(order);
    return 0;
}

/* Follow the chain for `loads` loads (a multiple of 16); unrolled so the loop costs nothing. */
static __attribute__((noinline)) void **chase(void **p, size_t loads)
{
#define STEP p = (void **)*p;
    for (size_t i = 0; i < loads; i += 16) {
        STEP STEP STEP STEP STEP STEP STEP STEP
        STEP STEP STEP STEP STEP STEP STEP STEP
    }
#undef STEP
    return p;
}

/*
 * Nanoseconds per load for `loads` loads, continuing from *position and leaving it where the
 * chain stopped. Continuing matters: restarting every run at the same element would replay
 * the same prefix of the cycle, which then sits in cache whenever a run is shorter than a lap
 * (large working sets); continuing, every load reaches a line last touched a whole working
 * set ago.
 */
static double time_chain(void ***position, size_t loads)
{
    double begin = now_ns();
    *position = chase(*position, loads);
    double elapsed = now_ns() - begin;
    sink += (uintptr_t)*position;
    return elapsed / (double)loads;
}

/* Smallest ns per load over `reps` runs of about `target_ns` each, after a warm-up lap. */
static double measure(char *base, size_t count, double target_ns, int reps)
{
    void **position = (void **)base;
    size_t loads = 16 * (count / 16 + 1); /* warm-up: at least one lap, caches and TLB filled */
    double per_load = time_chain(&position, loads);
    while (per_load * (double)loads < 2e6) { /* calibrate on >= 2 ms */
        loads *= 2;
        per_load = time_chain(&position, loads);
    }
    size_t timed = (size_t)(target_ns / per_load / 16.0 + 1.0) * 16;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = time_chain(&position, timed);
        if (t < best)
            best = t;
    }
    return best;
}

#if defined(__x86_64__) || defined(__i386__)
#define ADD "add %1, %0\n\t"
#elif defined(__aarch64__)
#define ADD "add %0, %0, %1\n\t"
#endif

#ifdef ADD
#define ADD8 ADD ADD ADD ADD ADD ADD ADD ADD
/* Blocks of 64 dependent adds; `step` is a register, so nothing is folded at rename. */
static uint64_t add_chain(uint64_t x, uint64_t step, long blocks)
{
    for (long b = 0; b < blocks; b++)
        __asm__ volatile(ADD8 ADD8 ADD8 ADD8 ADD8 ADD8 ADD8 ADD8 : "+r"(x) : "r"(step));
    return x;
}

/*
 * Running clock in GHz: adds per nanosecond, the fastest of 100 runs of about 1 ms. Short runs
 * matter in a virtual machine: a run during which the host deschedules the CPU looks slow, and
 * among many short runs most are not interrupted at all.
 */
static double measure_ghz(void)
{
    long blocks = 16;
    double warm_until = now_ns() + 5e7; /* 50 ms of work lets the core reach its clock */
    while (now_ns() < warm_until)
        sink += add_chain(sink, 1, 1000);
    for (;;) { /* calibrate a run to >= 1 ms */
        double begin = now_ns();
        sink += add_chain(sink, 1, blocks);
        if (now_ns() - begin >= 1e6)
            break;
        blocks *= 2;
    }
    double best = 0.0;
    for (int r = 0; r < 100; r++) {
        double begin = now_ns();
        sink += add_chain(sink, 1, blocks);
        double ghz = 64.0 * (double)blocks / (now_ns() - begin);
        if (ghz > best)
            best = ghz;
    }
    return best;
}
#else
/* No instruction known to take one cycle here: report 0, the caller reads the system value. */
static double measure_ghz(void) { return 0.0; }
#endif

/* A buffer of at least `bytes`, 2 MiB aligned, asked for huge pages; NULL on failure. */
static char *huge_buffer(size_t bytes)
{
    size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *buffer = NULL;
    if (posix_memalign(&buffer, HUGE_PAGE, rounded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(buffer, rounded, MADV_HUGEPAGE); /* a hint: refusal only costs TLB misses */
#endif
    memset(buffer, 0, rounded); /* fault every page in before timing */
    return buffer;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        fprintf(stderr, "chase: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

int main(int argc, char **argv)
{
    size_t line = 64;
    double target_ms = 100.0;
    int reps = 5, want_clock = 0, option;
    while ((option = getopt(argc, argv, "l:t:r:c:f")) != -1) {
        switch (option) {
        case 'l': line = strtoul(optarg, NULL, 10); break;
        case 't': target_ms = strtod(optarg, NULL); break;
        case 'r': reps = atoi(optarg); break;
        case 'c': pin(atoi(optarg)); break;
        case 'f': want_clock = 1; break;
        default:
            fprintf(stderr, "usage: chase [-l LINE] [-t MS] [-r REPS] [-c CPU] [-f] SIZE...\n");
            return 2;
        }
    }
    if (line < sizeof(void *) || reps < 1 || target_ms <= 0) {
        fprintf(stderr, "chase: bad -l, -r or -t\n");
        return 2;
    }
    size_t largest = 0;
    for (int i = optind; i < argc; i++) {
        size_t size = strtoull(argv[i], NULL, 10);
        if (size < 2 * line) {
            fprintf(stderr, "chase: size %s is below two lines of %zu bytes\n", argv[i], line);
            return 2;
        }
        if (size > largest)
            largest = size;
    }
    if (want_clock)
        printf("# frequency_ghz %.4f\n", measure_ghz());
    fflush(stdout);
    char *buffer = largest ? huge_buffer(largest) : NULL;
    if (largest && buffer == NULL) {
        fprintf(stderr, "chase: cannot allocate %zu bytes\n", largest);
        return 1;
    }
    double target_ns = target_ms * 1e6 / reps;
    for (int i = optind; i < argc; i++) {
        size_t size = strtoull(argv[i], NULL, 10);
        size_t count = size / line;
        if (build_cycle(buffer, count, line) != 0) {
            fprintf(stderr, "chase: out of memory building a chain of %zu elements\n", count);
            return 1;
        }
        printf("%zu %.4f\n", count * line, measure(buffer, count, target_ns, reps));
        fflush(stdout);
    }
    printf("# sink %lu\n", (unsigned long)(sink & 0xff));
    free(buffer);
    return 0;
}
