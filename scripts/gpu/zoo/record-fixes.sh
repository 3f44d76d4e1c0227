#!/usr/bin/env bash
# Records the fix table of examples/zoo/FIXES.md on a GPU machine without cargo: for every
# original and fix variant of fixes.tsv (beside this script), the kernel's duration over
# many launches, and one launch under ncu --set full with its raw, details and source pages
# (as record-full.sh does). The bench binaries are built elsewhere by build.sh and copied
# into BIN_DIR under their bench names (memory, compute, latency, heldout, mio, ...).
#
# Usage (from any directory):
#   scripts/gpu/zoo/record-fixes.sh BIN_DIR OUT_DIR   time, then record, every entry
#   scripts/gpu/zoo/record-fixes.sh --list BIN_DIR    check only, no GPU: every case regex
#       of fixes.tsv matches exactly one case of its binary, every fix-variant case
#       (<kernel>__fixN/...) of the binaries has its entry, and every variant's original is
#       an entry. Exit status 1 on a mismatch.
#
# 1. Durations (the measured savings are durations before vs after). Per kernel group
#    (original, __fix1, __fix2), one process of its bench:
#      KPROF_CASE='^(orig|orig__fix1|orig__fix2)/' BIN_DIR/<bench> --mode cold
#        --min-time $TIME_MIN_S --min-samples 20 --max-noise 2 --timeout $TIME_LIMIT_S
#        --result OUT_DIR/timing/round<r>_<orig>.json
#    Cold mode flushes L2 before each timed launch, as ncu does before a profiled one.
#    $ROUNDS rounds (default 2) over all groups, so that clock drift shows as a
#    difference between rounds. The harness runs each case's correctness check first.
#    Then OUT_DIR/durations.tsv: name, fixes, round, mode, median_us, min_us, rel_noise,
#    samples, stop_reason, check, sm_clock_mhz (from the JSON results).
# 2. ncu: record-full.sh with ZOO_MANIFEST=fixes.tsv into OUT_DIR/ncu (originals and their
#    fixes, group by group), with whatever is left of BUDGET_S; entries left over are
#    logged as skipped in OUT_DIR/ncu/record.log. Every ncu run uses --clock-control none.
#
# Environment (all optional):
#   BUDGET_S        the whole recording's budget in seconds (default 480); the timing
#                   rounds stop starting groups at half of it, ncu gets the rest
#   ROUNDS          timing rounds (default 2)
#   TIME_MIN_S      --min-time of a case (default 0.3)
#   TIME_LIMIT_S    --timeout of a case (default 3)
#   FIXES_ONLY      a bash regex over original kernel names: only those groups
#   NCU, COLLECT_TIMEOUT_S, PRINT_TIMEOUT_S, KEEP_REPORTS, ZOO_LINK_SOURCES: passed on to
#                   record-full.sh (see there)
# No step stops the script: failures are logged in OUT_DIR/record.log.
set -u -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
manifest="$here/fixes.tsv"
export PATH="/usr/local/cuda/bin:$PATH"
BUDGET_S="${BUDGET_S:-480}"
ROUNDS="${ROUNDS:-2}"
TIME_MIN_S="${TIME_MIN_S:-0.3}"
TIME_LIMIT_S="${TIME_LIMIT_S:-3}"

usage() {
  echo "usage: record-fixes.sh BIN_DIR OUT_DIR | record-fixes.sh --list BIN_DIR" >&2
  exit 2
}

names=() benches=() cases=() fixes=()
while IFS=$'\t' read -r name bench case_re _kernel_re of; do
  case "$name" in '' | '#'* | name) continue ;; esac
  orig=$name
  [ "$of" != - ] && orig=$of
  if [ -n "${FIXES_ONLY:-}" ] && ! [[ "$orig" =~ $FIXES_ONLY ]]; then continue; fi
  names+=("$name") benches+=("$bench") cases+=("$case_re") fixes+=("$of")
