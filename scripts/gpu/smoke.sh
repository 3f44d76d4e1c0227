#!/usr/bin/env bash
# The end-to-end runs that show a change of the driver layer kept the pipeline's behaviour
# on a real GPU, from archives built elsewhere (no cargo needed here):
#
#   smoke.sh KPROF ARCHIVES_DIR OUT_DIR
#
#   1. ARCHIVES_DIR/demo.tar (`cargo kprof archive --workspace` of examples/demo): every
#      demo kernel profiled with `run --archive`, batched, with --message-format json, so
#      the stage events and verdicts land in OUT_DIR/demo.jsonl (people's text in
#      demo.err);
#   2. the A/B checks of ARCHIVES_DIR/ab-{aa,bank,insts}.tar (`scripts/gpu/ab-history.sh`):
#      an A/A check, a bank-conflict change and more instructions behind DRAM, each with
#      --message-format json through ab-run.sh.
#
# Each run's exit status and wall time go to OUT_DIR/summary.txt.
set -u
kprof=${1:?usage: smoke.sh KPROF ARCHIVES_DIR OUT_DIR}
archives=${2:?}
out=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
summary=$out/summary.txt
: >"$summary"

t0=$(date +%s.%N)
"$kprof" kprof run --archive "$archives/demo.tar" --workspace-remap "$out/demo" --message-format json \
  >"$out/demo.jsonl" 2>"$out/demo.err"
rc=$?
t1=$(date +%s.%N)
echo "demo: exit $rc, wall $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s" | tee -a "$summary"

"$here/ab-run.sh" "$kprof" "$archives" "$out/ab" aa:1-1 bank insts | tee -a "$summary"
