#!/usr/bin/python3
"""Writes the mixed text tools/bench_tokenize.sh times tokenizers on, from files every Debian has.

    make_tokenize_bench_text.py OUT [MEGABYTES]

English and code-like prose: every UTF-8 file of /usr/share/common-licenses, then the copyright
files and (gunzipped) changelogs of /usr/share/doc in sorted order, until about 85% of the size;
then lines of Chinese, Japanese, Korean, Russian, Arabic, Hindi and emoji (with ZWJ sequences),
drawn with a fixed seed, for the rest. The same machine gives the same bytes; prints the size.
"""

import gzip
import random
import sys
from pathlib import Path


def utf8_text(path):
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None


def prose_files():
    yield from sorted(Path("/usr/share/common-licenses").iterdir())
    doc = Path("/usr/share/doc")
    for package in sorted(doc.iterdir()):
        for name in ("copyright", "changelog.Debian.gz", "changelog.gz", "NEWS.Debian.gz", "README"):
            if (package / name).is_file():
                yield package / name


# Character ranges to draw "words" from: CJK ideographs, kana, Hangul syllables, Cyrillic,
# Arabic, Devanagari; emoji and ZWJ sequences are added whole.
SCRIPTS = [
    (0x4E00, 0x9FFF, 1, 4), (0x3041, 0x30FF, 2, 6), (0xAC00, 0xD7A3, 1, 4),
    (0x0430, 0x044F, 3, 9), (0x0627, 0x064A, 3, 8), (0x0905, 0x0939, 2, 6),
]
EMOJI = ["\U0001F600", "\U0001F680", "\u2764\ufe0f", "\U0001F44D\U0001F3FD",
         "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F1EF\U0001F1F5", "\U0001F3F3\ufe0f\u200d\U0001F308"]


def mixed_lines(rng, size):
    out = []
    total = 0
    while total < size:
        words = []
        for _ in range(rng.randint(4, 14)):
            if rng.random() < 0.15:
                words.append(rng.choice(EMOJI))
                continue
            low, high, shortest, longest = rng.choice(SCRIPTS)
            words.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(shortest, longest))))
        line = " ".join(words) + rng.choice(["\n", "。\n", ".\n", "!\n", " 123\n"])
        out.append(line)
        total += len(line.encode("utf-8"))
    return "".join(out)


def main():
    out = Path(sys.argv[1])
    size = int(float(sys.argv[2] if len(sys.argv) > 2 else 10) * 1_000_000)
    prose_size = int(size * 0.85)
    parts = []
    total = 0
    for path in prose_files():
        text = utf8_text(path)
        if not text:
            continue
        parts.append(text)
        total += len(text.encode("utf-8"))
        if total >= prose_size:
            break
    parts.append(mixed_lines(random.Random(20), size - total))
    data = "".join(parts).encode("utf-8")
    out.write_bytes(data)
    print(len(data))


if __name__ == "__main__":
    main()
