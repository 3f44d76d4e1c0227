#!/usr/bin/env bash
# What `cargo kprof`'s default `auto` stages cost against one `ncu --set full` run of the
# same launch, measured side by side, kernel after kernel, in one run on a GPU machine.
#
# usage: scripts/gpu/cost-bench.sh KPROF_BIN ARCHIVE_DIR WORK_DIR [KERNEL...]
#
#   KPROF_BIN    the cargo-kprof binary (built elsewhere; no cargo needed here)
#   ARCHIVE_DIR  holds auto-<kernel>.tar per kernel, written on the build machine by
#                `cargo kprof archive --manifest-path examples/demo/Cargo.toml --kernel K -o auto-K.tar`
#   WORK_DIR     must not exist; each kernel's profile is unpacked and written under it
#   KERNEL...    default: every auto-*.tar in ARCHIVE_DIR
#
# Per kernel:
#   1. `cargo-kprof kprof run --archive auto-K.tar` (basic, then the follow-up the rules
#      choose), timed as a whole: unpacking, preflight, every ncu run, the analysis.
#   2. The basic stage's ncu line from that profile's commands.sh with its `--metrics`
#      list replaced by `--set full` (same program, same profiling window, same filter,
#      same clock control), timed as a whole.
# Replay passes are the `profiler__replayer_passes` column of each raw CSV (ncu does not
# print pass lines with --csv); kprof's overhead is its wall time minus the wall time of
# the ncu processes it ran (run_manifest.yaml, per stage). Ratios are auto / full.
# Targets: passes <= 0.6; wall <= 1.0, and <= 0.7 for kernels of 10 ms or more.
#
# scripts/gpu/cost-bench.sh --programs KPROF_BIN ARCHIVE WORK_DIR [PROGRAM...] measures
# per program instead (scripts/gpu/cost_programs.py): one SOL-only and one `--set full`
# run over all its kernels against `auto` with and without the planner and its history.
set -uo pipefail
if [ "${1:-}" = --programs ]; then
  shift
  exec python3 "$(dirname "$0")/cost_programs.py" "$@"
fi

kprof="${1:?usage: cost-bench.sh KPROF_BIN ARCHIVE_DIR WORK_DIR [KERNEL...]}"
archives="${2:?usage: cost-bench.sh KPROF_BIN ARCHIVE_DIR WORK_DIR [KERNEL...]}"
work="${3:?usage: cost-bench.sh KPROF_BIN ARCHIVE_DIR WORK_DIR [KERNEL...]}"
shift 3
[ -e "$work" ] && { echo "cost-bench: $work exists; give a new WORK_DIR" >&2; exit 2; }
mkdir -p "$work"
work="$(cd "$work" && pwd)"
kernels=("$@")
if [ ${#kernels[@]} = 0 ]; then
  for a in "$archives"/auto-*.tar; do k="${a##*/auto-}"; kernels+=("${k%.tar}"); done
fi
command -v ncu >/dev/null || export PATH=/usr/local/cuda/bin:$PATH

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Sum of profiler__replayer_passes over every launch row of the given raw CSVs.
passes_of() {
  python3 - "$@" <<'PY'
import csv, sys
total = 0
for path in sys.argv[1:]:
    lines = open(path, errors="replace").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    col = rows[0].index("profiler__replayer_passes")
    total += sum(int(float(r[col])) for r in rows[2:] if len(r) > col and r[col])
print(total)
PY
}

# Field of run_manifest.yaml: the sum of the stages' wall_ms, and the chosen follow-up.
manifest_facts() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
walls = [int(m) for m in re.findall(r"^\s+wall_ms: (\d+)", text, re.M)]
stages = re.findall(r"^- stage: (\S+)|^  - stage: (\S+)", text, re.M)
names = [a or b for a, b in stages]
duration = re.search(r"^status: (\S+)", text, re.M)
print(sum(walls), "+".join(names), duration.group(1) if duration else "?")
PY
}

# The kernel's duration from the basic stage (ms), to tell short kernels from long ones.
duration_ms_of() {
  python3 - "$1" <<'PY'
import csv, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
rows = list(csv.reader(lines[start:]))
col = rows[0].index("gpu__time_duration.sum")
unit = rows[1][col]
scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3, "second": 1e3}[unit]
vals = sorted(float(r[col].replace(",", "")) * scale for r in rows[2:])
print(f"{vals[len(vals) // 2]:.3f}")
PY
}

