#!/usr/bin/env bash
# shellcheck disable=SC2016  # the `sh -c '...'` steps read their arguments as "$1", "$2": not expanded here
# Records ncu --set full for one launch of every kernel of the zoo (examples/zoo), to check
# cargo kprof's diagnosis against examples/zoo/EXPECTED.md. For the GPU machine: no cargo
# there; the bench binaries are built elsewhere by build.sh (beside this script) and copied
# into BIN_DIR under their bench names (memory, compute, latency, occupancy, heldout, mio).
#
# Usage (from any directory):
#   scripts/gpu/zoo/record-full.sh BIN_DIR OUT_DIR   record every kernel
#   scripts/gpu/zoo/record-full.sh --list BIN_DIR    only check the entries against the
#       binaries: each case regex must match exactly one case of its binary's --list, each
#       listed case must belong to exactly one entry, and each kernel regex must match
#       exactly one kernel name of the zoo. Needs no GPU; exit status 1 on a mismatch.
#
# The entries come from kernels.tsv beside this script (name, bench, case regex, ncu
# kernel regex, held_out). Per entry, one profiled launch:
#   KPROF_PROFILE=1 KPROF_CASE=<case> KPROF_LAUNCH_COUNT=1 ncu --set full --import-source yes
#     --clock-control none --profile-from-start off --kernel-name regex:<re> --launch-count 1
#     -o OUT_DIR/reports/<name> BIN_DIR/<bench>
# then three pages printed from the report (no more replays), in the background while the
# next kernel is collected.
#
# Writes, in OUT_DIR:
#   environment.txt              date, ncu/nvcc versions, GPU name, driver, clocks
#   record.log                   one line per step: rc, wall time; passes per collection
#   list-check.txt               the --list check, run first
#   <name>_full_raw.csv          ncu -i REP --csv --page raw
#   <name>_full_details.csv      ncu -i REP --csv --page details --print-details all
#   <name>_source.csv            ncu -i REP --csv --page source --print-source cuda,sass
#   logs/<name>_collect.log      ncu's log of the collection (+ .stdout: the bench's output)
#   logs/<name>_print_*.err      what a page print said on stderr, when it said anything
#   reports/<name>.ncu-rep       the reports; deleted at the end unless KEEP_REPORTS=1
#
# Environment (all optional):
#   NCU                 ncu to use (default: ncu, with /usr/local/cuda/bin first on PATH)
#   ZOO_ONLY            a bash regex over entry names: record only those
#   ZOO_MANIFEST        another manifest of the same columns (record-fixes.sh passes
#                       fixes.tsv); its kernel regexes need only match their own entry's name,
#                       and the binaries' other cases are not checked against it
#   COLLECT_TIMEOUT_S   limit of one collection (default 120)
#   PRINT_TIMEOUT_S     limit of one page print (default 180)
#   BUDGET_S            no new collection starts after this many seconds (default 420);
#                       the entries left are logged as skipped
#   KEEP_REPORTS=1      keep OUT_DIR/reports
#   ZOO_LINK_SOURCES=1  when the kernel sources are not where the binaries were built (the
#                       absolute path NVRTC recorded), link that path to this checkout's
#                       examples/zoo/kernels for the run, so --import-source finds them;
#                       otherwise the source page has SASS and file:line but no CUDA text
# Every ncu run uses --clock-control none. No step stops the script: failures are logged.
set -u -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
manifest="${ZOO_MANIFEST:-$here/kernels.tsv}"
export PATH="/usr/local/cuda/bin:$PATH"
NCU="${NCU:-ncu}"
COLLECT_TIMEOUT_S="${COLLECT_TIMEOUT_S:-120}"
PRINT_TIMEOUT_S="${PRINT_TIMEOUT_S:-180}"
BUDGET_S="${BUDGET_S:-420}"

usage() {
  echo "usage: record-full.sh BIN_DIR OUT_DIR | record-full.sh --list BIN_DIR" >&2
  exit 2
}

