#!/usr/bin/env bash
# Compares the harness' own timing with ncu's gpu__time_duration for every demo case.
#
# usage: scripts/gpu/harness_vs_ncu.sh DIR_OF_BENCH_BINARIES OUTDIR
#
# For each bench binary in DIR (copy fma tiny hgemm occupancy reduce, as staged by
# stage-binaries.sh): two standalone runs with KPROF_RESULT (run-to-run stability), then,
# per case, one run under
#   ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum
#       --csv --page raw --log-file ...
# with KPROF_PROFILE=1 KPROF_LAUNCH_COUNT=5 KPROF_CASE=^<case>$. ncu flushes caches before
# each profiled launch, so the harness' cold median is the number to compare. Prints the
# table (also saved as OUTDIR/table.txt) and tars everything into OUTDIR/harness_vs_ncu.tar.gz.
#
# Environment: NCU (default: ncu on PATH), KPROF_TIMEOUT (default 5 s per measurement here),
# BENCHES (default "copy fma tiny hgemm occupancy reduce").
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"

bin="${1:?usage: harness_vs_ncu.sh DIR_OF_BENCH_BINARIES OUTDIR}"
out="${2:?usage: harness_vs_ncu.sh DIR_OF_BENCH_BINARIES OUTDIR}"
ncu="${NCU:-ncu}"
export KPROF_TIMEOUT="${KPROF_TIMEOUT:-5}"
mkdir -p "$out"
bin="$(cd "$bin" && pwd)"
out="$(cd "$out" && pwd)"

{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
    "$ncu" --version 2>&1 | tail -n 1
} >"$out/environment.txt"

status=0
for bench in ${BENCHES:-copy fma tiny hgemm occupancy reduce}; do
    exe="$bin/$bench"
    if [ ! -x "$exe" ]; then
        echo "harness_vs_ncu: $exe is missing; skipping $bench" >&2
        status=1
        continue
    fi
    for run in 1 2; do
        echo "harness_vs_ncu: $bench run $run" >&2
        if ! KPROF_RESULT="$out/$bench.run$run.json" "$exe" >"$out/$bench.run$run.txt" 2>&1; then
            echo "harness_vs_ncu: $bench run $run failed; see $out/$bench.run$run.txt" >&2
            status=1
        fi
    done
    if ! "$exe" --list >"$out/$bench.cases.txt" 2>"$out/$bench.list.err"; then
        echo "harness_vs_ncu: $bench --list failed" >&2
        status=1
        continue
    fi
    i=0
    while IFS= read -r case; do
        [ -n "$case" ] || continue
        i=$((i + 1))
        regex="^$(python3 -c 'import re,sys; print(re.escape(sys.argv[1]))' "$case")\$"
        log="$out/$bench.case$i.ncu.csv"
        echo "harness_vs_ncu: $case under ncu" >&2
        if ! KPROF_PROFILE=1 KPROF_LAUNCH_COUNT=5 KPROF_CASE="$regex" \
            "$ncu" --profile-from-start off --clock-control none \
            --metrics gpu__time_duration.sum --csv --page raw --log-file "$log" \
            "$exe" >"$out/$bench.case$i.ncu.stdout.txt" 2>&1; then
            echo "harness_vs_ncu: ncu run for $case failed; see $out/$bench.case$i.ncu.stdout.txt" >&2
            status=1
        fi
        printf '%s\t%s\n' "$case" "$log" >>"$out/ncu_logs.tsv"
    done <"$out/$bench.cases.txt"
done

python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, io, json, os, statistics, sys

out = sys.argv[1]

def harness(bench_json, case):
    try:
        doc = json.load(open(bench_json))
    except (OSError, ValueError):
        return None
    for c in doc.get("cases", []):
        if c["name"] == case and c["mode"] == "cold":
            return c
    return None

def ncu_times(log):
    try:
        text = open(log, errors="replace").read()
    except OSError:
        return []
    lines = [l for l in text.splitlines() if not l.startswith("==")]
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, data = rows[0], rows[2:]  # rows[1] is the units row
    col = header.index("gpu__time_duration.sum")
    times = []
    for r in data:
        if len(r) > col and r[col].strip():
            times.append(float(r[col].replace(",", "")))
    return times

def fmt(ns):
    return "-" if ns is None else f"{ns / 1e3:.2f}"

rows = []
tsv = os.path.join(out, "ncu_logs.tsv")
entries = [l.rstrip("\n").split("\t") for l in open(tsv)] if os.path.exists(tsv) else []
for case, log in entries:
    bench = os.path.basename(log).split(".case")[0]
    r1 = harness(os.path.join(out, f"{bench}.run1.json"), case)
    r2 = harness(os.path.join(out, f"{bench}.run2.json"), case)
    times = ncu_times(log)
    ncu = statistics.median(times) if times else None
    h1 = r1["median_ns"] if r1 else None
    h2 = r2["median_ns"] if r2 else None
    noise = f"{100 * r1['rel_noise']:.2f}%" if r1 else "-"
    ratio = h1 / ncu if (h1 and ncu) else None
    within = "-" if ratio is None else ("yes" if abs(ratio - 1) <= 0.05 else "no")
    rows.append([case, fmt(h1), fmt(h2), noise, fmt(ncu), str(len(times)),
                 "-" if ratio is None else f"{ratio:.3f}", within])

head = ["case", "harness run1 (us)", "run2 (us)", "rel noise", "ncu median (us)",
        "ncu launches", "harness/ncu", "within 5%"]
widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
for r in [head] + rows:
    print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
print("harness: cold-mode medians (L2 flushed per sample); ncu: median gpu__time_duration.sum "
      "of the launches in the profiling window (expected 5 per case)")
PY

# Archive outside OUTDIR first, so tar never reads the directory it is writing into.
staging="$(mktemp -d)"
tar -czf "$staging/harness_vs_ncu.tar.gz" -C "$out" --exclude=harness_vs_ncu.tar.gz . &&
    mv "$staging/harness_vs_ncu.tar.gz" "$out/"
rm -rf "$staging"
echo "harness_vs_ncu: everything is in $out/harness_vs_ncu.tar.gz" >&2
exit "$status"
