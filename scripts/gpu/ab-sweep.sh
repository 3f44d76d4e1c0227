#!/usr/bin/env bash
# The A/A sweep and the known changes of the A/B check, on a GPU machine without cargo.
#
#   ab-sweep.sh KPROF ARCHIVES_DIR OUT_DIR CASE...
#
# Runs `scripts/gpu/ab-run.sh KPROF ARCHIVES_DIR OUT_DIR CASE...` (each CASE checked from
# ARCHIVES_DIR/ab-<case>.tar; see that script), then keeps, of each check's folders, what
# the decision rule and its replay read, and drops the rest (the unpacked executables and
# sources, pictures, the raw pages of the diagnosis stages):
#
#   <case>.log                                   the command, its JSON lines, exit and wall time
#   <case>/{head,base}/workspace/profile/<kernel>_<time>/  per kernel and side:
#       commands.sh, run_manifest.yaml, comparison/ (the head's verdict, rounds, report),
#       details/09_counters_raw.csv, details/rounds/, details/source_hotspots.csv,
#       details/bottleneck_decision.json
#   <case>/{head,base}/workspace/profile/.batch_*/commands.sh  the batched ncu runs
#
# The archives are made on the build machine: `cargo kprof archive --base HEAD` of a whole
# workspace for an A/A sweep, `scripts/gpu/ab-history.sh` for the known changes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
kprof=${1:?usage: ab-sweep.sh KPROF ARCHIVES_DIR OUT_DIR CASE...}
archives=${2:?}
out=${3:?}
shift 3
export PATH="/usr/local/cuda/bin:$PATH"
"$here/ab-run.sh" "$kprof" "$archives" "$out" "$@"
python3 - "$out" "$@" <<'PY'
import os, re, shutil, sys
out, cases = sys.argv[1], sys.argv[2:]
keep = re.compile(
    r"^(head|base)/(workspace/)?profile/[^/]+/("
    r"commands\.sh|run_manifest\.yaml|comparison/.*|details/09_counters_raw\.csv|"
    r"details/rounds/.*|details/source_hotspots\.csv|details/bottleneck_decision\.json)$"
    r"|^(head|base)/(workspace/)?profile/\.batch_[^/]+/commands\.sh$"
)
for case in cases:
    root = os.path.join(out, case)
    if not os.path.isdir(root):
        continue
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for f in filenames:
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if os.path.islink(path) or not keep.match(rel):
                os.remove(path)
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if os.path.isdir(p) and not os.path.islink(p) and not os.listdir(p):
                os.rmdir(p)
PY
