#!/usr/bin/env python3
"""Lists the C++ function bodies longer than a limit (default 80 lines), as FILE:LINE: N lines NAME.

A function is counted from the first line of its signature to its closing brace. The reading is
lexical, not a parse: comments, string and character literals are blanked first; a brace opens a
function body when every brace around it belongs to a namespace, class, struct, union or enum
and the text before it closes a parameter list (")", then qualifiers such as const, noexcept,
override or a trailing return type). Lambdas and nested blocks count toward the function that
holds them. Exit status 1 when a function is over the limit, 0 otherwise.

Usage: check_function_lines.py [--limit N] PATH...   (folders are searched for *.cpp, *.h, *.inc)
"""
import argparse
import pathlib
import re
import sys

SCOPE_WORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b")
QUALIFIERS = re.compile(
    r"\)\s*(?:const|noexcept(?:\s*\([^)]*\))?|override|final|mutable|&&?|->\s*[\w:<>,\s*&]+|\s)*$")


def blank_comments_and_literals(text: str) -> str:
    """The text with comments and literals replaced by spaces, newlines kept (lines stay put)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(path: pathlib.Path, limit: int):
    text = blank_comments_and_literals(path.read_text(encoding="utf-8", errors="replace"))
    text = re.sub(r"^[ \t]*#.*$", lambda m: " " * len(m.group(0)), text, flags=re.M)  # preprocessor
    stack = []  # per open brace: (kind, start offset of its function or None)
    statement_start = 0
    for i, c in enumerate(text):
        if c == "{":
            head = text[statement_start:i]
            enclosing_scopes_only = all(kind == "scope" for kind, _ in stack)
            if SCOPE_WORDS.search(head) and "(" not in head.split("{")[0].replace("enum class", ""):
                stack.append(("scope", None))
            elif enclosing_scopes_only and QUALIFIERS.search(head.rstrip()) and "=" not in head.split("(")[0]:
                start = statement_start + (len(head) - len(head.lstrip()))
                stack.append(("function", start))
            else:
                stack.append(("block", None))
            statement_start = i + 1
        elif c == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "function":
                    first = text.count("\n", 0, start) + 1
                    last = text.count("\n", 0, i) + 1
                    if last - first + 1 > limit:
                        name = re.search(r"([\w:~]+)\s*\(", text[start:]).group(1)
                        yield first, last - first + 1, name
            statement_start = i + 1
        elif c == ";":
            statement_start = i + 1
        elif c == ":" and stack and stack[-1][0] == "scope" and re.search(
                r"\b(public|private|protected)\s*$", text[statement_start:i]):
            statement_start = i + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    files = []
    for p in map(pathlib.Path, args.paths):
        files += sorted(f for f in p.rglob("*") if f.suffix in (".cpp", ".h", ".inc")) if p.is_dir() else [p]
    found = 0
    for f in files:
        for line, count, name in long_functions(f, args.limit):
            print(f"{f}:{line}: {count} lines {name}")
            found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
