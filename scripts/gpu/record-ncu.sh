#!/usr/bin/env bash
# Records real ncu output from the demo benches, for parser/analysis fixtures and for
# measuring the replay cost (passes) of stage definitions.
#
# Usage (on a GPU machine, from the repository root):
#   scripts/gpu/record-ncu.sh BIN_DIR OUT_DIR
# BIN_DIR holds the demo bench binaries (copy, fma, tiny, hgemm, occupancy, reduce), as
# scripts/gpu/stage-binaries.sh leaves them. Every ncu run uses --clock-control none.
# PARTS (default "full candidates misc meta") picks what to record:
#   full        per kernel, --set full kept as a report, its raw/details/source pages printed
#   candidates  replay cost of candidate stage definitions (sections vs metric lists)
#   misc        a filter matching nothing, a discovery pass, CSV interleaved with stdout
#   meta        --list-sets, --list-sections, --query-metrics for gh100
set -uo pipefail
bin="$(cd "${1:?BIN_DIR}" && pwd)"
out="${2:?OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export PATH=/usr/local/cuda/bin:$PATH
NCU="${NCU:-ncu}"
cd "$(dirname "$0")/../../examples/demo" || exit 1   # benches find their .cu files from here

log() { printf '%s\n' "$*" | tee -a "$out/record.log"; }

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  "$NCU" --version
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -n 2
  uname -a
} > "$out/environment.txt" 2>&1

# bench binary, harness case regex, ncu kernel regex, short name
kernels=(
  "copy copy .*copy_kernel.* copy"
  "fma fma .*fma_kernel.* fma"
  "tiny tiny .*tiny_kernel.* tiny"
  "hgemm hgemm_naive .*hgemm_naive.* hgemm_naive"
  "hgemm hgemm_tiled .*hgemm_tiled.* hgemm_tiled"
  "occupancy occupancy .*occupancy_kernel.* occupancy"
  "reduce reduce .*reduce_kernel.* reduce"
)

# ncu in a harness window: exactly KPROF_LAUNCH_COUNT launches of the case are profiled.
ncu_case() { # bench case count logfile ncu-args...
  local b=$1 c=$2 n=$3 lf=$4; shift 4
  local t0 t1
  t0=$(date +%s%N)
  KPROF_PROFILE=1 KPROF_CASE="$c" KPROF_LAUNCH_COUNT="$n" \
    "$NCU" --clock-control none --profile-from-start off "$@" --log-file "$lf" "$bin/$b" > "$lf.stdout" 2>&1
  local rc=$?
  t1=$(date +%s%N)
  local passes
  passes=$(grep -o '[0-9]* passes' "$lf" 2>/dev/null | head -n1)
  log "$(basename "$lf"): rc=$rc wall_ms=$(( (t1 - t0) / 1000000 )) ${passes:-no passes line}"
}

# 1. Per kernel: one full-set collection kept as a report, then its pages printed from
#    the report (no more replays): raw (about 2,240 columns), details (rules), source.
parts=" ${PARTS:-full candidates misc meta} "
want() { [[ "$parts" == *" $1 "* ]]; }

if want full; then
mkdir -p "$out/full"
for k in "${kernels[@]}"; do
  read -r b c re name <<<"$k"
  ncu_case "$b" "$c" 1 "$out/full/${name}_full_collect.log" --kernel-name "regex:$re" --set full \
    --import-source yes -o "$out/full/$name" -f
  if [ -f "$out/full/$name.ncu-rep" ]; then
    "$NCU" -i "$out/full/$name.ncu-rep" --csv --page raw > "$out/full/${name}_full_raw.csv" 2>&1
    "$NCU" -i "$out/full/$name.ncu-rep" --csv --page details > "$out/full/${name}_full_details.csv" 2>&1
    "$NCU" -i "$out/full/$name.ncu-rep" --csv --page source --print-source cuda,sass \
      > "$out/full/${name}_source.csv" 2>&1
    "$NCU" -i "$out/full/$name.ncu-rep" --csv --page session > "$out/full/${name}_session.csv" 2>&1
  fi
done

fi

