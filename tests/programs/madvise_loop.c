/* Test workload: touch N pages, then madvise(MADV_DONTNEED) them, COUNT times.
 * Each call on touched pages zaps the PTEs and flushes the TLB once (tlb:tlb_flush).
 * Usage: madvise_loop COUNT [PAGES] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 100;
	long pages = argc > 2 ? atol(argv[2]) : 1;
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pages * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (long i = 0; i < count; i++) {
		for (long j = 0; j < pages; j++)
			p[j * psz] = 1;
		if (madvise(p, pages * psz, MADV_DONTNEED)) {
			perror("madvise");
			return 1;
		}
	}
	return 0;
}
