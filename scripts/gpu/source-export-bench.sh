#!/usr/bin/env bash
# How to get the source page: its own ncu run (what kprof does), or one `-o` report of
# the basic stage with the SourceCounters section added, exported twice (`--page raw`
# and `--page source`)? Measured side by side, per program, on the batched commands
# kprof itself plans.
#
# usage: scripts/gpu/source-export-bench.sh KPROF ARCHIVE OUT_DIR
#   KPROF    a cargo-kprof binary
#   ARCHIVE  an archive from `cargo kprof archive` (harness programs)
#   OUT_DIR  a new folder; its summary is OUT_DIR/summary.txt
#
# For each batch kprof's dry run plans with `--stages basic,source` (one program, its
# kernels together), in this order:
#   A  the two planned commands as they are: basic (`--page raw`), then source
#      (`--section SourceCounters --page source`);
#   B  the basic command with `--section SourceCounters -o REPORT` in place of its page
#      options, then `ncu -i REPORT --csv --page raw` and `ncu -i REPORT --csv --page
#      source --print-source cuda,sass`.
# Each step's wall time and exit status go to OUT_DIR/steps.tsv, the pages to
# OUT_DIR/pages/, and per batch the line counts of both source pages, so that the two
# ways are seen to give the same page. Needs python3; ncu from PATH (put
# /usr/local/cuda/bin first). Clocks are never changed (`--clock-control none` as kprof
# plans it).
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
kprof=$(realpath "$1"); archive=$(realpath "$2"); out=$3
[ ! -e "$out" ] || { echo "$out exists: give a new folder" >&2; exit 2; }
mkdir -p "$out/pages"
out=$(realpath "$out")

"$kprof" kprof run --archive "$archive" --workspace-remap "$out/dry" --dry-run \
  --stages basic,source --message-format json >"$out/dry-run.jsonl" 2>"$out/dry-run.err"

KPROF_BENCH_DIR="$(cd "$(dirname "$0")" && pwd)" PYTHONDONTWRITEBYTECODE=1 python3 - "$out" <<'PY'
import json, os, sys

out = sys.argv[1]
batches = []
for line in open(os.path.join(out, "dry-run.jsonl")):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("reason") == "dry-run-batch" or ev.get("event") == "dry-run-batch":
        batches.append(ev)
if not batches:
    sys.exit("no dry-run-batch event in dry-run.jsonl: see dry-run.err")

steps = open(os.path.join(out, "steps.tsv"), "w")
steps.write("batch\tkernels\tway\tstep\tseconds\trc\n")
summary = []

# The command splitter and the timed run, shared with the per-program cost bench.
sys.path.insert(0, os.environ["KPROF_BENCH_DIR"])
from cost_programs import run, split  # noqa: E402

for n, b in enumerate(batches):
    stages = {s["stage"]: s["command"] for s in b["stages"]}
    if "basic" not in stages or "source" not in stages:
        continue
    name = f"batch{n}"
    kernels = len(b["kernels"])
    rows = {}
    # A: the two planned runs.
    for stage in ("basic", "source"):
        cwd, env, argv = split(stages[stage])
        logf = argv[argv.index("--log-file") + 1]
        # A dry run plans the batch's folder without making it.
        os.makedirs(os.path.dirname(logf), exist_ok=True)
        secs, rc = run(argv, cwd, env, os.path.join(out, "pages", f"{name}_A_{stage}.log"))
        if os.path.exists(logf):
            os.replace(logf, os.path.join(out, "pages", f"{name}_A_{stage}.csv"))
        rows[("A", stage)] = (secs, rc)
    # B: one report, exported twice.
    cwd, env, argv = split(stages["basic"])
    ncu = argv[0]
    at = argv.index("--log-file")
    program = argv[at + 2:]
    opts = argv[1:at]
    kept = []
    i = 0
    while i < len(opts):
        if opts[i] == "--csv":
            i += 1
        elif opts[i] == "--page":
            i += 2
        else:
            kept.append(opts[i])
            i += 1
    rep = os.path.join(out, "pages", f"{name}_B")
    collect = [ncu] + kept + ["--section", "SourceCounters", "-o", rep, "-f"] + program
    rows[("B", "collect")] = run(collect, cwd, env, os.path.join(out, "pages", f"{name}_B_collect.log"))
    rows[("B", "export-raw")] = run(
        [ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "raw", "--log-file",
         os.path.join(out, "pages", f"{name}_B_raw.csv")], cwd, env,
        os.path.join(out, "pages", f"{name}_B_export_raw.log"))
    rows[("B", "export-source")] = run(
        [ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "source", "--print-source", "cuda,sass",
         "--log-file", os.path.join(out, "pages", f"{name}_B_source.csv")], cwd, env,
        os.path.join(out, "pages", f"{name}_B_export_source.log"))
    for (way, step), (secs, rc) in rows.items():
        steps.write(f"{name}\t{kernels}\t{way}\t{step}\t{secs:.2f}\t{rc}\n")
    def lines(p):
        p = os.path.join(out, "pages", p)
        return sum(1 for _ in open(p, errors="replace")) if os.path.exists(p) else -1
    a = sum(s for (w, _), (s, _) in rows.items() if w == "A")
    bt = sum(s for (w, _), (s, _) in rows.items() if w == "B")
    summary.append(
        f"{name} ({os.path.basename(str(b.get('program', '?')))}, {kernels} kernels): "
        f"A {a:.1f} s (basic {rows[('A','basic')][0]:.1f} + source {rows[('A','source')][0]:.1f}), "
        f"B {bt:.1f} s (collect {rows[('B','collect')][0]:.1f} + raw {rows[('B','export-raw')][0]:.1f} "
        f"+ source {rows[('B','export-source')][0]:.1f}), B/A {bt / a:.2f}; "
        f"source page lines A {lines(name + '_A_source.csv')} B {lines(name + '_B_source.csv')}; "
        f"exit codes {sorted(set(rc for _, rc in rows.values()))}")
steps.close()
ta = tb = 0.0
for line in open(os.path.join(out, "steps.tsv")).readlines()[1:]:
    f = line.rstrip("\n").split("\t")
    if f[2] == "A":
        ta += float(f[4])
    else:
        tb += float(f[4])
summary.append(f"all batches: A {ta:.1f} s, B {tb:.1f} s, B/A {tb / ta:.2f}" if ta else "no batch ran")
open(os.path.join(out, "summary.txt"), "w").write("\n".join(summary) + "\n")
print("\n".join(summary))
PY