# 2. Replay cost of candidate stage definitions, on copy and on hgemm_naive.
if want candidates; then
mkdir -p "$out/stages"
BASIC_M="gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,sm__inst_executed.avg.per_cycle_active,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__block_size,launch__grid_size,launch__waves_per_multiprocessor,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks"
MEM_M="dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
STALL_M="smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio"
COMP_M="smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_hfma_pred_on.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"
OCC_M="smsp__warps_eligible.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct"
for k in "copy copy .*copy_kernel.* copy" "hgemm hgemm_naive .*hgemm_naive.* hgemm_naive"; do
  read -r b c re name <<<"$k"
  f=(--kernel-name "regex:$re" --csv --page raw)
  ncu_case "$b" "$c" 1 "$out/stages/${name}_set_basic.csv" "${f[@]}" --set basic
  ncu_case "$b" "$c" 1 "$out/stages/${name}_sec_basic.csv" "${f[@]}" --section SpeedOfLight --section LaunchStats --section Occupancy
  ncu_case "$b" "$c" 1 "$out/stages/${name}_met_basic.csv" "${f[@]}" --metrics "$BASIC_M"
  ncu_case "$b" "$c" 1 "$out/stages/${name}_sec_memory.csv" "${f[@]}" --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables
  ncu_case "$b" "$c" 1 "$out/stages/${name}_met_memory.csv" "${f[@]}" --metrics "$MEM_M"
  ncu_case "$b" "$c" 1 "$out/stages/${name}_sec_compute.csv" "${f[@]}" --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats
  ncu_case "$b" "$c" 1 "$out/stages/${name}_met_compute.csv" "${f[@]}" --metrics "$COMP_M,$STALL_M"
  ncu_case "$b" "$c" 1 "$out/stages/${name}_met_stalls.csv" "${f[@]}" --metrics "$STALL_M"
  ncu_case "$b" "$c" 1 "$out/stages/${name}_sec_occupancy.csv" "${f[@]}" --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats
  ncu_case "$b" "$c" 1 "$out/stages/${name}_met_occupancy.csv" "${f[@]}" --metrics "$OCC_M,$STALL_M"
  ncu_case "$b" "$c" 1 "$out/stages/${name}_sec_source.csv" --kernel-name "regex:$re" --section SourceCounters --csv --page source --print-source cuda,sass
  ncu_case "$b" "$c" 1 "$out/stages/${name}_set_full.csv" "${f[@]}" --set full
  ncu_case "$b" "$c" 1 "$out/stages/${name}_one_metric.csv" "${f[@]}" --metrics gpu__time_duration.sum
done

fi

# 3. A filter that matches nothing, and a discovery pass (durations only, every case).
if want misc; then
mkdir -p "$out/misc"
ncu_case copy copy 1 "$out/misc/no_match.log" --kernel-name regex:.*does_not_exist.* --csv --page raw --metrics gpu__time_duration.sum
ncu_case hgemm . 2 "$out/misc/discovery_hgemm.csv" --csv --page raw --metrics gpu__time_duration.sum
# Without --log-file: CSV interleaved with the program's own stdout.
KPROF_PROFILE=1 KPROF_CASE=copy KPROF_LAUNCH_COUNT=2 "$NCU" --clock-control none --profile-from-start off \
  --kernel-name regex:.*copy.* --csv --page raw --metrics gpu__time_duration.sum "$bin/copy" \
  > "$out/misc/stdout_capture.txt" 2>&1
log "stdout_capture.txt: rc=$?"

fi

# 4. What this ncu knows: sets, sections, and every metric of the chip.
if want meta; then
mkdir -p "$out/misc"
"$NCU" --list-sets > "$out/misc/list_sets.txt" 2>&1
"$NCU" --list-sections > "$out/misc/list_sections.txt" 2>&1
"$NCU" --query-metrics --chip gh100 > "$out/misc/query_metrics_gh100.txt" 2>&1
"$NCU" --query-metrics-mode all --query-metrics --chip gh100 > "$out/misc/query_metrics_all_gh100.txt" 2>&1
fi
log "done"
