#!/bin/sh
# Make the git repository that tests/bisect.rs and benches/bisect_e2e.sh bisect: COMMITS commits
# (after an initial one) of a small C program that spins ~25 ms of CPU; commit CULPRIT makes it
# do PERCENT% more work (0: no change anywhere); commit BROKEN (0: none) does not compile and
# the next one repairs it. Revision i of the bisection is the i-th commit after the initial one.
# Usage: bisect_repo.sh DIR COMMITS CULPRIT BROKEN [PERCENT]
set -eu
dir=$1 commits=$2 culprit=$3 broken=$4 percent=${5:-5}
mkdir -p "$dir"
cd "$dir"
git init -q .
git config user.email bisect@example.invalid
git config user.name "abperf bisect test"
write() { # $1: extra work (per mille), $2: "broken" or not
    {
        echo '#include <stdio.h>'
        echo "#define WORK 1000"
        echo "#define EXTRA $1"
        echo 'int main(void) {'
        echo '    volatile unsigned long x = 0;'
        echo '    for (unsigned long i = 0; i < (WORK + EXTRA) * 20000UL; i++) x += i ^ (x >> 3);'
        if [ "$2" = broken ]; then echo '    this does not compile;'; fi
        echo '    return (int)(x & 0);'
        echo '}'
    } > prog.c
}
write 0 ok
echo 0 > notes
git add prog.c notes
git commit -q -m "initial: the program"
extra=0
i=1
while [ "$i" -le "$commits" ]; do
    if [ "$i" -eq "$culprit" ]; then
        extra=$((percent * 10))
        write "$extra" ok
        msg="loop: $percent% more work per call"
    elif [ "$i" -eq "$broken" ]; then
        write "$extra" broken
        msg="wip: does not compile"
    else
        write "$extra" ok
        echo "$i" > notes
        msg="notes: step $i"
    fi
    git add prog.c notes
    git commit -q --allow-empty -m "$msg"
    i=$((i + 1))
done
