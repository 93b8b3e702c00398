/* The floor of a harness's per-run cost: posix_spawn + wait4 of a program, N times, with nothing
 * measured or stored. benches/runner_overhead.sh runs it beside abperf and hyperfine and reports
 * their per-run costs as multiples of this one.
 * With --fork, each run is fork + execvp + wait4 instead: the floor of a harness that keeps the
 * workload's max RSS its own. posix_spawn shares the spawner's memory until exec (CLONE_VM), and
 * at exec Linux folds the resident set of that memory into the child's ru_maxrss, so the child
 * reports at least its spawner's resident set; a fork copies only the private pages.
 * Build: cc -O2 -o spawn_floor benches/spawn_floor.c
 * Usage: spawn_floor [--fork] N PROGRAM [ARGS...]   (PROGRAM is looked up on $PATH, as
 *        hyperfine -N does) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
    int fork_mode = argc > 1 && strcmp(argv[1], "--fork") == 0;
    argv += fork_mode;
    argc -= fork_mode;
    if (argc < 3) {
        fprintf(stderr, "usage: spawn_floor [--fork] N PROGRAM [ARGS...]\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10);
    struct rusage ru = {0};
    for (long i = 0; i < n; i++) {
        pid_t pid;
        int status;
        if (fork_mode) {
            pid = fork();
            if (pid == 0) {
                execvp(argv[2], argv + 2);
                _exit(127);
            }
            if (pid < 0) {
                perror("fork");
                return 1;
            }
        } else {
            int e = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
            if (e != 0) {
                fprintf(stderr, "posix_spawnp %s: error %d\n", argv[2], e);
                return 1;
            }
        }
        if (wait4(pid, &status, 0, &ru) < 0) {
            perror("wait4");
            return 1;
        }
    }
    /* What Linux reported as the last run's max RSS: with posix_spawn at least this loop's own
     * resident set (shared until exec), with --fork only the private pages the fork copied. */
    fprintf(stderr, "spawn_floor: last run's max RSS %ld KiB\n", ru.ru_maxrss);
    return 0;
}
