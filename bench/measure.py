#!/usr/bin/env python3
"""Runs one command and prints its wall time and peak resident memory, for bench/run.sh.

    bench/measure.py [--stdin FILE] [--out FILE] [--err FILE] -- COMMAND...

Prints `WALL_SECONDS PEAK_RSS_KB`. The wall time runs from just before the command starts to
its exit, measured with `time.perf_counter`: /usr/bin/time's own wall clock has 10 ms steps,
6% of a 100 MB run, and timing from the shell adds the cost of starting `date`. The peak RSS
is still /usr/bin/time's (`%M`): a child forked from Python would count Python's own memory,
since the high-water mark survives `exec`. With `--stdin FILE` the command reads FILE through
`cat` (a pipe, as `cat FILE | COMMAND`); the memory is the command's alone. Exits with the
command's status.
"""
import os
import subprocess
import sys
import tempfile
import time


def main() -> int:
    args = sys.argv[1:]
    opts = {"--stdin": None, "--out": os.devnull, "--err": os.devnull}
    while args and args[0] in opts:
        if len(args) < 2:
            break
        opts[args[0]] = args[1]
        args = args[2:]
    if not args or args[0] != "--" or len(args) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rss_file = tempfile.NamedTemporaryFile(prefix="mcp-measure-", delete=False)
    rss_file.close()
    command = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name] + args[1:]
    with open(opts["--out"], "wb") as out, open(opts["--err"], "wb") as err:
        start = time.perf_counter()
        cat = None
        stdin = subprocess.DEVNULL
        if opts["--stdin"] is not None:
            cat = subprocess.Popen(["cat", opts["--stdin"]], stdout=subprocess.PIPE)
            stdin = cat.stdout
        child = subprocess.Popen(command, stdin=stdin, stdout=out, stderr=err)
        if cat is not None and cat.stdout is not None:
            cat.stdout.close()
        code = child.wait()
        wall = time.perf_counter() - start
        if cat is not None:
            cat.wait()
    with open(rss_file.name) as f:
        lines = f.read().split()
    os.unlink(rss_file.name)
    # On failure /usr/bin/time writes a "Command exited with non-zero status" line first.
    rss = lines[-1] if lines else "0"
    print(f"{wall:.4f} {rss}")
    return code


if __name__ == "__main__":
    sys.exit(main())
