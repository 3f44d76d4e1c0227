#!/usr/bin/env bash
# shellcheck disable=SC2016  # the `sh -c '...'` steps read their arguments as "$1", "$2": not expanded here
# Records ncu --set full for the five held-out kernels in this folder (reduction, transpose,
# tc_gemm, small_grid, atomics), to test the verdict rules on kernels they were not tuned on.
# EXPECTED.md beside this script says what each kernel should be classified as, and why.
#
# Usage (on a GPU machine with the CUDA toolkit in /usr/local/cuda, from any directory):
#   scripts/gpu/extra-kernels/record.sh OUT_DIR
#
# Writes, flat in OUT_DIR:
#   environment.txt                      date, ncu/nvcc versions, GPU name and driver
#   record.log                           one line per step: rc, wall time, passes
#   <name>_build.log, <name>_run.log     nvcc output; the plain run's one-line result
#   <name>.ncu-rep, <name>_full_collect.log (+ .stdout)   --set full, second launch only
#   <name>_full_raw.csv, <name>_full_details.csv, <name>_source.csv, <name>_session.csv
#                                        pages printed from the report (no more replays)
#   reduction_1_full_raw.csv, reduction_3_full_raw.csv    two probes on a 16 Mi-float input
#                                        that measure the full-set cost per profiled launch
#   reduction_<K>_full_raw.csv           K profiled launches (K = 200 if the probes say that
#                                        fits MULTI_BUDGET_S, fewer otherwise) of the same
#                                        16 Mi-float reduction: one CSV row per launch
#
# Environment (all optional):
#   NCU, NVCC          the tools (default: ncu and nvcc, /usr/local/cuda/bin first on PATH)
#   MULTI_BUDGET_S     wall-time budget of the multi-launch recording (default 60; 0 skips it)
#   DEADLINE_S         the multi-launch recording shrinks so the script ends by then
#                      (default 150 seconds after the start)
# Every ncu run uses --clock-control none. No step stops the script: failures are logged.
set -u -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: record.sh OUT_DIR}"
mkdir -p "$out" || exit 1
out="$(cd "$out" && pwd)"
export PATH="/usr/local/cuda/bin:$PATH"
NCU="${NCU:-ncu}"
NVCC="${NVCC:-nvcc}"
MULTI_BUDGET_S="${MULTI_BUDGET_S:-60}"
DEADLINE_S="${DEADLINE_S:-150}"
SMALL_MI=16   # input of the multi-launch reduction recording, in Mi floats (64 MiB)

build="$(mktemp -d)" || exit 1
trap 'rm -rf "$build"' EXIT
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
  LAST_WALL_MS=$(( $(now_ms) - t0 ))
  log "$name: rc=$rc wall_ms=$LAST_WALL_MS"
  return $rc
}

# ncu_note NAME LOGFILE: passes and misses from an ncu --log-file
ncu_note() {
  local passes
  passes=$(grep -o '[0-9]* passes' "$2" 2>/dev/null | sort | uniq -c |
    awk '{ printf "%s%s passes x%s", (NR > 1 ? "; " : ""), $2, $1 }')
  log "$1: profiled_launches=$(grep -c '==PROF== Profiling' "$2" 2>/dev/null) passes=[${passes:-none}]"
  if grep -q 'No kernels were profiled' "$2" 2>/dev/null; then
    log "$1: WARNING: the kernel filter matched nothing"
  fi
}

log "start: $(date -u +%Y-%m-%dT%H:%M:%SZ) script_dir=scripts/gpu/extra-kernels"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "--- ncu --version"
  "$NCU" --version
  echo "--- nvidia-smi --query-gpu=name,driver_version --format=csv"
  nvidia-smi --query-gpu=name,driver_version --format=csv
  echo "--- nvcc --version"
  "$NVCC" --version
} > "$out/environment.txt" 2>&1
log "environment.txt: rc=$?"

# name, ncu kernel regex (partial match on the function name), program arguments
# (launches in total, then the size). Each program launches its kernel once as a warm-up,
# then times the rest; ncu skips the warm-up and profiles the next launch.
kernels=(
  "reduction reduce_sum_kernel 4 256"           # 256 Mi floats
  "transpose transpose_naive_kernel 4 16384"    # 16384 x 16384 floats
  "tc_gemm wmma_gemm_kernel 4 4096"             # M = N = K = 4096
  "small_grid dependent_fma_kernel 4 200000"    # 200,000 dependent FMAs per thread
  "atomics histogram_atomic_kernel 4 256"       # 256 Mi ints into 64 bins
)

# 1. Build all five in parallel.
for k in "${kernels[@]}"; do
  read -r name _ <<<"$k"
  step "build $name" "$out/${name}_build.log" 300 \
    "$NVCC" -O3 -lineinfo -arch=sm_90 -o "$build/$name" "$here/$name.cu" &
done
wait
cd "$build" || exit 1

# 2. One plain run each: the program's own median time and checksum.
for k in "${kernels[@]}"; do
  read -r name re args <<<"$k"
  # shellcheck disable=SC2086  # args is a list of numbers
  step "run $name" "$out/${name}_run.log" 120 "./$name" $args
  log "  $(tail -n 1 "$out/${name}_run.log")"
done

