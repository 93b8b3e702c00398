#!/usr/bin/env python3
"""Run the test binaries `cargo test --no-run --message-format=json` built, in two lanes.

Usage: test_lanes.py CARGO_MESSAGES_JSON [TEST_ARGS...]

`cargo test` runs its test binaries one after another. Most of the suite's wall goes to a few
binaries that boot QEMU guests under TCG (one vCPU each, `thread=single`): while the rest of the
suite runs, about one of the machine's two cores is idle, and those binaries fill it. So the
binaries named in SIDE run one after another in a lane of their own, beside every other binary,
which run one after another in the main lane exactly as `cargo test` would run them. A binary
goes to SIDE only if it changes no setting of this machine (THP, perf_event_paranoid, the TLB
flush ceiling, knobs under /proc/sys: the tests that change those, and the tests that measure
this machine's costs, stay in the main lane, one binary at a time, as before) and takes no lock
another binary takes.

Each binary runs as cargo runs it: in its package's directory, with CARGO_MANIFEST_DIR and CARGO
set, and TEST_ARGS after it. Its output is printed in one block when it ends, under cargo's
"Running" line, with the seconds it took. Every binary runs (no fail-fast); the exit status is 0
only if every binary passed, and the failed ones are named at the end.
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


def binaries(messages_path):
    """The test executables in the order cargo built them: (key, source, exe, package directory),
    key being (package, target) for an integration test and None for the others."""
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
            found.append((key, target["src_path"], exe, os.path.dirname(manifest)))
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

    def run(self, item):
        _, src, exe, cwd = item
        env = dict(os.environ)
        env["CARGO_MANIFEST_DIR"] = cwd
        env.setdefault("CARGO", "cargo")
        start = time.monotonic()
        p = subprocess.run(
            [exe, *self.test_args],
            cwd=cwd or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        took = time.monotonic() - start
        src_shown = os.path.relpath(src, cwd) if cwd else src
        with self.print_lock:
            print(f"     Running {src_shown} ({os.path.relpath(exe)})")
            sys.stdout.write(p.stdout.decode("utf-8", "replace"))
            print(f"test_lanes: {src_shown} took {took:.1f} s, exit {p.returncode}")
            sys.stdout.flush()
            if p.returncode != 0:
                self.failed.append(f"{src_shown} ({os.path.relpath(exe)}): exit {p.returncode}")

    def lane(self, items):
        for item in items:
            self.run(item)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test_lanes.py CARGO_MESSAGES_JSON [TEST_ARGS...]")
    items = binaries(sys.argv[1])
    side = sorted((i for i in items if i[0] in SIDE), key=lambda i: SIDE.index(i[0]))
    main_lane = [i for i in items if i not in side]
    lanes = Lanes(sys.argv[2:])
    start = time.monotonic()
    beside = threading.Thread(target=lanes.lane, args=(side,))
    beside.start()
    lanes.lane(main_lane)
    beside.join()
    print(
        f"\ntest_lanes: {len(items)} test binaries in {time.monotonic() - start:.0f} s "
        f"({len(side)} beside the others)"
    )
    if lanes.failed:
        print("test_lanes: failed:")
        for f in lanes.failed:
            print(f"  {f}")
        sys.exit(101)


if __name__ == "__main__":
    main()
