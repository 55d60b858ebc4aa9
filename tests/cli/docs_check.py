#!/usr/bin/python3
"""Checks that the user documentation stands alone and matches the binary.

    docs_check.py reference TQLAB REPO   every subcommand and flag of `TQLAB --help` and each
                                         subcommand's --help, every schema a help text names, every
                                         method and option of `TQLAB list --json`, and every metric
                                         of results/quickstart.json appear in REPO/docs/REFERENCE.md
                                         where they belong (metrics defined in docs/SWEEP.md too);
                                         and every --help fits a terminal: at most HELP_WIDTH columns
                                         and HELP_LINES lines, a subcommand's description at most two
                                         lines and a "See docs/REFERENCE.md#ANCHOR." whose anchor exists
    docs_check.py links REPO             README.md and docs/*.md name nothing outside the
                                         repository (the team's shared folder, its design
                                         notes and source documents), and every relative link in
                                         them points to an existing file (and heading, for #anchors)
    docs_check.py comments REPO          the comments of src/, tests/, tools/ and bench/ are held
                                         to the same rule: they cite the paper, docs/SOURCES.md or
                                         a docs/ page, not what only the team's folder holds

Prints one line per problem and exits 1 when there is any, 0 otherwise.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

# ---------------------------------------------------------------------------------------- markdown


def strip_code(text):
    """The text without fenced code blocks and inline code spans (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    seen = {}
    result = set()
    for match in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M),
                             flags=re.M):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def sections(text):
    """{heading text: body} for every heading, the body running to the next heading of the same
    or a higher level. Lines in fenced code blocks are not headings."""
    masked = re.sub(r"^```.*?^```", lambda block: re.sub(r"[^\n]", " ", block.group(0)), text, flags=re.S | re.M)
    matches = list(re.finditer(r"^(#{1,6})\s+(.*?)\s*$", masked, flags=re.M))
    result = {}
    for i, match in enumerate(matches):
        level = len(match.group(1))
        end = len(text)
        for later in matches[i + 1:]:
            if len(later.group(1)) <= level:
                end = later.start()
                break
        result[match.group(2)] = text[match.end():end]
    return result


def unescape_tables(text):
    return text.replace("\\|", "|")


# --------------------------------------------------------------------------------------- reference


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(command)} exited {result.returncode}: {result.stderr.strip()[:300]}")
    return result.stdout


def help_section(help_text, title):
    """The lines of one 'Title:' block of a CLI11 help text."""
    match = re.search(rf"^{title}:\n(.*?)(?:\n\n|\Z)", help_text, flags=re.S | re.M)
    return match.group(1).splitlines() if match else []


def subcommands(help_text):
    names = []
    for line in help_section(help_text, "Subcommands"):
        match = re.match(r"^  ([a-z][\w-]*)(\s{2,}|$)", line)
        if match:
            names.append(match.group(1))
    return names


def flags(help_text):
    """[(flag, choices)] for every option line: '-o', '--output', ...; choices from ':{a,b}'."""
    found = []
    for line in help_section(help_text, "Options"):
        match = re.match(r"^  (-\S+)(.*)$", line)
        if not match:
            continue
        choices = re.search(r":\{([^}]*)\}", match.group(2))
        for name in match.group(1).split(","):
            if name.startswith("-"):
                found.append((name, choices.group(1).split(",") if choices else []))
    return found


def first_cells(text):
    """The first cells of a section's table rows, where a flag's row names it."""
    return "\n".join(line.split("|")[1] for line in text.splitlines() if line.startswith("|") and line.count("|") > 2)


def has_token(text, token):
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


# A --help fits a terminal (src/cli/commands.h's kHelpWidth).
HELP_WIDTH = 100
HELP_LINES = 50


