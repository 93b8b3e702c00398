/* Independent reference for `abperf micro tlb-flush`: the cost of madvise(MADV_DONTNEED) on N
 * touched pages, timed with lfence;rdtsc;lfence .. rdtscp;lfence, minus the same call on a range
 * that has page tables but no present pages ("empty"), minus the empty timer pair.
 *
 * The default is the plain way to measure it: one private anonymous mapping per size (no THP),
 * in each round and for each size three untimed calls and then SAMPLES timed calls on the touched
 * range (its N pages written one byte each before every call), then three untimed and SAMPLES
 * timed calls on the empty range; the rounds' starts spread over a span of wall time.
 * Options switch on the ways abperf's harness differs, one at a time, for bisecting:
 *
 *   -c CPU        pin to CPU (default 0)
 *   -F            SCHED_FIFO priority 1 (as abperf unless --no-rt)
 *   -r ROUNDS     rounds (default 32)           -s SAMPLES  samples per size per round (default 4)
 *   -S SECONDS    spread the rounds' starts over this span (default 3; 0 = back to back)
 *   -w WARM       untimed calls of each kind per size and round before its samples (default 3)
 *   -m PAGES      map regions of this many pages (default: the size itself)
 *   -f            fresh mappings every round (default: mapped once, reused by every round)
 *   -e            time the empty-range call right after each touched call (interleaved, as
 *                 abperf did before 2026-12)
 *   -p            run two add loops (~10 us, abperf's core probe) at the start of each round
 *   -x            visit all of 1..64,128,256,512 each round in a shuffled order (abperf's sweep),
 *                 reporting only the sizes given
 *   -M            also time mprotect (RO, then RW untimed) after madvise in each round, and
 *                 print its lines too (prefixed "mprotect ")
 *   -a            align regions to 2 MiB (default: wherever mmap puts them)
 *   -H            MADV_HUGEPAGE instead of MADV_NOHUGEPAGE on the regions
 *   -q            print every touched sample of the first size given (in the order taken)
 *
 * Output, one line per size given:  pages=N gross=G empty=E net=G-E overhead=O samples=S
 * (medians in TSC ticks, the timer overhead already subtracted from G and E).  x86-64 only.
 * Usage: madvise_cost [options] PAGES...   Exit 0 on success, 1 on a failed call, 2 on bad usage. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define PAGE 4096UL
#define HUGE (2UL << 20)
#define MAXSIZES 600

static inline uint64_t t_start(void)
{
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
}

static inline uint64_t t_stop(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int align2m, hugeadv;

struct region {
	char *map, *base;
	size_t len;
};

static struct region map(size_t pages)
{
	struct region r;
	r.len = pages * PAGE + (align2m ? HUGE : 0);
	r.map = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r.map == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	r.base = align2m ? (char *)(((uintptr_t)r.map + HUGE - 1) & ~(HUGE - 1)) : r.map;
	if (madvise(r.base, pages * PAGE, hugeadv ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
		perror("madvise(hugepage advice)");
		exit(1);
	}
	return r;
}

static void touch(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*(volatile char *)(p + i * PAGE) = 1;
}

/* An empty range: page tables present (pages written once), no present pages. */
static struct region map_empty(size_t pages)
{
	struct region r = map(pages);
	touch(r.base, pages);
	if (madvise(r.base, pages * PAGE, MADV_DONTNEED)) {
		perror("madvise");
		exit(1);
	}
	return r;
}

static double timed(int op, char *p, size_t n, double oh)
{
	uint64_t t0 = t_start();
	int r = op ? mprotect(p, n * PAGE, PROT_READ) : madvise(p, n * PAGE, MADV_DONTNEED);
	uint64_t t1 = t_stop();
	if (r) {
		perror(op ? "mprotect" : "madvise");
		exit(1);
	}
	if (op && mprotect(p, n * PAGE, PROT_READ | PROT_WRITE)) {
		perror("mprotect");
		exit(1);
	}
	return (double)(t1 - t0) - oh;
}

static void add_loops(void)
{
	uint64_t a = 0, b = 0, c = 0, d = 0, n = 1000;
	__asm__ volatile("1: add $1,%0; add $1,%1; add $1,%2; add $1,%3;"
			 "add $1,%0; add $1,%1; add $1,%2; add $1,%3; dec %4; jnz 1b"
			 : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(n));
	n = 1000;
	__asm__ volatile("1: add $1,%0; add $1,%0; add $1,%0; add $1,%0; add $1,%0;"
			 "add $1,%0; add $1,%0; add $1,%0; add $1,%0; add $1,%0; dec %1; jnz 1b"
			 : "+r"(a), "+r"(n));
}

