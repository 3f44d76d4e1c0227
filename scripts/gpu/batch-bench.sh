#!/usr/bin/env bash
# Batched against per-kernel profiling, measured side by side in one run on a GPU machine:
# the same archive of several harness kernels of one program run with `--no-batch` (one
# ncu run per kernel and stage) and batched (one ncu run per stage), and, as the yardstick,
# one `ncu --set full` run per kernel.
#
# usage: scripts/gpu/batch-bench.sh KPROF_BIN ARCHIVE WORK_DIR
#
#   KPROF_BIN  the cargo-kprof binary (built elsewhere; no cargo needed here)
#   ARCHIVE    `cargo kprof archive --manifest-path examples/zoo/Cargo.toml --kernel K1 --kernel K2 ...
#              --clock-control none -o compute.tar` (kernels of one bench program)
#   WORK_DIR   must not exist
#
# Prints, and writes to WORK_DIR/bench.txt:
#   - the per-kernel run's breakdown: ncu runs and their wall time, of which ncu's start-up
#     and the program's set-up (an ncu run whose filter matches nothing, against the program
#     alone), the replay (the rest), and kprof's own time (run_manifest.yaml);
#   - wall times and ratios: batched / per-kernel, batched / sum of the `--set full` runs;
#   - per kernel: the verdicts of both runs, and every metric of every page compared
#     (equal, within 2 %, beyond 2 %).
set -uo pipefail

kprof="${1:?usage: batch-bench.sh KPROF_BIN ARCHIVE WORK_DIR}"
archive="${2:?usage: batch-bench.sh KPROF_BIN ARCHIVE WORK_DIR}"
work="${3:?usage: batch-bench.sh KPROF_BIN ARCHIVE WORK_DIR}"
[ -e "$work" ] && { echo "batch-bench: $work exists; give a new WORK_DIR" >&2; exit 2; }
mkdir -p "$work/full"
work="$(cd "$work" && pwd)"
command -v ncu >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

run_timed() { # NAME CMD...: runs CMD, output to WORK/NAME.log, prints wall ms
  local name=$1 t0
  shift
  t0=$(now_ms)
  "$@" > "$work/$name.log" 2>&1
  echo "exit=$?" >> "$work/$name.log"
  echo $(( $(now_ms) - t0 ))
}

wall_unbatched=$(run_timed unbatched "$kprof" kprof run --archive "$archive" --workspace-remap "$work/unbatched" --no-batch)
wall_batched=$(run_timed batched "$kprof" kprof run --archive "$archive" --workspace-remap "$work/batched")

# One `--set full` run per kernel: the basic stage's line of its per-kernel profile with
# the metric list replaced by `--set full`, the log file moved under WORK/full.
full_total=0
for dir in "$work"/unbatched/workspace/profile/*/; do
  k="$(basename "$dir")"
  line="$(grep -m1 -- '--log-file .*01_basic_raw.csv' "$dir/commands.sh")"
  cmd="$(python3 - "$line" "$work/full/$k.csv" <<'PY'
import re, shlex, sys
line, log = sys.argv[1], sys.argv[2]
line = re.sub(r"--metrics \S+", "--set full", line)
line = re.sub(r"--log-file \S+", "--log-file " + shlex.quote(log), line)
print(line)
PY
)"
  echo "$cmd" > "$work/full/$k.command"
  ms=$(run_timed "full/$k" bash -c "$cmd")
  full_total=$((full_total + ms))
done

# Start-up and set-up: the first kernel's basic line with a filter that matches nothing,
# and the program alone with the same environment.
profiles=("$work"/unbatched/workspace/profile/*/)
first="${profiles[0]%/}"
line="$(grep -m1 -- '--log-file .*01_basic_raw.csv' "$first/commands.sh")"
empty="$(printf '%s' "$line" | sed -E "s/--kernel-name '[^']*'/--kernel-name regex:^kprof_matches_nothing\$/; s#--log-file [^ ]+#--log-file $work/empty.csv#")"
program_alone="$(printf '%s' "$line" | sed -E 's# [^ ]*ncu .* --log-file [^ ]+ # #')"
wall_empty=$(run_timed empty bash -c "$empty")
wall_program=$(run_timed program bash -c "$program_alone")