def check_help_shape(path, text, reference_anchors):
    """Problems of one --help text: width, height, and for a subcommand its description."""
    name = " ".join(("tqlab",) + path)
    problems = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if len(line) > HELP_WIDTH:
            problems.append(f"`{name} --help` line {number} is {len(line)} columns wide (at most {HELP_WIDTH})")
    if len(lines) > HELP_LINES:
        problems.append(f"`{name} --help` is {len(lines)} lines long (at most {HELP_LINES})")
    if not path:
        return problems
    description = lines[:next((i for i, line in enumerate(lines) if line.startswith("Usage:")), len(lines))]
    see = re.fullmatch(r"See docs/REFERENCE\.md#([\w-]+)\.", description[-1]) if description else None
    if not see:
        problems.append(f"`{name} --help` does not end its description with 'See docs/REFERENCE.md#ANCHOR.'")
    elif see.group(1) not in reference_anchors:
        problems.append(f"`{name} --help` points to docs/REFERENCE.md#{see.group(1)}, which no heading has")
    if len(description) - 1 > 2:
        problems.append(f"`{name} --help` has a description of {len(description) - 1} lines (at most 2 before 'See')")
    return problems


def check_reference(tqlab, repo):
    reference_path = Path(repo) / "docs" / "REFERENCE.md"
    reference = unescape_tables(reference_path.read_text(encoding="utf-8"))
    parts = sections(reference)
    problems = []

    def section(title):
        if title not in parts:
            problems.append(f"docs/REFERENCE.md has no heading '{title}'")
            return None
        return parts[title]

    top = run([tqlab, "--help"])
    helps = {(): top}
    pending = [(name,) for name in subcommands(top)]
    if not pending:
        problems.append("`tqlab --help` lists no subcommands: the parser no longer reads it")
    commands = []
    reference_anchors = anchors(reference_path.read_text(encoding="utf-8"))
    problems.extend(check_help_shape((), top, reference_anchors))
    while pending:
        path = pending.pop(0)
        text = run([tqlab, *path, "--help"])
        helps[path] = text
        problems.extend(check_help_shape(path, text, reference_anchors))
        children = subcommands(text)
        if children:
            pending.extend(path + (child,) for child in children)
        else:
            commands.append(path)

    running = section("Running tqlab")
    if running is not None:
        for flag, _ in flags(top):
            if not has_token(first_cells(running), flag):
                problems.append(f"'Running tqlab' has no table row for the global option {flag}")

    for path in commands:
        title = "### `tqlab " + " ".join(path) + "`"
        body = section(title[4:])
        if body is None:
            continue
        for flag, choices in flags(helps[path]):
            if flag in ("-h", "--help"):
                continue
            if not has_token(first_cells(body), flag):
                problems.append(f"section {title} has no table row for the flag {flag}")
            for choice in choices:
                if not has_token(body, choice):
                    problems.append(f"section {title} lacks {flag}'s choice {choice}")

    documents = section("JSON documents")
    if documents is not None:
        for schema in sorted({s for text in helps.values() for s in re.findall(r"tqlab\.[a-z]+/\d+", text)}):
            if f"`{schema}`" not in documents:
                problems.append(f"'JSON documents' lacks the schema {schema} that a --help text names")

    # Metric names from a committed results file; the margin of a needle metric is written @M.
    metrics_body = section("Sweep metrics")
    sweep_doc = sections(unescape_tables((Path(repo) / "docs" / "SWEEP.md").read_text(encoding="utf-8")))
    definitions = sweep_doc.get("Metrics", "")
    results = json.loads((Path(repo) / "results" / "quickstart.json").read_text(encoding="utf-8"))
    names = set()
    for result_run in results["runs"]:
        names.update(result_run["bits"])
        names.update(re.sub(r"@[0-9.]+$", "@M", name) for name in result_run["metrics"])
    for name in sorted(names):
        if metrics_body is not None and f"`{name}`" not in metrics_body:
            problems.append(f"'Sweep metrics' lacks the metric {name} of results/quickstart.json")
        if f"`{name}`" not in definitions:
            problems.append(f"docs/SWEEP.md's 'Metrics' section does not define {name}")

    listing = json.loads(run([tqlab, "list", "--json"]))
    specs = section("Quantizer specs")
    if not listing.get("methods"):
        problems.append("`tqlab list --json` has no methods: the parser no longer reads it")
    for method in listing.get("methods", []):
        name = method["name"]
        if specs is not None and not re.search(rf"^\| `{re.escape(name)}` \|", specs, flags=re.M):
            problems.append(f"'Quantizer specs' has no table row for method {name}")
        if not method["options"]:
            continue
        options_body = section(f"`{name}` options")
        if options_body is None:
            continue
        for option in method["options"]:
            values = "flag" if option["flag"] else f"`{option['values']}`"
            row = f"| `{option['name']}` | {values} |"
            if row not in options_body:
                problems.append(f"section '`{name}` options' lacks the row starting {row}")
    return problems


