#!/usr/bin/env python3
"""Run the test binaries `cargo test --no-run --message-format=json` built, in two lanes.

Usage: test_lanes.py CARGO_MESSAGES_JSON [TEST_ARGS...]

`cargo test` runs its test binaries one after another. Most of the suite's wall goes to a few
binaries that boot QEMU guests under TCG (one vCPU each, `thread=single`): while the rest of the
suite runs, about one of the machine's two cores is idle, and those binaries fill it. So the
binaries named in SIDE run one after another in a lane of their own, beside every other binary,
which run one after another in the main lane exactly as `cargo test` would run them. A binary
goes to SIDE only if it changes no setting of this machine (THP, perf_event_paranoid, the TLB
flush ceiling, knobs under /proc/sys: the tests that change those stay in the main lane, one
binary at a time, as before) and takes no lock another binary takes. The binaries in ALONE assert
on this machine's timing (a core probe's adds per cycle, a signal answered at once, a small
effect found): they run last, after the side lane has ended, with no guest beside them.

Each binary runs as cargo runs it: in its package's directory, with CARGO_MANIFEST_DIR and CARGO
set, and TEST_ARGS after it. Its output is printed in one block when it ends, under cargo's
"Running" line, with the seconds it took. Every binary runs (no fail-fast); the exit status is 0
only if every binary passed, and the failed ones are named at the end. ABPERF_TEST_ONE_LANE=1 runs
every binary in the main lane (one after another, as `cargo test` does).
"""

import json
import os
import subprocess
import sys
import threading
import time

# The side lane, in this order: (package, target name). Each boots QEMU under TCG, whose guest
# keeps one core busy (vm.rs boots one guest at a time; the boot-loop tests two at once).
SIDE = [
    ("abperf", "vm"),
    ("abperf", "boot_loop_reboot"),
    ("abperf", "boot_loop"),
]

# Run alone, after both lanes: (package, target name). Beside a guest's busy core, micro.rs's
# core probe once saw a preempted round (0.61 adds per cycle, 2026-11-27).
ALONE = [
    ("abperf", "micro"),
    ("abperf", "micro_compare"),
    ("abperf", "exit_paths"),
    ("abperf", "bisect"),
    ("abperf", "kernel_bisect"),
    ("abperf", "profile"),
]


def binaries(messages_path):
    """The test executables in the order cargo built them: (key, name shown, exe, package
    directory), key being (package, target) for an integration test and None for the others."""
    found = []
    seen = set()
    with open(messages_path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("{"):
                continue
            m = json.loads(line)
            if m.get("reason") != "compiler-artifact" or not m.get("executable"):
                continue
            target = m["target"]
            # A plain binary built for the integration tests is not a test; everything else
            # with an executable (unit tests of libs and bins, tests, benches and examples in
            # test mode) is, as `cargo test --all-targets` runs it.
            if target["kind"] == ["bin"] and not m["profile"]["test"]:
                continue
            exe = m["executable"]
            if exe in seen:
                continue
            seen.add(exe)
            manifest = m.get("manifest_path") or ""
            name = package_name(m)
            key = (name, target["name"]) if target["kind"] == ["test"] else None
            cwd = os.path.dirname(manifest)
            src = os.path.relpath(target["src_path"], cwd)
            shown = src if name == "abperf" else f"{name} {src}"
            found.append((key, shown, exe, cwd))
    return found


def package_name(message):
    """The package's name from its id (`path+file:///dir#name@0.1.0` or `name 0.1.0 (...)`)."""
    pid = message["package_id"]
    if "#" in pid:
        tail = pid.rsplit("#", 1)[1]
        return tail.split("@", 1)[0] if "@" in tail else os.path.basename(pid.split("#")[0])
    return pid.split(" ", 1)[0]


class Lanes:
    def __init__(self, test_args):
        self.test_args = test_args
        self.print_lock = threading.Lock()
        self.failed = []
        self.took = []

    def run(self, item, lane):
        _, shown, exe, cwd = item
        env = dict(os.environ)
        env["CARGO_MANIFEST_DIR"] = cwd
        env.setdefault("CARGO", "cargo")
        with self.print_lock:
            print(f"test_lanes: {shown} started ({lane} lane)", flush=True)
        start = time.monotonic()
        try:
            p = subprocess.run(
                [exe, *self.test_args],
                cwd=cwd or None,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            code, out = p.returncode, p.stdout.decode("utf-8", "replace")
        except OSError as e:
            code, out = 127, f"test_lanes: cannot run {exe}: {e}\n"
        took = time.monotonic() - start
        with self.print_lock:
            self.took.append((took, shown))
            print(f"     Running {shown} ({os.path.relpath(exe)})")
            sys.stdout.write(out)
            print(f"test_lanes: {shown} took {took:.1f} s, exit {code}")
            sys.stdout.flush()
            if code != 0:
                self.failed.append(f"{shown} ({os.path.relpath(exe)}): exit {code}")

    def lane(self, items, name):
        for item in items:
            self.run(item, name)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test_lanes.py CARGO_MESSAGES_JSON [TEST_ARGS...]")
    items = binaries(sys.argv[1])
    # ABPERF_TEST_ONE_LANE=1: every binary in the main lane, one after another, as `cargo test`.
    one_lane = os.environ.get("ABPERF_TEST_ONE_LANE", "") not in ("", "0")
    side = [] if one_lane else [i for i in items if i[0] in SIDE]
    side.sort(key=lambda i: SIDE.index(i[0]))
    alone = [i for i in items if i[0] in ALONE]
    main_lane = [i for i in items if i not in side and i not in alone]
    lanes = Lanes(sys.argv[2:])
    start = time.monotonic()
    beside = threading.Thread(target=lanes.lane, args=(side, "side"))
    beside.start()
    lanes.lane(main_lane, "main")
    beside.join()
    lanes.lane(alone, "alone")
    print(
        f"\ntest_lanes: {len(items)} test binaries in {time.monotonic() - start:.0f} s "
        f"({len(side)} beside the others, {len(alone)} alone at the end); the slowest:"
    )
    for took, src in sorted(lanes.took, reverse=True)[:12]:
        print(f"  {took:7.1f} s  {src}")
    if lanes.failed:
        print("test_lanes: failed:")
        for f in lanes.failed:
            print(f"  {f}")
        sys.exit(101)


if __name__ == "__main__":
    main()