# One throw-away ncu start, so the first kernel does not pay the machine's cold start.
ncu --version >/dev/null 2>&1

table="$work/cost.md"
{
  echo "| kernel | duration | stages (auto) | passes auto | passes full | passes ratio | wall auto | wall full | wall ratio | target | kprof overhead |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} > "$table"
status=0
for k in "${kernels[@]}"; do
  archive="$archives/auto-$k.tar"
  [ -f "$archive" ] || { echo "cost-bench: no $archive" >&2; status=1; continue; }
  t0=$(now_ms)
  "$kprof" kprof run --archive "$archive" --workspace-remap "$work/auto-$k" > "$work/auto-$k.log" 2>&1
  rc=$?
  t1=$(now_ms)
  auto_wall=$((t1 - t0))
  manifest="$(find "$work/auto-$k" -name run_manifest.yaml -path '*/profile/*' | head -n 1)"
  if [ "$rc" != 0 ] || [ -z "$manifest" ]; then
    echo "cost-bench: kprof failed on $k (exit $rc), see $work/auto-$k.log" >&2
    status=1
    continue
  fi
  dir="$(dirname "$manifest")"
  read -r ncu_ms stages _ < <(manifest_facts "$manifest")
  auto_passes=$(passes_of "$dir"/details/0[1-9]_*_raw.csv)
  duration=$(duration_ms_of "$dir/details/01_basic_raw.csv")

  full_csv="$work/full-$k.csv"
  line="$(grep -- '--log-file [^ ]*01_basic_raw.csv' "$dir/commands.sh" | head -n 1)"
  line="$(printf '%s\n' "$line" | sed -E "s#--metrics [^ ]+#--set full#; s#--log-file [^ ]+#--log-file '$full_csv'#")"
  printf '%s\n' "$line" > "$work/full-$k.command"
  t0=$(now_ms)
  sh -c "$line" > "$work/full-$k.log" 2>&1
  frc=$?
  t1=$(now_ms)
  full_wall=$((t1 - t0))
  if [ "$frc" != 0 ] || [ ! -s "$full_csv" ]; then
    echo "cost-bench: ncu --set full failed on $k (exit $frc), see $work/full-$k.log" >&2
    status=1
    continue
  fi
  full_passes=$(passes_of "$full_csv")
  row="$(python3 - "$k" "$duration" "$stages" "$auto_passes" "$full_passes" "$auto_wall" "$full_wall" "$ncu_ms" <<'PY'
import sys
k, dur, stages, ap, fp, aw, fw, ncu = sys.argv[1:]
dur, ap, fp, aw, fw, ncu = float(dur), int(ap), int(fp), int(aw), int(fw), int(ncu)
pr, wr = ap / fp, aw / fw
wall_target = 0.7 if dur >= 10.0 else 1.0
ok = pr <= 0.6 and wr <= wall_target
print(f"| {k} | {dur:.3f} ms | {stages} | {ap} | {fp} | {pr:.2f} | {aw / 1e3:.2f} s | {fw / 1e3:.2f} s | {wr:.2f} | "
      f"passes <= 0.6, wall <= {wall_target}: {'met' if ok else 'MISSED'} | {aw - ncu} ms |")
PY
)"
  echo "$row" >> "$table"
  echo "$row"
  case "$row" in *MISSED*) status=1 ;; esac
done
echo
cat "$table"
exit "$status"