# 3. --set full on the second launch, kept as a report; its pages are printed afterwards, in
#    the background, while the GPU does the multi-launch recording.
for k in "${kernels[@]}"; do
  read -r name re args <<<"$k"
  # shellcheck disable=SC2086
  step "ncu full $name" "$out/${name}_full_collect.stdout" 180 \
    "$NCU" --clock-control none --kernel-name "regex:$re" --launch-skip 1 --launch-count 1 \
    --set full --import-source yes -o "$out/$name" -f --log-file "$out/${name}_full_collect.log" \
    "./$name" $args
  ncu_note "ncu full $name" "$out/${name}_full_collect.log"
done

print_pages() { # name
  local name=$1 rep="$out/$1.ncu-rep"
  if [ ! -f "$rep" ]; then
    log "print $name: no report, nothing printed"
    return
  fi
  step "print $name raw" "$out/${name}_print_raw.err" 120 \
    sh -c '"$1" -i "$2" --csv --page raw > "$3"' _ "$NCU" "$rep" "$out/${name}_full_raw.csv"
  step "print $name details" "$out/${name}_print_details.err" 120 \
    sh -c '"$1" -i "$2" --csv --page details > "$3"' _ "$NCU" "$rep" "$out/${name}_full_details.csv"
  step "print $name source" "$out/${name}_print_source.err" 180 \
    sh -c '"$1" -i "$2" --csv --page source --print-source cuda,sass > "$3"' _ "$NCU" "$rep" \
    "$out/${name}_source.csv"
  step "print $name session" "$out/${name}_print_session.err" 120 \
    sh -c '"$1" -i "$2" --csv --page session > "$3"' _ "$NCU" "$rep" "$out/${name}_session.csv"
  # keep the error logs only when something was said
  local f
  for f in "$out/${name}"_print_*.err; do [ -s "$f" ] || rm -f "$f"; done
}
print_pids=()
for k in "${kernels[@]}"; do
  read -r name _ <<<"$k"
  print_pages "$name" &
  print_pids+=($!)
done

# 4. Many profiled launches of one kernel in one raw CSV (for the import benchmark).
#    Full-set replay costs ~0.1 s per pass (FACTS: ~5 s per launch beyond start-up), far more
#    than the kernel itself, so first measure: one profiled launch, then three, on the small
#    input; their difference is the cost per extra launch. Then profile as many launches as
#    fit the budget, at most 200.
multi_cmd() { # COUNT LOGFILE: sets MULTI to the ncu command line profiling COUNT launches
  MULTI=("$NCU" --clock-control none --kernel-name regex:reduce_sum_kernel --launch-skip 1
    --launch-count "$1" --set full --csv --page raw --log-file "$2"
    ./reduction $(( $1 + 1 )) "$SMALL_MI")
}
profiled() { grep -c '==PROF== Profiling' "$1" 2>/dev/null; }
if [ "$MULTI_BUDGET_S" -gt 0 ] && [ -x ./reduction ]; then
  multi_cmd 1 "$out/reduction_1_full_raw.csv"
  step "ncu full reduction x1 (probe, $SMALL_MI Mi floats)" "$out/reduction_1_full_raw.stdout" 120 \
    "${MULTI[@]}"
  w1=$LAST_WALL_MS
  ncu_note "ncu full reduction x1" "$out/reduction_1_full_raw.csv"
  multi_cmd 3 "$out/reduction_3_full_raw.csv"
  step "ncu full reduction x3 (probe, $SMALL_MI Mi floats)" "$out/reduction_3_full_raw.stdout" 120 \
    "${MULTI[@]}"
  w3=$LAST_WALL_MS
  ncu_note "ncu full reduction x3" "$out/reduction_3_full_raw.csv"
  if [ "$(profiled "$out/reduction_1_full_raw.csv")" = 1 ] && [ "$(profiled "$out/reduction_3_full_raw.csv")" = 3 ]; then
    per=$(( (w3 - w1) / 2 ))
    [ "$per" -ge 100 ] || per=$(( w3 / 3 > 100 ? w3 / 3 : 100 ))   # noisy probes: stay safe
    fixed=$(( w1 - per > 0 ? w1 - per : 0 ))
    budget_s=$(( DEADLINE_S - SECONDS - 5 ))
    [ "$budget_s" -le "$MULTI_BUDGET_S" ] || budget_s=$MULTI_BUDGET_S
    count=$(( (budget_s * 1000 - fixed) * 9 / 10 / per ))   # 10 % margin
    [ "$count" -le 200 ] || count=200
    log "multi-launch plan: per_launch_ms=$per fixed_ms=$fixed budget_s=$budget_s count=$count" \
      "(200 launches would take ~$(( (fixed + 200 * per) / 1000 )) s)"
    if [ "$count" -ge 10 ]; then
      multi_cmd "$count" "$out/reduction_${count}_full_raw.csv"
      step "ncu full reduction x$count ($SMALL_MI Mi floats)" "$out/reduction_${count}_full_raw.stdout" \
        $(( budget_s + 30 )) "${MULTI[@]}"
      ncu_note "ncu full reduction x$count" "$out/reduction_${count}_full_raw.csv"
    else
      log "multi-launch recording skipped: fewer than 10 launches fit the budget"
    fi
  else
    log "multi-launch recording skipped: the probes did not profile 1 and 3 launches"
  fi
else
  log "multi-launch recording skipped (MULTI_BUDGET_S=$MULTI_BUDGET_S or no reduction binary)"
fi

for p in "${print_pids[@]}"; do wait "$p"; done
log "end: $(date -u +%Y-%m-%dT%H:%M:%SZ) total_s=$SECONDS"
