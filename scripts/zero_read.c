/* The demo's workload: read one byte from every 4 KiB page of MIB mebibytes of fresh anonymous
 * memory (default 1024). Nothing is written, so every read fault maps a zero page: with THP
 * `never` one 4 KiB zero page per fault (262,144 faults for 1 GiB), with THP `always` the huge
 * zero page, 2 MiB per fault (512 faults). No memory is allocated either way, so the difference
 * is the fault path alone and does not depend on how much free memory the machine has.
 * Usage: zero_read [MIB] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	size_t len = mib << 20;
	volatile unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long sum = 0;

	if (mib == 0 || p == MAP_FAILED) {
		fprintf(stderr, "zero_read: cannot map %zu MiB\n", mib);
		return 1;
	}
	for (size_t i = 0; i < len; i += 4096)
		sum += p[i];
	return sum != 0; /* zero pages read as zero */
}