# The manifest, filtered by ZOO_ONLY, into parallel arrays.
names=() benches=() cases=() regexes=()
while IFS=$'\t' read -r name bench case_re kernel_re _held; do
  case "$name" in '' | '#'* | name) continue ;; esac
  if [ -n "${ZOO_ONLY:-}" ] && ! [[ "$name" =~ $ZOO_ONLY ]]; then continue; fi
  names+=("$name") benches+=("$bench") cases+=("$case_re") regexes+=("$kernel_re")
done < "$manifest"
if [ ${#names[@]} = 0 ]; then
  echo "record-full: no entry of $manifest is selected (ZOO_ONLY=${ZOO_ONLY:-})" >&2
  exit 2
fi
all_names="$(awk -F'\t' '!/^#/ && $1 != "name" && NF >= 4 { print $1 }' "$manifest")"

# list_check BIN_DIR: the --list check described above; prints one line per entry and
# returns 1 on any mismatch.
list_check() {
  local bin=$1 status=0 tmp i b n
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
    n=$(printf '%s\n' "$all_names" | grep -cE -- "${regexes[$i]}")
    if [ "$manifest" != "$here/kernels.tsv" ]; then
      n=$(printf '%s\n' "${names[$i]}" | grep -cE -- "${regexes[$i]}")
    fi
    if [ "$n" != 1 ]; then
      echo "FAIL ${names[$i]}: kernel regex '${regexes[$i]}' matches $n kernel names of the zoo"
      status=1
    fi
  done
  # Every case of the binaries belongs to one entry, except the fix variants' cases
  # (<kernel>__fixN/..., checked by record-fixes.sh against fixes.tsv).
  if [ -z "${ZOO_ONLY:-}" ] && [ "$manifest" = "$here/kernels.tsv" ]; then
    for b in $(printf '%s\n' "${benches[@]}" | sort -u); do
      while IFS= read -r listed; do
        case "$listed" in *__fix[0-9]/*) continue ;; esac
        n=0
        for i in "${!names[@]}"; do
          if [ "${benches[$i]}" = "$b" ] && printf '%s\n' "$listed" | grep -qE -- "${cases[$i]}"; then
            n=$((n + 1))
          fi
        done
        if [ "$n" != 1 ]; then
          echo "FAIL $b: case '$listed' belongs to $n entries"
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
  exit $?
fi
[ $# = 2 ] || usage
bin="$(cd "$1" && pwd)" || exit 1
out="$2"
mkdir -p "$out/reports" "$out/logs" || exit 1
out="$(cd "$out" && pwd)"
: > "$out/record.log"

now_ms() { date +%s%3N; }
log() { printf '%s\n' "$*" | tee -a "$out/record.log"; }

# step NAME LOGFILE TIMEOUT_S CMD...: CMD's stdout and stderr go to LOGFILE; rc and wall
# time go to record.log. A step killed by its timeout reports rc 124 (or 137).
step() {
  local name=$1 lf=$2 limit=$3
  shift 3
  local t0 rc
  t0=$(now_ms)
  timeout -k 10 "$limit" "$@" > "$lf" 2>&1
  rc=$?
  log "$name: rc=$rc wall_ms=$(($(now_ms) - t0))"
  return $rc
}

# ncu_note NAME LOGFILE: profiled launches and replay passes from an ncu --log-file
ncu_note() {
  local passes
  passes=$(grep -o '[0-9]* passes' "$2" 2>/dev/null | sort | uniq -c |
    awk '{ printf "%s%s passes x%s", (NR > 1 ? "; " : ""), $2, $1 }')
  log "$1: profiled_launches=$(grep -c '==PROF== Profiling' "$2" 2>/dev/null) passes=[${passes:-none}]"
  if grep -q 'No kernels were profiled' "$2" 2>/dev/null; then
    log "$1: WARNING: the kernel filter matched nothing"
  fi
}

# print_pages NAME: the three pages of NAME's report, one after the other.
print_pages() {
  local name=$1 rep="$out/reports/$1.ncu-rep" f
  if [ ! -f "$rep" ]; then
    log "print $name: no report, nothing printed"
    return
  fi
  step "print $name raw" "$out/logs/${name}_print_raw.err" "$PRINT_TIMEOUT_S" \
    sh -c '"$1" -i "$2" --csv --page raw > "$3"' _ "$NCU" "$rep" "$out/${name}_full_raw.csv"
  step "print $name details" "$out/logs/${name}_print_details.err" "$PRINT_TIMEOUT_S" \
    sh -c '"$1" -i "$2" --csv --page details --print-details all > "$3"' _ "$NCU" "$rep" \
    "$out/${name}_full_details.csv"
  step "print $name source" "$out/logs/${name}_print_source.err" "$PRINT_TIMEOUT_S" \
    sh -c '"$1" -i "$2" --csv --page source --print-source cuda,sass > "$3"' _ "$NCU" "$rep" \
    "$out/${name}_source.csv"
  for f in "$out/logs/${name}"_print_*.err; do [ -s "$f" ] || rm -f "$f"; done
}

log "start: $(date -u +%Y-%m-%dT%H:%M:%SZ) script_dir=scripts/gpu/zoo entries=${#names[@]}"

# Where NVRTC was told the sources are: the absolute path embedded in the binaries.
src_dir="$(grep -aoE '/[^[:space:]"]*/kernels/[A-Za-z0-9_]+\.cu' "$bin/${benches[0]}" 2>/dev/null |
  head -n 1 | xargs -r dirname)"
linked=""
if [ -n "$src_dir" ] && [ ! -e "$src_dir" ] && [ "${ZOO_LINK_SOURCES:-0}" = 1 ]; then
  if mkdir -p "$(dirname "$src_dir")" && ln -s "$repo/examples/zoo/kernels" "$src_dir"; then
    linked="$src_dir"
  fi
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "--- ncu --version"
  "$NCU" --version
  echo "--- nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  echo "--- nvcc --version"
  nvcc --version
  echo "--- uname -a"
  uname -a
  echo "--- kernel sources as the binaries name them"
  if [ -z "$src_dir" ]; then
    echo "not found in $bin/${benches[0]}"
  elif [ -n "$linked" ]; then
    echo "$src_dir (linked to $repo/examples/zoo/kernels for this run)"
  elif [ -e "$src_dir" ]; then
    echo "$src_dir (present)"
  else
    echo "$src_dir (absent: the source page has SASS but no CUDA text; see ZOO_LINK_SOURCES)"
  fi
} > "$out/environment.txt" 2>&1
log "environment.txt written"

list_check "$bin" > "$out/list-check.txt" 2>&1
log "list check: rc=$? (list-check.txt)"

print_pids=()
for i in "${!names[@]}"; do
  name=${names[$i]}
  if [ "$SECONDS" -ge "$BUDGET_S" ]; then
    log "ncu full $name: skipped (BUDGET_S=$BUDGET_S reached after ${SECONDS}s)"
    continue
  fi
  step "ncu full $name" "$out/logs/${name}_collect.stdout" "$COLLECT_TIMEOUT_S" \
    env KPROF_PROFILE=1 KPROF_CASE="${cases[$i]}" KPROF_LAUNCH_COUNT=1 \
    "$NCU" --set full --import-source yes --clock-control none --profile-from-start off \
    --kernel-name "regex:${regexes[$i]}" --launch-count 1 -f -o "$out/reports/$name" \
    --log-file "$out/logs/${name}_collect.log" "$bin/${benches[$i]}"
  ncu_note "ncu full $name" "$out/logs/${name}_collect.log"
  print_pages "$name" &
  print_pids+=($!)
done

for p in "${print_pids[@]}"; do wait "$p"; done
if [ "${KEEP_REPORTS:-0}" != 1 ]; then
  rm -rf "$out/reports"
fi
if [ -n "$linked" ]; then
  rm -f "$linked"
fi
log "end: $(date -u +%Y-%m-%dT%H:%M:%SZ) total_s=$SECONDS"
