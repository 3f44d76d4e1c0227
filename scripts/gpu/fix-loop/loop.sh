#!/usr/bin/env bash
# The fix loop as a user runs it, on a GPU machine without cargo: profile every fix-loop
# kernel from an archive built elsewhere, then compare each fix with its original.
#   cargo kprof archive --manifest-path examples/fix-loop/Cargo.toml --workspace \
#     --clock-control none -o fixloop.tar
#
# usage: scripts/gpu/fix-loop/loop.sh CARGO_KPROF ARCHIVE OUT_DIR [PAIR...]
#
# 1. Durations of each PAIR (default: none; the original and its __fix in one process,
#    the harness' cold mode, two rounds), as record.sh takes them: OUT_DIR/durations.tsv.
# 2. `run --archive` with the default stages (auto) of every kernel: OUT_DIR/auto/.
# 3. For every kernel K with a K__fix: `compare FIX --baseline K --force` (the names
#    differ), its console in OUT_DIR/compare/K.txt.
set -u -o pipefail
kprof="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
archive="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
out="$3"
shift 3
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$out/timing" "$out/compare" "$out/bin" || exit 1
out="$(cd "$out" && pwd)"
log() { printf '%s\n' "$*" | tee -a "$out/loop.log"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  ncu --version | tail -n 1
  "$kprof" kprof --version
} >> "$out/environment.txt" 2>&1

if [ "$#" -gt 0 ]; then
  tar -xf "$archive" -C "$out/bin" --wildcards 'bin/fixloop-*'
  bench="$(find "$out/bin/bin" -name 'fixloop-*' -type f | head -n 1)"
  for r in 1 2; do
    for k in "$@"; do
      KPROF_CASE="^($k|${k}__fix)/" "$bench" --mode cold --min-time 0.3 --min-samples 20 --max-noise 2 \
        --timeout 3 --result "$out/timing/round${r}_$k.json" > "$out/timing/round${r}_$k.log" 2>&1
      log "timing round $r $k: rc=$?"
    done
  done
  python3 - "$out" > "$out/durations.tsv" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
print("name\tround\tmedian_us\tmin_us\trel_noise\tsamples\tcheck")
for path in sorted(glob.glob(os.path.join(out, "timing", "round*_*.json"))):
    rnd = re.match(r"round(\d+)_", os.path.basename(path)).group(1)
    for c in json.load(open(path)).get("cases", []):
        us = lambda k: f"{c[k] / 1000:.3f}" if isinstance(c.get(k), (int, float)) else ""
        print("\t".join(str(v) for v in [c["name"].split("/")[0], rnd, us("median_ns"), us("min_ns"),
            c.get("rel_noise", ""), c.get("samples", ""), c.get("check", "")]))
PY
  rm -rf "${out:?}/bin"
fi

s=$SECONDS
"$kprof" kprof run --archive "$archive" --workspace-remap "$out/auto" --timeout 300 \
  > "$out/auto.stdout" 2> "$out/auto.log"
log "run --archive (auto): rc=$? s=$((SECONDS - s))"

profiles="$(find "$out/auto" -name '*_20[0-9][0-9][0-9][0-9][0-9][0-9]_*' -type d -path '*/profile/*' \
  -not -name '.*' -not -path '*/profile/*/*')"
for fix in $(printf '%s\n' "$profiles" | grep '_fix_'); do
  name="$(basename "$fix")"
  kernel="${name%%_fix_*}"
  before="$(printf '%s\n' "$profiles" | grep "/${kernel}_20[0-9]*_[0-9]*$" | head -n 1)"
  [ -n "$before" ] || continue
  "$kprof" kprof compare "$fix" --baseline "$before" --force > "$out/compare/$kernel.txt" 2>&1
  log "compare $kernel: rc=$?"
done
grep -h "fix loop" "$out"/compare/*.txt | head -n 40
