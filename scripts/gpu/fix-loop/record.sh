#!/usr/bin/env bash
# Records the fix loop (examples/fix-loop, EXPECTED.md) on a GPU machine without cargo,
# from two archives built elsewhere (the stages are chosen when archiving):
#   cargo kprof archive --manifest-path examples/fix-loop/Cargo.toml --workspace \
#     --clock-control none -o fixloop.tar
#   ... the same --set full -o fixloop-full.tar
#
# usage: scripts/gpu/fix-loop/record.sh CARGO_KPROF ARCHIVE ARCHIVE_FULL OUT_DIR
#        STEPS="auto full" scripts/gpu/fix-loop/record.sh ...   only those steps
#
# 1. Durations: the bench binary taken from the archive, per pair (original and __fix) one
#    process in the harness' cold mode (L2 flushed before each timed launch, as under ncu):
#      KPROF_CASE='^(k|k__fix)/' fixloop --mode cold --min-time 0.3 --min-samples 20
#        --max-noise 2 --timeout 3 --result OUT_DIR/timing/round<r>_<k>.json
#    $ROUNDS rounds (default 2), then OUT_DIR/durations.tsv.
# 2. `run --archive` with the default stages (auto) of all 24 kernels: OUT_DIR/auto/.
# 3. `run --archive` of the --set full archive, all 24: OUT_DIR/full/.
# Every ncu run uses the archive's --clock-control none. Logs are OUT_DIR/*.log; the
# consoles' verdict lines of the held-back pairs (EXPECTED.md) are not echoed.
set -u -o pipefail
kprof="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
archive="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
archive_full="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
out="$4"
ROUNDS="${ROUNDS:-2}"
STEPS="${STEPS:-timing auto full}"
held_back='segsum_idle_512x128|hist_global_skewed'
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$out/timing" "$out/bin" || exit 1
out="$(cd "$out" && pwd)"
log() { printf '%s\n' "$*" | tee -a "$out/record.log"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  ncu --version | tail -n 1
  "$kprof" kprof --version
} >> "$out/environment.txt" 2>&1

if [[ " $STEPS " == *" timing "* ]]; then
tar -xf "$archive" -C "$out/bin" --wildcards 'bin/fixloop-*'
bench="$(find "$out/bin/bin" -name 'fixloop-*' -type f | head -n 1)"
log "bench: ${bench:-none}"
pairs=$("$bench" --list | sed -n 's#^\([a-z0-9_]*\)/.*#\1#p' | grep -v '__fix$')
for r in $(seq 1 "$ROUNDS"); do
  for k in $pairs; do
    s=$SECONDS
    KPROF_CASE="^($k|${k}__fix)/" "$bench" --mode cold --min-time 0.3 --min-samples 20 --max-noise 2 \
      --timeout 3 --result "$out/timing/round${r}_$k.json" > "$out/timing/round${r}_$k.log" 2>&1
    log "timing round $r $k: rc=$? s=$((SECONDS - s))"
  done
done
python3 - "$out" > "$out/durations.tsv" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
print("name\tround\tmedian_us\tmin_us\trel_noise\tsamples\tstop_reason\tcheck\tsm_clock_mhz")
for path in sorted(glob.glob(os.path.join(out, "timing", "round*_*.json"))):
    rnd = re.match(r"round(\d+)_", os.path.basename(path)).group(1)
    for c in json.load(open(path)).get("cases", []):
        us = lambda k: f"{c[k] / 1000:.3f}" if isinstance(c.get(k), (int, float)) else ""
        print("\t".join(str(v) for v in [c["name"].split("/")[0], rnd, us("median_ns"), us("min_ns"),
            c.get("rel_noise", ""), c.get("samples", ""), c.get("stop_reason", ""), c.get("check", ""),
            c.get("sm_clock_mhz", "")]))
PY
log "durations.tsv: rc=$?"
rm -rf "${out:?}/bin"
fi

for way in auto full; do
  [[ " $STEPS " == *" $way "* ]] || continue
  s=$SECONDS
  from=$archive
  [ "$way" = full ] && from=$archive_full
  "$kprof" kprof run --archive "$from" --workspace-remap "$out/$way" --timeout 300 \
    > "$out/$way.stdout" 2> "$out/$way.log"
  log "run --archive ($way): rc=$? s=$((SECONDS - s))"
done
grep -Ev "^($held_back)(__fix)?: " "$out/auto.stdout" | grep -v '^Report: ' | tee -a "$out/record.log" | head -n 40
