#!/usr/bin/env python3
"""Replay passes per launch of the metric sets the planner may merge, measured on one
program: what `MERGED_PASSES_H200` (src/ncu/stages/merged.rs) and the planner's pricing
read. ncu shares passes between metrics, so a union costs less than the sum of its
parts, and only a measurement says how much.

usage: scripts/gpu/pass_sets.py KPROF ARCHIVE OUT_DIR [PROGRAM]

  KPROF     a cargo-kprof binary
  ARCHIVE   an archive of harness programs (`cargo kprof archive --workspace ...`)
  OUT_DIR   a new folder; the table is OUT_DIR/pass-sets.md, the facts pass-sets.json
  PROGRAM   a substring of the program to measure (default: the first batch planned)

The dry run of `--stages basic,memory,compute,occupancy,counters` (KPROF_PLAN=fixed)
gives each stage's batched command; each set below is that program's basic command with
the union of the sets' `--metrics` (and `--section SourceCounters` where `+SC`), run once
under ncu with `--clock-control none` as archived. A set's passes are the
`profiler__replayer_passes` of its first launch row; its wall is the ncu process's.
"""
import csv
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cost_programs import split  # noqa: E402  (`cd DIR && env K=V ... NCU ARGS` into its parts)

SETS = [
    "basic",
    "basic+SC",
    "counters",
    "SC",
    "basic+memory+compute+occupancy",
    "basic+memory+compute+occupancy+SC",
    "basic+memory+compute+occupancy+counters",
    "basic+memory+compute+occupancy+counters+SC",
    "memory+compute+occupancy+counters",
]


def without(argv, flags_with_value, flags):
    out, skip = [], 0
    for a in argv:
        if skip:
            skip -= 1
        elif a in flags_with_value:
            skip = 1
        elif a not in flags:
            out.append(a)
    return out


def first_passes(page):
    lines = open(page, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return None
    rows = list(csv.reader(lines[start:]))
    col = rows[0].index("profiler__replayer_passes")
    return next((int(float(r[col])) for r in rows[2:] if len(r) > col and r[col]), None)


def main():
    kprof, archive, out = sys.argv[1:4]
    keep = sys.argv[4] if len(sys.argv) > 4 else ""
    if os.path.exists(out):
        sys.exit(f"{out} exists: give a new folder")
    os.makedirs(out)
    kprof, archive, out = map(os.path.abspath, (kprof, archive, out))
    dry = os.path.join(out, "dry.jsonl")
    with open(dry, "w") as f:
        subprocess.call([kprof, "kprof", "run", "--archive", archive, "--workspace-remap", os.path.join(out, "dry"),
                         "--stages", "basic,memory,compute,occupancy,counters", "--dry-run",
                         "--message-format", "json"], stdout=f, stderr=subprocess.STDOUT,
                        env=dict(os.environ, KPROF_PLAN="fixed"))
    batches = [json.loads(l) for l in open(dry) if l.startswith("{") and '"dry-run-batch"' in l]
    batch = next(b for b in batches if keep in b["program"])
    commands = {s["stage"]: s["command"] for s in batch["stages"]}
    cwd, env, basic = split(commands["basic"])
    metrics = {}
    for stage, command in commands.items():
        argv = split(command)[2]
        if "--metrics" in argv:
            metrics[stage] = argv[argv.index("--metrics") + 1].split(",")
    bare = without(basic, {"--section", "--export", "--metrics"}, {"--force-overwrite"})
    rows = []
    for name in SETS:
        parts = name.split("+")
        union = []
        for p in parts:
            for m in metrics.get(p, []):
                if m not in union:
                    union.append(m)
        what = (["--metrics", ",".join(union)] if union else []) + (["--section", "SourceCounters"] if "SC" in parts else [])
        argv = list(bare)
        at = argv.index("--csv")
        argv = argv[:at] + what + argv[at:]
        page = os.path.join(out, f"{name}.csv")
        argv[argv.index("--log-file") + 1] = page
        began = time.monotonic()
        with open(os.path.join(out, f"{name}.log"), "w") as f:
            rc = subprocess.call(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
        wall = time.monotonic() - began
        passes = first_passes(page) if os.path.exists(page) else None
        rows.append({"set": name, "passes": passes, "wall_s": round(wall, 2), "rc": rc})
        print(f"{name}: {passes} passes, {wall:.1f} s (exit {rc})", flush=True)
    table = ["| set | passes per launch | wall |", "|---|---|---|"]
    table += [f"| {r['set']} | {r['passes']} | {r['wall_s']} s |" for r in rows]
    open(os.path.join(out, "pass-sets.md"), "w").write(f"program: {batch['program']}\n\n" + "\n".join(table) + "\n")
    json.dump({"program": batch["program"], "sets": rows}, open(os.path.join(out, "pass-sets.json"), "w"), indent=1)
    print("\n".join(table))


if __name__ == "__main__":
    main()