int main(int argc, char **argv)
{
	int cpu = 0, fifo = 0, rounds = 32, per = 4, warm = 3, fresh = 0, inter = 0, probe = 0;
	int sweep_all = 0, with_mprotect = 0, dump = 0;
	long mappages = 0;
	double span = 3;
	int o;
	while ((o = getopt(argc, argv, "c:Fr:s:S:w:m:fepxMaHq")) != -1) {
		switch (o) {
		case 'c': cpu = atoi(optarg); break;
		case 'F': fifo = 1; break;
		case 'r': rounds = atoi(optarg); break;
		case 's': per = atoi(optarg); break;
		case 'S': span = atof(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'm': mappages = atol(optarg); break;
		case 'f': fresh = 1; break;
		case 'e': inter = 1; break;
		case 'p': probe = 1; break;
		case 'x': sweep_all = 1; break;
		case 'M': with_mprotect = 1; break;
		case 'a': align2m = 1; break;
		case 'H': hugeadv = 1; break;
		case 'q': dump = 1; break;
		default: return 2;
		}
	}
	size_t want[MAXSIZES], nwant = 0;
	for (int i = optind; i < argc && nwant < MAXSIZES; i++) {
		long v = atol(argv[i]);
		if (v < 1 || v > 100000) {
			fprintf(stderr, "madvise_cost: bad page count '%s' (expected 1..100000)\n", argv[i]);
			return 2;
		}
		want[nwant++] = v;
	}
	if (nwant == 0 || rounds < 1 || per < 1 || warm < 0 || span < 0) {
		fprintf(stderr, "usage: madvise_cost [options] PAGES...\n");
		return 2;
	}
	/* The sizes visited each round: the given ones, or abperf's sweep in a shuffled order. */
	size_t sizes[MAXSIZES], nsizes = 0;
	if (sweep_all) {
		for (size_t n = 1; n <= 64; n++)
			sizes[nsizes++] = n;
		sizes[nsizes++] = 128;
		sizes[nsizes++] = 256;
		sizes[nsizes++] = 512;
		srand(0x7cb);
		for (size_t i = nsizes - 1; i > 0; i--) {
			size_t j = rand() % (i + 1), t = sizes[i];
			sizes[i] = sizes[j];
			sizes[j] = t;
		}
		for (size_t w = 0; w < nwant; w++) {
			int found = 0;
			for (size_t i = 0; i < nsizes; i++)
				found |= sizes[i] == want[w];
			if (!found) {
				fprintf(stderr, "madvise_cost: -x sweeps 1..64,128,256,512 only\n");
				return 2;
			}
		}
	} else {
		memcpy(sizes, want, nwant * sizeof(*want));
		nsizes = nwant;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	if (fifo) {
		struct sched_param sp = { .sched_priority = 1 };
		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			perror("SCHED_FIFO");
			return 1;
		}
	}
	/* Timer overhead: median of 20,000 empty pairs. */
	static double pairs[20000];
	for (int i = 0; i < 20000; i++) {
		uint64_t a = t_start(), b = t_stop();
		pairs[i] = (double)(b - a);
	}
	double oh = median(pairs, 20000);

	/* Per size: its own regions, of the size itself or of -m pages (at least the size). */
	static struct region full[MAXSIZES], empty[MAXSIZES];
	size_t len[MAXSIZES];
	for (size_t i = 0; i < nsizes; i++) {
		len[i] = mappages > 0 ? (size_t)mappages : sizes[i];
		if (len[i] < sizes[i])
			len[i] = sizes[i];
	}
	size_t cap = (size_t)rounds * per;
	/* Samples per op (0 madvise, 1 mprotect) and size: touched (g) and empty (e). */
	static double *g[2][MAXSIZES], *e[2][MAXSIZES];
	static size_t ng[2][MAXSIZES], ne[2][MAXSIZES];
	for (size_t i = 0; i < 2 * nsizes; i++) {
		g[i / nsizes][i % nsizes] = calloc(cap, sizeof(double));
		e[i / nsizes][i % nsizes] = calloc(cap, sizeof(double));
		if (!g[i / nsizes][i % nsizes] || !e[i / nsizes][i % nsizes]) {
			perror("calloc");
			return 1;
		}
	}
	int ops = with_mprotect ? 2 : 1;
	double t0 = now_s();
	for (int r = 0; r < rounds; r++) {
		double due = t0 + span * r / rounds;
		while (now_s() < due - 0.002)
			usleep(500);
		while (now_s() < due)
			;
		if (probe) {
			add_loops();
			add_loops();
		}
		for (size_t i = 0; i < nsizes; i++) {
			if (fresh || r == 0) {
				if (r > 0) {
					munmap(full[i].map, full[i].len);
					munmap(empty[i].map, empty[i].len);
				}
				full[i] = map(len[i]);
				empty[i] = map_empty(len[i]);
			}
		}
		for (int op = 0; op < ops; op++) {
			for (size_t i = 0; i < nsizes; i++) {
				size_t n = sizes[i];
				char *fb = full[i].base, *eb = empty[i].base;
				if (inter) {
					/* Touched and empty calls alternate. */
					for (int k = 0; k < warm + per; k++) {
						touch(fb, n);
						double x = timed(op, fb, n, oh);
						double y = timed(op, eb, n, oh);
						if (k >= warm) {
							g[op][i][ng[op][i]++] = x;
							e[op][i][ne[op][i]++] = y;
						}
					}
					continue;
				}
				/* Touched calls back to back, then empty calls back to back, each block
				 * after `warm` untimed calls of its own kind. */
				for (int k = 0; k < warm + per; k++) {
					touch(fb, n);
					double x = timed(op, fb, n, oh);
					if (k >= warm)
						g[op][i][ng[op][i]++] = x;
				}
				for (int k = 0; k < warm + per; k++) {
					double y = timed(op, eb, n, oh);
					if (k >= warm)
						e[op][i][ne[op][i]++] = y;
				}
			}
		}
	}
	for (int op = 0; op < ops; op++) {
		for (size_t w = 0; w < nwant; w++) {
			for (size_t i = 0; i < nsizes; i++) {
				if (sizes[i] != want[w])
					continue;
				if (dump && w == 0 && op == 0)
					for (size_t k = 0; k < ng[op][i]; k++)
						printf("sample %.0f\n", g[op][i][k]);
				double mg = median(g[op][i], ng[op][i]);
				double me = median(e[op][i], ne[op][i]);
				printf("%spages=%zu gross=%.0f empty=%.0f net=%.0f overhead=%.0f samples=%zu\n",
				       op ? "mprotect " : "", sizes[i], mg, me, mg - me, oh, ng[op][i]);
				break;
			}
		}
	}
	return 0;
}
