#!/usr/bin/env bash
# Profiles the third-party archives made by build.sh (beside this script) on a GPU machine
# without cargo: cudarc's own examples and the Python targets (examples/third-party/cudarc,
# examples/python; their EXPECTED.md says what each profile should show).
#
# usage: run.sh KPROF_BIN DEST OUT
#
#   KPROF_BIN  the cargo-kprof binary (build.sh copies it into DEST)
#   DEST       the folder build.sh filled: <name>.tar per target
#   OUT        must not exist; receives, per run, <run>.log (everything kprof printed, then
#              `exit=N wall_ms=M`), the unpacked workspace with its profile directories
#              under ws/<run>/workspace/profile/ (unpacked executables removed at the end),
#              summary.txt (one line per run), environment.txt, and finally
#              third-party-results.tar.gz holding all of that
#
# Runs, in this order (each `cargo-kprof kprof run --archive DEST/<archive>.tar
# --workspace-remap OUT/ws/<run> --timeout STAGE_TIMEOUT_S`):
#   matmul, matmul-window, sin_kernel, sin_kernel-exact, triton_softmax, torch_layernorm
#                              the archives as built (auto stages)
#   matmul-discover            matmul-kernel with no hint: discovery, then the window fitted
#   matmul-source              matmul.tar with --stages basic,source (NVRTC without line info:
#                              the source stage runs again, SASS only)
#   matmul-skip5               matmul.tar with --launch-skip 5 (a set window is kept: exit 6,
#                              with the launch counts and the flags that reach the kernel)
#   matmul-nothere             matmul.tar with --kernel nothere (exit 6, every kernel counted)
#   gemm-several               the demo's hgemm bench with --kernel gemm (two kernels match:
#                              the costliest is chosen and named)
#   hgemm_tiled-exact          the demo's hgemm bench with --kernel =hgemm_tiled
#   triton_softmax-override    triton_softmax.tar with --stages memory --launch-count 2
#                              (run-time overrides: only the memory stage, launches 21-22)
#   torch_layernorm-dryrun     torch_layernorm.tar with --dry-run (prints commands.sh, runs
#                              no ncu)
#   plain-triton_softmax, plain-torch_layernorm
#                              the Python scripts without ncu, from the unpacked workspace:
#                              their own per-launch time and their result check
# Clock control: every archive was made with --clock-control none (`run --archive` takes it
# from the archived plan). A failing run does not stop the others.
#
# Environment (optional): STAGE_TIMEOUT_S (kprof --timeout, default 240), RUN_TIMEOUT_S
# (outer limit of one run, default 480), KEEP_BIN=1 keeps the unpacked executables.
set -u -o pipefail

