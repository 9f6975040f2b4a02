#!/usr/bin/env python3
"""A/B wall and CPU time of several mcp-trace binaries on one capture, alternating runs.

    bench/ab.py ROUNDS CAPTURE BINARY...     (EXTRA="--threads 1" adds arguments)

Each round runs every binary once, in turn, writing Parquet to a temporary file; a run that
exits non-zero or writes to stderr stops the comparison. Prints best, median and mean wall
time (time.perf_counter, finer than /usr/bin/time's 10 ms), median CPU time (user + system)
and the cores kept busy on average (CPU / wall).
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rounds, capture, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    extra = os.environ.get("EXTRA", "").split()
    runs = {b: [] for b in binaries}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.parquet")
        for _ in range(rounds):
            for b in binaries:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                p = subprocess.run([b, "analyze", *extra, capture, "-o", out],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if p.returncode != 0 or p.stderr:
                    print(f"{b}: exit {p.returncode}: {p.stderr[:500]!r}", file=sys.stderr)
                    return 1
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                runs[b].append((wall, cpu))
    for b in binaries:
        wall = [w for w, _ in runs[b]]
        cpu = statistics.median(c for _, c in runs[b])
        med = statistics.median(wall)
        print(f"{b}: wall best {min(wall):.4f} s, median {med:.4f} s, mean "
              f"{statistics.mean(wall):.4f} s; CPU median {cpu:.3f} s; cores busy {cpu / med:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