done < "$manifest"
[ ${#names[@]} -gt 0 ] || { echo "record-fixes: no entry selected (FIXES_ONLY=${FIXES_ONLY:-})" >&2; exit 2; }
originals=()
for i in "${!names[@]}"; do
  [ "${fixes[$i]}" = - ] && originals+=("${names[$i]}")
done

# list_check BIN_DIR: the --list check described above.
list_check() {
  local bin=$1 status=0 tmp b i n listed
  tmp="$(mktemp -d)" || return 1
  for b in $(printf '%s\n' "${benches[@]}" | sort -u); do
    if ! "$bin/$b" --list > "$tmp/$b.list" 2> "$tmp/$b.err"; then
      echo "FAIL $b: '$bin/$b --list' failed: $(head -n 3 "$tmp/$b.err")"
      status=1
      : > "$tmp/$b.list"
    fi
  done
  for i in "${!names[@]}"; do
    b=${benches[$i]}
    n=$(grep -cE -- "${cases[$i]}" "$tmp/$b.list")
    if [ "$n" != 1 ]; then
      echo "FAIL ${names[$i]}: case regex '${cases[$i]}' matches $n cases of $b"
      status=1
    else
      echo "ok   ${names[$i]}: $(grep -E -- "${cases[$i]}" "$tmp/$b.list")"
    fi
    if [ "${fixes[$i]}" != - ] && ! printf '%s\n' "${originals[@]}" | grep -qx -- "${fixes[$i]}"; then
      echo "FAIL ${names[$i]}: its original ${fixes[$i]} is not an entry"
      status=1
    fi
  done
  if [ -z "${FIXES_ONLY:-}" ]; then
    for b in $(printf '%s\n' "${benches[@]}" | sort -u); do
      while IFS= read -r listed; do
        case "$listed" in *__fix[0-9]/*) ;; *) continue ;; esac
        n=0
        for i in "${!names[@]}"; do
          if [ "${benches[$i]}" = "$b" ] && printf '%s\n' "$listed" | grep -qE -- "${cases[$i]}"; then
            n=$((n + 1))
          fi
        done
        if [ "$n" != 1 ]; then
          echo "FAIL $b: fix case '$listed' belongs to $n entries of fixes.tsv"
          status=1
        fi
      done < "$tmp/$b.list"
    done
  fi
  rm -rf "$tmp"
  return "$status"
}

if [ "${1:-}" = "--list" ]; then
  [ $# = 2 ] || usage
  bin="$(cd "$2" && pwd)" || exit 1
  list_check "$bin"
  status=$?
  # The ncu half reads the same manifest through record-full.sh: check it there too.
  ZOO_MANIFEST="$manifest" "$here/record-full.sh" --list "$bin" > /dev/null || {
    echo "FAIL record-full.sh --list with fixes.tsv (run it for details)"
    status=1
  }
  exit "$status"
fi
[ $# = 2 ] || usage
bin="$(cd "$1" && pwd)" || exit 1
out="$2"
mkdir -p "$out/timing" "$out/logs" || exit 1
out="$(cd "$out" && pwd)"
: > "$out/record.log"
log() { printf '%s\n' "$*" | tee -a "$out/record.log"; }
now_ms() { date +%s%3N; }

log "start: $(date -u +%Y-%m-%dT%H:%M:%SZ) entries=${#names[@]} groups=${#originals[@]} budget_s=$BUDGET_S"
list_check "$bin" > "$out/list-check.txt" 2>&1
log "list check: rc=$? (list-check.txt)"

# 1. Durations, group by group, round after round, within half the budget.
half=$((BUDGET_S / 2))
for r in $(seq 1 "$ROUNDS"); do
  for orig in "${originals[@]}"; do
    if [ "$SECONDS" -ge "$half" ]; then
      log "timing round $r $orig: skipped (half of BUDGET_S=$BUDGET_S reached after ${SECONDS}s)"
      continue
    fi
    group="" b=""
    for i in "${!names[@]}"; do
      if [ "${names[$i]}" = "$orig" ] || [ "${fixes[$i]}" = "$orig" ]; then
        group="$group${group:+|}${names[$i]}"
        b=${benches[$i]}
      fi
    done
    t0=$(now_ms)
    KPROF_CASE="^($group)/" timeout -k 10 $((3 * (TIME_LIMIT_S + 10) + 60)) "$bin/$b" --mode cold \
      --min-time "$TIME_MIN_S" --min-samples 20 --max-noise 2 --timeout "$TIME_LIMIT_S" \
      --result "$out/timing/round${r}_$orig.json" > "$out/logs/timing_round${r}_$orig.log" 2>&1
    log "timing round $r $orig ($group): rc=$? wall_ms=$(($(now_ms) - t0))"
  done
done

python3 - "$out" "$manifest" > "$out/durations.tsv" 2> "$out/logs/durations.err" <<'PY'
import glob, json, os, re, sys
out, manifest = sys.argv[1:3]
fixes = {}
for line in open(manifest):
    cells = line.rstrip("\n").split("\t")
    if len(cells) == 5 and not line.startswith("#") and cells[0] != "name":
        fixes[cells[0]] = cells[4]
print("name\tfixes\tround\tmode\tmedian_us\tmin_us\trel_noise\tsamples\tstop_reason\tcheck\tsm_clock_mhz")
for path in sorted(glob.glob(os.path.join(out, "timing", "round*_*.json"))):
    rnd = re.match(r"round(\d+)_", os.path.basename(path)).group(1)
    try:
        doc = json.load(open(path))
    except ValueError as e:
        print(f"{path}: {e}", file=sys.stderr)
        continue
    for c in doc.get("cases", []):
        name = c["name"].split("/")[0]
        us = lambda k: f"{c[k] / 1000:.3f}" if isinstance(c.get(k), (int, float)) else ""
        print("\t".join(str(v) for v in [name, fixes.get(name, "?"), rnd, c.get("mode", ""),
            us("median_ns"), us("min_ns"), c.get("rel_noise", ""), c.get("samples", ""),
            c.get("stop_reason", ""), c.get("check", ""), c.get("sm_clock_mhz", "")]))
PY
log "durations.tsv: rc=$? ($(($(wc -l < "$out/durations.tsv") - 1)) rows; the JSON results are in timing/)"

# 2. ncu --set full of every entry, with what is left of the budget.
left=$((BUDGET_S - SECONDS))
[ "$left" -lt 30 ] && left=30
log "ncu: record-full.sh with fixes.tsv, BUDGET_S=$left"
ZOO_MANIFEST="$manifest" ZOO_ONLY="${FIXES_ONLY:+^(${FIXES_ONLY})(__fix[0-9])?\$}" BUDGET_S="$left" \
  "$here/record-full.sh" "$bin" "$out/ncu" > "$out/logs/record-full.log" 2>&1
log "ncu: rc=$? (ncu/record.log)"
log "end: $(date -u +%Y-%m-%dT%H:%M:%SZ) total_s=$SECONDS"
