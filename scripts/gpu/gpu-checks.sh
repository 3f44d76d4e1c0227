#!/usr/bin/env bash
# Everything to run on the GPU machine, from the repository root, with binaries staged by
# stage-binaries.sh:
#   1. the harness' GPU tests (harness-gpu-tests, one test at a time),
#   2. harness_vs_ncu.sh over the demo benches,
#   3. a source-page ncu run of hgemm_tiled, to see NVRTC line info mapped to source lines.
#
# usage: scripts/gpu/gpu-checks.sh [BIN_DIR (.carry/bin)] [OUTDIR (kprof-gpu-out)]
# Logs and results go to OUTDIR; the exit status is non-zero if any step failed.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-.carry/bin}"
out="${2:-kprof-gpu-out}"
mkdir -p "$out"
status=0

echo "== harness GPU tests" >&2
if ! "$bin/harness-gpu-tests" --test-threads=1 --nocapture >"$out/gpu-tests.log" 2>&1; then
    echo "gpu-checks: GPU tests failed; see $out/gpu-tests.log" >&2
    status=1
fi
grep -E "^test |^skipped|test result" "$out/gpu-tests.log" >&2

echo "== harness vs ncu" >&2
"$here/harness_vs_ncu.sh" "$bin" "$out/harness_vs_ncu" || status=1

echo "== ncu source page of hgemm_tiled" >&2
if ! KPROF_PROFILE=1 KPROF_CASE=hgemm_tiled ncu --profile-from-start off --clock-control none \
    --section SourceCounters --page source --csv --print-source cuda,sass \
    --log-file "$out/hgemm_tiled.source.csv" "$bin/hgemm" >"$out/hgemm_tiled.source.stdout.txt" 2>&1; then
    echo "gpu-checks: the source-page run failed; see $out/hgemm_tiled.source.stdout.txt" >&2
    status=1
fi
grep -m 3 '"File Path"' "$out/hgemm_tiled.source.csv" >&2 || echo "gpu-checks: no File Path rows" >&2
exit "$status"