usage() { echo "usage: run.sh KPROF_BIN DEST OUT" >&2; exit 2; }
[ $# = 3 ] || usage
kprof="$1"
dest="$2"
out="$3"
[ -x "$kprof" ] || { echo "run.sh: $kprof is not an executable" >&2; exit 2; }
[ -d "$dest" ] || { echo "run.sh: $dest is not a folder" >&2; exit 2; }
[ -e "$out" ] && { echo "run.sh: $out exists; give a new OUT" >&2; exit 2; }
kprof="$(cd "$(dirname "$kprof")" && pwd)/$(basename "$kprof")"
dest="$(cd "$dest" && pwd)"
mkdir -p "$out/ws" || exit 1
out="$(cd "$out" && pwd)"
export PATH="/usr/local/cuda/bin:$PATH"
STAGE_TIMEOUT_S="${STAGE_TIMEOUT_S:-240}"
RUN_TIMEOUT_S="${RUN_TIMEOUT_S:-480}"
summary="$out/summary.txt"
: > "$summary"

now_ms() { date +%s%3N; }
secs() { printf '%d.%d' "$(($1 / 1000))" "$((($1 % 1000) / 100))"; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "--- $kprof --version"
  "$kprof" --version
  echo "--- ncu --version"
  ncu --version
  echo "--- nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  echo "--- python3, torch, triton"
  python3 -c 'import sys, torch, triton; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda); print("triton", triton.__version__)'
  echo "--- cc --version (Triton builds its launcher with it)"
  cc --version 2>&1 | head -n 1
  echo "--- uname -a"
  uname -a
  echo "--- archives"
  ls -l "$dest"
} > "$out/environment.txt" 2>&1

# facts WS: profiled launches per raw CSV and the verdict of each profile under WS.
facts() {
  python3 - "$1" <<'PY'
import csv, glob, json, os, sys
ws = sys.argv[1]
dirs = sorted(d for d in glob.glob(os.path.join(ws, "workspace", "profile", "*"))
              if os.path.isdir(d) and not os.path.basename(d).startswith(".")
              and os.path.basename(d) != "baselines")
if not dirs:
    print("profile=none")
for d in dirs:
    launches = []
    for raw in sorted(glob.glob(os.path.join(d, "details", "[0-9][0-9]_*_raw.csv"))):
        try:
            lines = open(raw, errors="replace").read().splitlines()
            start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
            n = len(list(csv.reader(lines[start + 2:])))
        except (OSError, StopIteration):
            n = "?"
        launches.append(f"{os.path.basename(raw)[3:-8]}:{n}")
    verdict = "none"
    try:
        k = json.load(open(os.path.join(d, "details", "bottleneck_decision.json")))["kernels"][0]
        lim = k.get("limiter") or {}
        verdict = f"{k.get('classification')}/{lim.get('id', '-')}/{k.get('confidence')}"
    except (OSError, ValueError, KeyError, IndexError):
        pass
    print(f"launches={','.join(launches) or 'none'} verdict={verdict} profile={os.path.relpath(d, ws)}")
PY
}

# run_kprof RUN ARCHIVE [EXTRA...]: one `kprof run --archive`, logged and summarised.
run_kprof() {
  local run=$1 archive="$dest/$2.tar" ws="$out/ws/$1" log="$out/$1.log" t0 rc wall
  shift 2
  if [ ! -f "$archive" ]; then
    echo "$run: no $archive" > "$log"
    printf '%-26s exit=-   skipped: no %s\n' "$run" "${archive##*/}" | tee -a "$summary"
    return
  fi
  t0=$(now_ms)
  timeout -k 10 "$RUN_TIMEOUT_S" "$kprof" kprof run --archive "$archive" --workspace-remap "$ws" \
    --timeout "$STAGE_TIMEOUT_S" "$@" > "$log" 2>&1
  rc=$?
  wall=$(($(now_ms) - t0))
  echo "exit=$rc wall_ms=$wall" >> "$log"
  printf '%-26s exit=%-3s wall=%6ss %s\n' "$run" "$rc" "$(secs "$wall")" \
    "$(facts "$ws" | tr '\n' ' ')" | tee -a "$summary"
}

# run_plain RUN SCRIPT: a Python script without ncu, in the workspace unpacked for SCRIPT.
run_plain() {
  local run=$1 script=$2 dir="$out/ws/${2%.py}/workspace" log="$out/$1.log" t0 rc wall
  if [ ! -f "$dir/$script" ]; then
    echo "$run: no $dir/$script (the archive did not unpack it)" > "$log"
    printf '%-26s exit=-   skipped: %s was not unpacked\n' "$run" "$script" | tee -a "$summary"
    return
  fi
  t0=$(now_ms)
  (cd "$dir" && timeout -k 10 "$RUN_TIMEOUT_S" python3 "$script") > "$log" 2>&1
  rc=$?
  wall=$(($(now_ms) - t0))
  echo "exit=$rc wall_ms=$wall" >> "$log"
  printf '%-26s exit=%-3s wall=%6ss %s\n' "$run" "$rc" "$(secs "$wall")" \
    "$(grep -E 'per launch|per call|MISMATCH' "$log" | head -n 1)" | tee -a "$summary"
}

run_kprof matmul matmul
run_kprof matmul-window matmul-window
run_kprof sin_kernel sin_kernel
run_kprof sin_kernel-exact sin_kernel-exact
run_kprof triton_softmax triton_softmax
run_kprof torch_layernorm torch_layernorm
run_kprof matmul-discover matmul-discover
run_kprof matmul-source matmul --stages basic,source
run_kprof matmul-skip5 matmul --launch-skip 5
run_kprof matmul-nothere matmul --kernel nothere
run_kprof gemm-several gemm-several
run_kprof hgemm_tiled-exact hgemm_tiled-exact
run_kprof triton_softmax-override triton_softmax --stages memory --launch-count 2
run_kprof torch_layernorm-dryrun torch_layernorm --dry-run
run_plain plain-triton_softmax triton_softmax.py
run_plain plain-torch_layernorm torch_layernorm.py

if [ "${KEEP_BIN:-0}" != 1 ]; then
  rm -rf "$out"/ws/*/bin
fi
tmp="$(dirname "$out")/.$(basename "$out").tar.gz"
if tar -czf "$tmp" -C "$(dirname "$out")" "$(basename "$out")" && mv "$tmp" "$out/third-party-results.tar.gz"; then
  echo "run.sh: everything is in $out/third-party-results.tar.gz" >&2
else
  echo "run.sh: could not write $out/third-party-results.tar.gz" >&2
fi
echo
cat "$summary"
