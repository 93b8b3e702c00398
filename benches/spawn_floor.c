/* The floor of a harness's per-run cost: posix_spawn + wait4 of a program, N times, with nothing
 * measured or stored. benches/runner_overhead.sh runs it beside abperf and hyperfine and reports
 * their per-run costs as multiples of this one.
 * Build: cc -O2 -o spawn_floor benches/spawn_floor.c
 * Usage: spawn_floor N PROGRAM [ARGS...]   (PROGRAM is looked up on $PATH, as hyperfine -N does) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s N PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    long n = strtol(argv[1], NULL, 10);
    for (long i = 0; i < n; i++) {
        pid_t pid;
        int status;
        struct rusage ru;
        int e = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
        if (e != 0) {
            fprintf(stderr, "posix_spawnp %s: error %d\n", argv[2], e);
            return 1;
        }
        if (wait4(pid, &status, 0, &ru) < 0) {
            perror("wait4");
            return 1;
        }
    }
    return 0;
}