# ------------------------------------------------------------------------------------------- links

# What a user's clone does not have: the team's shared folder and what lives only there.
FORBIDDEN = [
    (r"\.\./shared|/work/shared", "a path into the team's shared folder"),
    (r"\bDESIGN\.md\b|\bSTYLE\.md\b", "the team's design notes, which users do not have"),
    (r"\bseeds?\s+0\d\d\b", "a numbered source document of the team's shared folder"),
    (r"\bpeers/", "the team's shared peers folder"),
    (r"\bissues? \d+\b", "a number of the team's issue tracker, which users do not have"),
]

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", flags=re.M)


def check_links(repo):
    root = Path(repo).resolve()
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    problems = []
    for path in files:
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            for pattern, what in FORBIDDEN:
                match = re.search(pattern, line, flags=re.I)
                if not match:
                    continue
                problems.append(f"{relative}:{number}: '{match.group(0)}' is {what}")
        prose = strip_code(text)
        targets = [m.group(1) for m in LINK.finditer(prose)] + REFERENCE_LINK.findall(prose)
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # https:, mailto:
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                problems.append(f"{relative}: link '{target}' points to a missing file")
                continue
            if root not in linked.parents and linked != root:
                problems.append(f"{relative}: link '{target}' leaves the repository")
                continue
            if anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
                problems.append(f"{relative}: link '{target}': no heading with anchor #{anchor} in "
                                f"{linked.relative_to(root).as_posix()}")
    return problems


# Files whose comments are checked, and how a comment starts in each.
COMMENTED = {".h": "//", ".cpp": "//", ".inc": "//", ".sh": "#", ".py": "#", ".cmake": "#", ".txt": "#"}
# This checker names the patterns it looks for, and its test plants them.
NOT_CHECKED = {"tests/cli/docs_check.py", "tests/cli/docs_links.sh"}


def comment_of(line, marker):
    """The comment part of a source line ('' when there is none). A marker inside a string
    literal may be taken for a comment: the rule errs towards checking more."""
    stripped = line.strip()
    if marker == "//" and (stripped.startswith("*") or stripped.startswith("/*")):
        return stripped
    at = line.find(marker)
    return line[at:] if at >= 0 else ""


def check_comments(repo):
    root = Path(repo).resolve()
    problems = []
    for folder in ("src", "tests", "tools", "bench"):
        for path in sorted((root / folder).rglob("*")):
            relative = path.relative_to(root).as_posix()
            marker = COMMENTED.get(path.suffix)
            if not path.is_file() or marker is None or relative in NOT_CHECKED or "/data/" in relative:
                continue
            if path.suffix == ".txt" and path.name != "CMakeLists.txt":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                comment = comment_of(line, marker)
                for pattern, what in FORBIDDEN:
                    match = re.search(pattern, comment, flags=re.I)
                    if match:
                        problems.append(f"{relative}:{number}: a comment names '{match.group(0)}', {what}")
    return problems


def main(argv):
    if len(argv) == 4 and argv[1] == "reference":
        problems = check_reference(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "links":
        problems = check_links(argv[2])
    elif len(argv) == 3 and argv[1] == "comments":
        problems = check_comments(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for problem in problems:
        print(f"FAIL: {problem}")
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
