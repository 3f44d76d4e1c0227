#!/usr/bin/env bash
# Records the fix loop (examples/fix-loop, EXPECTED.md) on a GPU machine without cargo,
# from an archive built elsewhere:
#   cargo kprof archive --manifest-path examples/fix-loop/Cargo.toml --workspace \
#     --clock-control none -o fixloop.tar
#
# usage: scripts/gpu/fix-loop/record.sh CARGO_KPROF ARCHIVE OUT_DIR
#
# 1. Durations: the bench binary taken from the archive, per pair (original and __fix) one
#    process in the harness' cold mode (L2 flushed before each timed launch, as under ncu):
#      KPROF_CASE='^(k|k__fix)/' fixloop --mode cold --min-time 0.3 --min-samples 20
#        --max-noise 2 --timeout 3 --result OUT_DIR/timing/round<r>_<k>.json
#    $ROUNDS rounds (default 2), then OUT_DIR/durations.tsv.
# 2. `run --archive` with the default stages (auto) of all 24 kernels: OUT_DIR/auto/.
# 3. `run --archive --set full` of all 24: OUT_DIR/full/.
# Every ncu run uses the archive's --clock-control none. Logs are OUT_DIR/*.log; the
# consoles' verdict lines of the held-back pairs (EXPECTED.md) are not echoed.
set -u -o pipefail
kprof="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
archive="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
out="$3"
ROUNDS="${ROUNDS:-2}"
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
} > "$out/environment.txt" 2>&1

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

for way in auto full; do
  s=$SECONDS
  extra=()
  [ "$way" = full ] && extra=(--set full)
  "$kprof" kprof run --archive "$archive" --workspace-remap "$out/$way" --timeout 300 "${extra[@]}" \
    > "$out/$way.stdout" 2> "$out/$way.log"
  log "run --archive ($way): rc=$? s=$((SECONDS - s))"
done
grep -Ev "^($held_back)(__fix)?: " "$out/auto.stdout" | grep -v '^Report: ' | tee -a "$out/record.log" | head -n 40
