#!/usr/bin/python3
"""Holds src/ to its rooms: every `#include "ROOM/..."` must be allowed by the room table.

    check_includes.py [REPO]

The table is written once, in REPO/docs/ARCHITECTURE.md between the markers
`<!-- rooms:begin -->` and `<!-- rooms:end -->`: one row per room, its name in the first
cell and the rooms it may include in the last (`—` for none). A file of src/ROOM/ may
include its own room and the rooms its row names; includes without a folder (generated
headers such as tqlab_version.h) are not checked. Also refused: a folder of src/ the table
does not name, a row naming a room that does not exist, and a table with a cycle.

Prints one line per problem and exits 1 when there is any, 0 otherwise.
"""

import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"', flags=re.M)
SOURCE_SUFFIXES = {".h", ".cpp", ".inc"}


def read_table(architecture):
    """{room: set of rooms it may include} from the marked table of docs/ARCHITECTURE.md."""
    text = architecture.read_text(encoding="utf-8")
    match = re.search(r"<!-- rooms:begin -->(.*?)<!-- rooms:end -->", text, flags=re.S)
    if not match:
        raise SystemExit(f"FAIL: {architecture} has no table between <!-- rooms:begin --> and <!-- rooms:end -->")
    table = {}
    for line in match.group(1).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue  # the header row and its rule
        room = cells[0].strip("`").rstrip("/")
        allowed = set(re.findall(r"`([a-z_]+)/?`", cells[-1]))
        table[room] = allowed
    return table


def cycle_in(table):
    """A list of rooms forming a cycle of the table, or None."""
    state = {}

    def visit(room, path):
        state[room] = "open"
        for below in sorted(table.get(room, ())):
            if state.get(below) == "open":
                return path + [room, below]
            if below not in state:
                found = visit(below, path + [room])
                if found:
                    return found
        state[room] = "done"
        return None

    for room in sorted(table):
        if room not in state:
            found = visit(room, [])
            if found:
                return found
    return None


def check(repo):
    repo = Path(repo)
    table = read_table(repo / "docs" / "ARCHITECTURE.md")
    src = repo / "src"
    problems = []
    rooms = sorted(path.name for path in src.iterdir() if path.is_dir())
    for room in rooms:
        if room not in table:
            problems.append(f"src/{room}/ is not a room of docs/ARCHITECTURE.md's table: add its row")
    for room, allowed in sorted(table.items()):
        for name in sorted(allowed | {room}):
            if name not in rooms:
                problems.append(f"docs/ARCHITECTURE.md's table names a room src/{name}/ that does not exist")
    cycle = cycle_in(table)
    if cycle:
        problems.append("docs/ARCHITECTURE.md's table has a cycle: " + " -> ".join(cycle))
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        room = path.relative_to(src).parts[0]
        allowed = table.get(room, set())
        text = path.read_text(encoding="utf-8")
        for match in INCLUDE.finditer(text):
            target = match.group(1)
            if target == room or target in allowed:
                continue
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"{path.relative_to(repo).as_posix()}:{line}: includes {target}/, which the room "
                            f"{room}/ may not include (allowed: {', '.join(sorted(allowed)) or 'none'})")
    return problems


def main(argv):
    if len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    repo = argv[1] if len(argv) == 2 else Path(__file__).resolve().parent.parent
    problems = check(repo)
    for problem in problems:
        print(f"FAIL: {problem}")
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
