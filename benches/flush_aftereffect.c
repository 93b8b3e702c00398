/* What a TLB flush costs the code that runs after it: the median of one timed operation after
 * a given sequence of untimed ones, repeated 4000 times (after 500 untimed repetitions).
 *
 * Each argument is PREFIX:TIMED, letters for operations:
 *   t  write one byte to page 0 of region F (a page fault after a madvise)
 *   m  madvise(F, 1 page, MADV_DONTNEED)         (flushes one page if t came before)
 *   e  madvise(E, 1 page, MADV_DONTNEED), E has page tables but no present page (no flush)
 *   n  write pages 0..33 of F, madvise(F, 34 pages, MADV_DONTNEED)   (a full flush)
 *   p  mprotect(G, 1 page, PROT_READ), mprotect back to RW, write G  (one-page flushes, no fault)
 *   f  write one byte to the next page of a 16 MiB region (a page fault, no flush)
 *   g  getppid()
 * e.g.  flush_aftereffect e:e tm:e tmg:e tme:e tn:e f:e p:e g:g tm:g t:m te:m
 * "tm:e" is the empty madvise right after a one-page flush, as abperf's tlb-flush timed it
 * before 2026-12 (touched and empty calls alternating); "e:e" the same call after itself.
 *
 * Pinned to CPU 0 (-c CPU to change), SCHED_FIFO when permitted; TSC ticks, lfence-fenced,
 * the empty timer pair subtracted.  x86-64 only.
 * Build: cc -O2 -o flush_aftereffect benches/flush_aftereffect.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#define PAGE 4096UL
#define BIG 4096UL

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

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static char *map(size_t pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, pages * PAGE, MADV_NOHUGEPAGE)) {
		perror("mmap/madvise");
		exit(1);
	}
	return p;
}

static char *F, *E, *G, *B;
static size_t next_b;

static void check(int r, const char *what)
{
	if (r) {
		perror(what);
		exit(1);
	}
}

static void op(char c)
{
	switch (c) {
	case 't':
		*(volatile char *)F = 1;
		break;
	case 'm':
		check(madvise(F, PAGE, MADV_DONTNEED), "madvise");
		break;
	case 'e':
		check(madvise(E, PAGE, MADV_DONTNEED), "madvise");
		break;
	case 'n':
		for (int i = 0; i < 34; i++)
			*(volatile char *)(F + i * PAGE) = 1;
		check(madvise(F, 34 * PAGE, MADV_DONTNEED), "madvise");
		break;
	case 'p':
		check(mprotect(G, PAGE, PROT_READ), "mprotect");
		check(mprotect(G, PAGE, PROT_READ | PROT_WRITE), "mprotect");
		*(volatile char *)G = 1;
		break;
	case 'f':
		*(volatile char *)(B + next_b * PAGE) = 1;
		if (++next_b == BIG) {
			check(madvise(B, BIG * PAGE, MADV_DONTNEED), "madvise");
			next_b = 0;
		}
		break;
	case 'g':
		syscall(SYS_getppid);
		break;
	default:
		fprintf(stderr, "flush_aftereffect: unknown operation '%c' (expected t m e n p f g)\n", c);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	int cpu = 0, first = 1;
	if (argc > 2 && strcmp(argv[1], "-c") == 0) {
		cpu = atoi(argv[2]);
		first = 3;
	}
	if (first >= argc) {
		fprintf(stderr, "usage: flush_aftereffect [-c CPU] PREFIX:TIMED...\n");
		return 2;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	check(sched_setaffinity(0, sizeof(set), &set), "sched_setaffinity");
	struct sched_param sp = { .sched_priority = 1 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		fprintf(stderr, "flush_aftereffect: no SCHED_FIFO, other load can preempt samples\n");
	F = map(512);
	E = map(512);
	G = map(512);
	B = map(BIG);
	for (size_t i = 0; i < 512; i++)
		E[i * PAGE] = 1;
	check(madvise(E, 512 * PAGE, MADV_DONTNEED), "madvise");
	*(volatile char *)G = 1;
	static double v[20001];
	for (int i = 0; i < 20001; i++) {
		uint64_t a = t_start(), b = t_stop();
		v[i] = (double)(b - a);
	}
	double oh = median(v, 20001);
	for (int a = first; a < argc; a++) {
		const char *colon = strchr(argv[a], ':');
		if (!colon || !colon[1] || colon[2]) {
			fprintf(stderr, "flush_aftereffect: '%s': expected PREFIX:TIMED, e.g. tm:e\n", argv[a]);
			return 2;
		}
		size_t plen = colon - argv[a];
		const int n = 4000;
		for (int i = 0; i < 500 + n; i++) {
			for (size_t k = 0; k < plen; k++)
				op(argv[a][k]);
			uint64_t t0 = t_start();
			op(colon[1]);
			uint64_t t1 = t_stop();
			if (i >= 500)
				v[i - 500] = (double)(t1 - t0) - oh;
		}
		printf("%-10.*s -> %c : median %6.0f ticks\n", (int)plen, argv[a], colon[1], median(v, n));
	}
	return 0;
}
