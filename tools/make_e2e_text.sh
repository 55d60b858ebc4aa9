#!/usr/bin/env bash
# Writes the text the end-to-end configs (configs/e2e/) feed the bundled model: English technical
# prose that ships with every Debian system, none of it a license text.
#
# The bundled model was trained on Debian's license texts (/usr/share/common-licenses) and on package
# documentation, so no Debian text is certainly unseen. These are the READMEs and one specification
# of nine packages of priority "required" (present on every Debian installation that keeps its
# /usr/share/doc); copyright files are left out because they are license texts. The model reads them
# at about 2.3 bits per byte, above its 2.16 on held-out documents and far above the 1.9 of the GPL
# windows it was trained on: it has not memorized them.
#
# Deterministic: the files in sorted order, the first 2048 bytes of each (decompressed), joined by a
# blank line, cut to 16384 bytes (64 chunks of 256 tokens, one token per byte). Another Debian release
# ships other versions of these files; the script says when the text differs from the one the committed
# results were made from (their "tokens.sha256" records it too).
# Usage: tools/make_e2e_text.sh [OUT]   (default data/e2e_text.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-data/e2e_text.txt}
bytes=16384
per_file=2048
expected=bdd45584ac09d0d151ba96b7245f0968b63d111a6ee2740d6037b74f6668cba1
files=(
  /usr/share/doc/apt/README.md.gz
  /usr/share/doc/base-files/README
  /usr/share/doc/base-passwd/README
  /usr/share/doc/bash/INTRO.gz
  /usr/share/doc/coreutils/README.gz
  /usr/share/doc/dpkg/spec/triggers.txt
  /usr/share/doc/findutils/README.gz
  /usr/share/doc/grep/README
  /usr/share/doc/gzip/README.gz
)
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "make_e2e_text.sh: $f is missing (is /usr/share/doc stripped on this system?)" >&2; exit 2; }
done
tmp=$out.tmp-$$
trap 'rm -f "$tmp" "$tmp.one" "$tmp.all"' EXIT
: > "$tmp.all"
for f in "${files[@]}"; do
  case $f in
    *.gz) gzip -dc "$f" > "$tmp.one" ;;
    *) cp "$f" "$tmp.one" ;;
  esac
  head -c $per_file "$tmp.one" >> "$tmp.all"
  printf '\n\n' >> "$tmp.all"
done
head -c $bytes "$tmp.all" > "$tmp"
size=$(wc -c < "$tmp")
[ "$size" -eq $bytes ] || { echo "make_e2e_text.sh: only $size bytes, $bytes needed" >&2; exit 2; }
mv "$tmp" "$out"
sum=$(sha256sum "$out" | cut -d' ' -f1)
echo "$out: $bytes bytes, sha256 $sum"
if [ "$sum" != "$expected" ]; then
  echo "note: not the text the committed results/*.e2e.json were made from (sha256 $expected);" \
       "this system ships other versions of the files, so the e2e numbers will differ" >&2
fi
