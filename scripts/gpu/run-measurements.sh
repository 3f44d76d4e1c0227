#!/usr/bin/env bash
# Runs, on a GPU machine without cargo, what pack-measurements.sh packed, from the
# repository root:
#   census     the tracer's GPU test, `doctor`, and census-speed.sh over burn, candle and
#              the zoo's six benches (the census by tracing against ncu's census);
#   hot-lines  source_metrics.py: the hot lines' cost four ways on the hgemm pair (two
#              rounds) and on the zoo's six programs (one round, with the passes of each
#              way on the smaller bases).
#   hot-lines-runs
#              the per-program cost bench (cost-bench.sh --programs) over the hgemm pair
#              twice, side by side: as kprof collects the hot lines by default (the
#              SourceCounters section) and with KPROF_HOT_LINES=sampling (the PC samples
#              and executed counts alone); each run's verdicts are in its programs.json.
#
# usage: scripts/gpu/run-measurements.sh PACK OUT [census] [hot-lines] [hot-lines-runs]
#        (default: census and hot-lines; each part fits one 10-minute GPU call)
#
# OUT (new) receives each part's console (census-speed.txt, sm-hgemm.txt, sm-zoo.txt),
# one tarball per part (census-speed.tar.gz, source-metrics.tar.gz; unpacked programs and
# ncu reports left out), and date.txt, ncu.txt, nvidia-smi.txt, env.txt. The packed parts
# are unpacked into a temporary folder. Clocks are never changed (`--clock-control none`,
# as archived). Each part has its own time limit (CENSUS_TIMEOUT_S, default 480;
# HOT_LINES_TIMEOUT_S, default 540), so that one stuck program cannot take the others'
# time.
set -uo pipefail

pack="${1:?usage: run-measurements.sh PACK OUT [census] [hot-lines]}"
out="${2:?usage: run-measurements.sh PACK OUT [census] [hot-lines]}"
shift 2
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(census hot-lines)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
pack="$(cd "$pack" && pwd)"
[ -e "$out" ] && { echo "run-measurements: $out exists: give a new OUT" >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export PATH=/usr/local/cuda/bin:$PATH
work="$(mktemp -d)"
cd "$work" || exit 1
xz -dc "$pack/cargo-kprof.xz" > cargo-kprof && chmod +x cargo-kprof

date -u > "$out/date.txt"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
ncu --version > "$out/ncu.txt" 2>&1
cupti=/usr/local/cuda/lib64/libcupti.so
[ -e "$cupti" ] || cupti="$(find /usr/local/cuda/ -name 'libcupti.so*' 2>/dev/null | sort | head -n 1)"
wheels="$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null || true)"
libs=/usr/local/cuda/lib64
if [ -n "$wheels" ]; then
  for d in "$wheels"/nvidia/*/lib; do libs="$libs:$d"; done
fi
# Where no CUPTI is found, kprof's own search runs (and says what it looked for).
cupti_env=()
[ -n "$cupti" ] && cupti_env=("KPROF_CUPTI=$cupti")
echo "${cupti_env[*]} LD_LIBRARY_PATH=$libs" > "$out/env.txt"
status=0

for part in "${parts[@]}"; do
  case "$part" in
    census)
      for t in bins zoo; do xz -dc "$pack/$t.tar.xz" | tar x; done
      for t in burn candle; do xz -dc "$pack/$t.tar.xz" > "$t.tar"; done
      (cd bins/tracer-tests/deps && env "${cupti_env[@]}" timeout 60 ./tracer-gpu-tests --exact \
        a_traced_program_s_launches_are_in_its_trace) > "$out/tracer-test.txt" 2>&1 || status=1
      env "${cupti_env[@]}" ./cargo-kprof kprof doctor > "$out/doctor.txt" 2>&1
      env "${cupti_env[@]}" NCU_CENSUS_LAUNCHES=300 STAGE_TIMEOUT_S=120 LD_LIBRARY_PATH="$libs" \
        timeout "${CENSUS_TIMEOUT_S:-480}" "$repo/scripts/gpu/census-speed.sh" ./cargo-kprof \
        bins/libkprof_tracer.so census burn.tar candle.tar --zoo zoo > "$out/census-speed.txt" 2>&1 || status=1
      cp census/census-speed.tar.gz "$out/" 2>/dev/null ||
        tar czf "$out/census-speed.tar.gz" --exclude='*/workspace/bin/*' census
      ;;
    hot-lines)
      for t in hgemm zooarch; do xz -dc "$pack/$t.tar.xz" > "$t.tar"; done
      limit="${HOT_LINES_TIMEOUT_S:-540}"
      timeout "$((limit * 2 / 5))" python3 "$repo/scripts/gpu/source_metrics.py" ./cargo-kprof hgemm.tar \
        sm-hgemm --rounds 2 > "$out/sm-hgemm.txt" 2>&1 || status=1
      timeout "$((limit * 3 / 5))" python3 "$repo/scripts/gpu/source_metrics.py" ./cargo-kprof zooarch.tar \
        sm-zoo --passes > "$out/sm-zoo.txt" 2>&1 || status=1
      tar czf "$out/source-metrics.tar.gz" --exclude='*.ncu-rep' --exclude='*/bin' sm-hgemm sm-zoo
      ;;
    hot-lines-runs)
      [ -e hgemm.tar ] || xz -dc "$pack/hgemm.tar.xz" > hgemm.tar
      for way in section sampling; do
        if [ "$way" = sampling ]; then export KPROF_HOT_LINES=sampling; else unset KPROF_HOT_LINES; fi
        timeout 270 "$repo/scripts/gpu/cost-bench.sh" --programs ./cargo-kprof hgemm.tar "cb-$way" \
          > "$out/cb-$way.txt" 2>&1 || status=1
      done
      unset KPROF_HOT_LINES
      tar czf "$out/hot-lines-runs.tar.gz" --exclude='*.ncu-rep' --exclude='*/bin' cb-section cb-sampling
      ;;
    *)
      echo "run-measurements: unknown part $part (census, hot-lines, hot-lines-runs)" >&2
      status=2
      ;;
  esac
done
rm -rf "$work"
ls -la "$out" >&2
exit "$status"
