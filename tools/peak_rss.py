#!/usr/bin/python3
"""Run a command and print its wall time and peak resident memory (its own and its children's).

usage: peak_rss.py COMMAND [ARGS...]
Prints one line to stderr: "wall_seconds=W peak_rss_mib=M exit=E". Standard library only.
"""
import resource
import subprocess
import sys
import time

start = time.monotonic()
code = subprocess.call(sys.argv[1:])
wall = time.monotonic() - start
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"wall_seconds={wall:.2f} peak_rss_mib={peak_kib / 1024:.1f} exit={code}", file=sys.stderr)
sys.exit(code)
