#!/usr/bin/env bash
# Records, on a GPU machine, the two facts the A/B check's batching and its counter rule
# rest on, from the zoo's bench executables (scripts/gpu/zoo/build.sh DEST):
#
#   1. ncu's own peak rates of the units a count's change is priced at
#      (`<counter>.sum.peak_sustained` per unit cycle, and each unit's cycles per second):
#      peaks_raw.csv, one launch of `stream_scale_f4`. Should ncu refuse the list, each
#      metric is asked for alone (peaks_<metric>.csv) and the refusals kept in peaks.log.
#   2. The source page of a batched ncu run: the seven kernels of the `compute` bench in one
#      run (`--page source`, as the source stage asks for it), and the same page of two of
#      them alone, to check that splitting the batched page gives each kernel's own page:
#      source_batched_compute.csv, source_alone_<kernel>.csv.
#
# usage: scripts/gpu/record-unit-peaks.sh ZOO_BIN_DIR OUT_DIR
# Runs ncu with --clock-control none; needs /usr/local/cuda/bin/ncu (or ncu on PATH).
set -uo pipefail
bin="$(cd "${1:?usage: record-unit-peaks.sh ZOO_BIN_DIR OUT_DIR}" && pwd)"
out="${2:?usage: record-unit-peaks.sh ZOO_BIN_DIR OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export PATH="/usr/local/cuda/bin:$PATH"
ncu --version >"$out/ncu_version.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$out/gpu.txt" 2>&1

metrics=(
  smsp__inst_executed.sum.peak_sustained
  smsp__thread_inst_executed.sum.peak_sustained
  smsp__cycles_elapsed.avg.per_second
  l1tex__t_sectors.sum.peak_sustained
  l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum.peak_sustained
  l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum.peak_sustained
  l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.peak_sustained
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum.peak_sustained
  l1tex__cycles_elapsed.avg.per_second
  lts__t_sectors.sum.peak_sustained
  lts__cycles_elapsed.avg.per_second
  dram__bytes_read.sum.peak_sustained
  dram__bytes_write.sum.peak_sustained
  dram__cycles_elapsed.avg.per_second
  gpc__cycles_elapsed.avg.per_second
)
joined="$(IFS=,; echo "${metrics[*]}")"
run_peaks() { # FILE METRICS
  (cd "$out" && env KPROF_CASE='^stream_scale_f4/' KPROF_LAUNCH_COUNT=1 KPROF_PROFILE=1 \
    ncu --clock-control none --profile-from-start off --kernel-name 'regex:.*stream_scale_f4.*' \
    --metrics "$2" --csv --page raw --log-file "$1" "$bin/memory")
}
echo "+ ncu --metrics ${joined} (stream_scale_f4)" >"$out/peaks.log"
if ! run_peaks "$out/peaks_raw.csv" "$joined" >>"$out/peaks.log" 2>&1; then
  echo "the list was refused; one metric at a time" >>"$out/peaks.log"
  for m in "${metrics[@]}"; do
    run_peaks "$out/peaks_$m.csv" "$m" >>"$out/peaks.log" 2>&1 || echo "refused: $m" >>"$out/peaks.log"
  done
fi

kernels=(fp32_fma_chains chacha_rounds fp64_dfma_chains sfu_chains hmma_loop smem_byte_sum lane_switch)
cases=""; names=""
for k in "${kernels[@]}"; do
  cases="${cases:+$cases|}(?:^$k/)"; names="${names:+$names|}(?:.*$k.*)"
done
source_page() { # FILE CASE_REGEX NAME_REGEX
  {
    echo "+ cd $out && env KPROF_CASE='$2' KPROF_LAUNCH_COUNT=1 KPROF_PROFILE=1 ncu --clock-control none --profile-from-start off --kernel-name 'regex:$3' --section SourceCounters --csv --page source --print-source cuda,sass --log-file $1 $bin/compute"
    (cd "$out" && env KPROF_CASE="$2" KPROF_LAUNCH_COUNT=1 KPROF_PROFILE=1 \
      ncu --clock-control none --profile-from-start off --kernel-name "regex:$3" \
      --section SourceCounters --csv --page source --print-source cuda,sass --log-file "$1" "$bin/compute")
  } >>"$out/source.log" 2>&1
  echo "exit $?" >>"$out/source.log"
}
source_page "$out/source_batched_compute.csv" "$cases" "$names"
for k in fp32_fma_chains hmma_loop; do
  source_page "$out/source_alone_$k.csv" "^$k/" ".*$k.*"
done
ls -la "$out"
