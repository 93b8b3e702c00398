/* Test workload for `abperf trace`: REPS x madvise(MADV_DONTNEED) on each of the given numbers of
 * touched pages.  With -s, a second thread of the same process spins on another CPU, so every
 * flush must also shoot down that CPU's TLB (IPI -> call_function on the remote CPU).
 * With -t, prints the main thread's CPU time in the loop (ns, user + system, so that a busy
 * machine's preemptions do not count) and the wall time (ns) on stdout.
 * Usage: flushes [-s] [-t] REPS PAGES...   Exit 0 on success, 1 on a failed system call. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_int started;

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *spin(void *arg)
{
	(void)arg;
	pin(1);
	atomic_store(&started, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		;
	return NULL;
}

int main(int argc, char **argv)
{
	int spinner = 0, timed = 0, i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-s") == 0)
			spinner = 1;
		else if (strcmp(argv[i], "-t") == 0)
			timed = 1;
		else
			break;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: flushes [-s] [-t] REPS PAGES...\n");
		return 2;
	}
	long reps = atol(argv[i++]);
	long psz = sysconf(_SC_PAGESIZE);
	pthread_t th;
	pin(0);
	if (spinner) {
		if (pthread_create(&th, NULL, spin, NULL) != 0)
			return 1;
		while (!atomic_load(&started))
			;
	}
	struct timespec t0, t1, c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (; i < argc; i++) {
		long pages = atol(argv[i]);
		size_t len = (size_t)pages * psz;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		/* at most 64 pages (256 KiB, not 2 MiB aligned): never a transparent huge page */
		for (long r = 0; r < reps; r++) {
			for (long k = 0; k < pages; k++)
				p[k * psz] = 1;
			if (madvise(p, len, MADV_DONTNEED) != 0)
				return 1;
		}
		munmap(p, len);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (timed)
		printf("%lld %lld\n", (long long)(c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec),
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	if (spinner) {
		atomic_store(&stop, 1);
		pthread_join(th, NULL);
	}
	return 0;
}
