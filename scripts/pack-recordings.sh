#!/usr/bin/env bash
# Stores a new recording small: gzip-compresses, byte for byte, every file over 4 KiB in
# the folders given (each under fixtures/), keeping README.md, EXPECTED.md and files
# that are compressed already (.gz, .png) or binary (.so) as they are. Each FILE becomes
# FILE.gz with FILE's mode; tests read FILE as before (kprof-testkit unpacks it).
#
# usage: scripts/pack-recordings.sh DIR...     e.g. scripts/pack-recordings.sh fixtures/h200/my-run
#
# Every compressed file is unpacked again and compared with the original before the
# original is removed: nothing ncu printed is changed. Run it before `git add`; the
# recordings test fails when what the repository sends to a GPU machine passes its budget
# (docs/development.md, "Adding a recording").
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
limit=4096
packed=0
before=0
after=0
for dir in "$@"; do
  [ -d "$dir" ] || { echo "pack-recordings: $dir is not a folder" >&2; exit 2; }
  case "$(cd "$dir" && pwd)/" in
    */fixtures/*) ;;
    *) echo "pack-recordings: $dir is not under fixtures/: recordings live there" >&2; exit 2 ;;
  esac
  while IFS= read -r -d '' f; do
    case "$(basename "$f")" in
      README.md | EXPECTED.md | *.gz | *.png | *.so) continue ;;
    esac
    size=$(stat -c %s "$f")
    [ "$size" -gt "$limit" ] || continue
    if [ -e "$f.gz" ]; then
      echo "pack-recordings: both $f and $f.gz exist: remove one" >&2
      exit 1
    fi
    gzip -n -9 -c "$f" > "$f.gz"
    chmod --reference="$f" "$f.gz"
    if ! gzip -dc "$f.gz" | cmp -s - "$f"; then
      rm -f "$f.gz"
      echo "pack-recordings: $f.gz does not unpack to $f: left as it was" >&2
      exit 1
    fi
    rm "$f"
    packed=$((packed + 1))
    before=$((before + size))
    after=$((after + $(stat -c %s "$f.gz")))
  done < <(find "$dir" -type f -print0 | sort -z)
done
echo "pack-recordings: $packed file(s), $before bytes -> $after bytes"