python3 - "$work" "$wall_unbatched" "$wall_batched" "$full_total" "$wall_empty" "$wall_program" <<'PY' | tee "$work/bench.txt"
import csv, glob, json, os, re, sys
work = sys.argv[1]
unb, bat, full, empty, program = (int(x) for x in sys.argv[2:7])

def manifests(run):
    out = {}
    for d in sorted(glob.glob(os.path.join(work, run, "workspace", "profile", "*", ""))):
        m = open(os.path.join(d, "run_manifest.yaml")).read()
        name = re.search(r"^kernel: (.+)$", m, re.M).group(1).strip()
        walls = [int(x) for x in re.findall(r"^\s+wall_ms: (\d+)", m, re.M)]
        over = int(re.search(r"^kprof_overhead_ms: (\d+)", m, re.M).group(1))
        out[name] = (d, walls, over)
    return out

def verdict(d):
    try:
        k = json.load(open(os.path.join(d, "details", "bottleneck_decision.json")))["kernels"][0]
        return f"{k['classification']}/{(k.get('limiter') or {}).get('id', '-')}"
    except Exception as e:
        return f"none ({e.__class__.__name__})"

def page(path):
    lines = open(path, errors="replace").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    return rows[0], rows[2:]

def num(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None

a, b = manifests("unbatched"), manifests("batched")
runs = sum(len(w) for _, w, _ in a.values())
ncu_wall = sum(sum(w) for _, w, _ in a.values())
over = sum(o for _, _, o in a.values())
startup = max(empty - program, 0)
print(f"per-kernel run of {len(a)} kernels: {unb} ms wall, {runs} ncu runs taking {ncu_wall} ms")
print(f"  ncu start-up about {startup} ms per run ({startup * runs} ms in all); the program's set-up about {program} ms per run ({program * runs} ms)")
print(f"  replay and the rest of the ncu runs: {max(ncu_wall - empty * runs, 0)} ms; kprof's own time: {over} ms (the rest of the wall: unpacking, preflight)")
print(f"batched: {bat} ms wall, {sum(len(w) for _, w, _ in b.values())} stage records")
print(f"sum of per-kernel --set full runs: {full} ms")
print(f"ratio batched / per-kernel: {bat / unb:.3f}")
print(f"ratio batched / sum of --set full: {bat / full:.3f}")
print()
print("| kernel | per-kernel verdict | batched verdict | metrics equal | within 2 % | beyond 2 % |")
print("|---|---|---|---|---|---|")
for k in sorted(a):
    da = a[k][0]
    db = b.get(k, (None,))[0]
    if db is None:
        print(f"| {k} | {verdict(da)} | missing | | | |")
        continue
    eq = near = 0
    far = []
    for pa in sorted(glob.glob(os.path.join(da, "details", "0[1-9]_*_raw.csv"))):
        pb = os.path.join(db, "details", os.path.basename(pa))
        if not os.path.exists(pb):
            far.append(os.path.basename(pa) + " missing")
            continue
        ha, ra = page(pa)
        hb, rb = page(pb)
        for col, name in enumerate(ha):
            if col < 11 or name not in hb:
                continue
            va = [num(r[col]) for r in ra]
            vb = [num(r[hb.index(name)]) for r in rb]
            for x, y in zip(va, vb):
                if x is None or y is None:
                    continue
                if x == y:
                    eq += 1
                elif abs(x - y) <= 0.02 * max(abs(x), abs(y)):
                    near += 1
                else:
                    far.append(f"{name} {x:g}/{y:g}")
    print(f"| {k} | {verdict(da)} | {verdict(db)} | {eq} | {near} | {len(far)}: {'; '.join(far[:6])} |")
PY
