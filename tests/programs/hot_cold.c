/* Test workload for profiles: ROUNDS rounds of hot(HOT) and cold(COLD) loops.
 * A variant that asks for more hot iterations spends a larger share of its samples in hot().
 * Usage: hot_cold ROUNDS HOT COLD */
#include <stdlib.h>

__attribute__((noipa)) double hot(long n)
{
	double s = 0;
	for (long i = 0; i < n; i++)
		s += i * 0.5;
	return s;
}

__attribute__((noipa)) double cold(long n)
{
	double s = 0;
	for (long i = 0; i < n; i++)
		s += i * 0.25;
	return s;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	long h = argc > 2 ? atol(argv[2]) : 100000;
	long c = argc > 3 ? atol(argv[3]) : 100000;
	double s = 0;
	for (long j = 0; j < rounds; j++) {
		s += hot(h);
		s += cold(c);
	}
	return s < 0;
}
