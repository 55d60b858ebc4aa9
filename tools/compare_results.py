#!/usr/bin/python3
"""Compare two tqlab result documents (JSON) number by number.

usage: compare_results.py A.json B.json [--rtol R] [--ignore KEY]...

Keys named by --ignore (at any depth) and every "timing" section are skipped;
numbers must agree within R relative (default 1e-9) or 1e-12 absolute; every other
value must be equal. Prints each difference with its key path; exit 0 when none, 1 otherwise.
Standard library only, so it runs with Debian's python3 as it comes.
"""
import argparse
import json
import sys


def compare(a, b, path, rtol, ignore, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key in ignore or key == "timing":
                continue
            where = f"{path}.{key}" if path else key
            if key not in a or key not in b:
                out.append(f"{where}: only in {'B' if key not in a else 'A'}")
                continue
            compare(a[key], b[key], where, rtol, ignore, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries vs {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}[{i}]", rtol, ignore, out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        if abs(a - b) > max(rtol * max(abs(a), abs(b)), 1e-12):
            out.append(f"{path}: {a!r} vs {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} vs {b!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("--ignore", action="append", default=[])
    args = parser.parse_args()
    with open(args.a) as fa, open(args.b) as fb:
        a, b = json.load(fa), json.load(fb)
    differences = []
    compare(a, b, "", args.rtol, set(args.ignore), differences)
    for line in differences[:50]:
        print(line)
    if len(differences) > 50:
        print(f"... and {len(differences) - 50} more")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
