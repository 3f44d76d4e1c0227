#!/usr/bin/env python3
"""What the hot lines cost, collected four ways in the planner's first run, side by side.

usage: scripts/gpu/source_metrics.py KPROF ARCHIVE OUT [--rounds N] [--passes] [PROGRAM...]

  KPROF     a cargo-kprof binary
  ARCHIVE   an archive of harness programs (`cargo kprof archive ...`)
  OUT       a new folder: summary.txt, steps.tsv, the section file, and per program and
            way its report's pages and `cargo-kprof kprof import` of them
  --rounds  how many times each way runs per program (default 1), in turn
  --passes  also, on the first program, each way on two smaller bases (collect and the raw
            import only, for the passes): basic's metrics alone (the first run without
            the planner) and the duration alone (the source stage run on its own)
  PROGRAM   substrings of the program names to keep (default: every batch of the archive)

Per program, the dry run's first command (without history: basic merged with memory,
compute and occupancy, over all its kernels, the same window and filter), collected with
`-o REPORT`, then imported twice (`--page raw` for the passes, `--page source
--print-source cuda,sass` for the hot lines), in these ways:

  none       the first run's metrics alone (what the run costs without hot lines)
  section    plus `--section SourceCounters` (what kprof collects today)
  sampling   plus the PC sampling groups only: `group:smsp__pcsamp_warp_stall_reasons`
             and `group:smsp__pcsamp_warp_stall_reasons_not_issued` (the source page's
             samples and stall columns, which rank the hot lines)
  executed   sampling plus `inst_executed` (the per-instruction counts the SASS pattern
             rules read)

Each way's page pair is then imported (`cargo-kprof kprof import`), so that its hot lines
and verdicts can be held to `section`'s. Printed per program and way: the collect wall, the
imports' walls, the replay passes per launch (the raw page's profiler__replayer_passes), the
source page's columns. Clocks are never changed (`--clock-control none`, as archived).
"""
import csv
import glob
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cost_programs import split  # noqa: E402  (`cd DIR && env K=V ... NCU ARGS...` into (cwd, env, argv))

SAMPLING = ["group:smsp__pcsamp_warp_stall_reasons", "group:smsp__pcsamp_warp_stall_reasons_not_issued"]
WAYS = {
    "none": ([], []),
    "section": (["--section", "SourceCounters"], []),
    "sampling": ([], SAMPLING),
    "executed": ([], SAMPLING + ["inst_executed"]),
}


def run(argv, cwd=None, env=None, log=None):
    began = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
        f.flush()
        rc = subprocess.call(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    return round(time.monotonic() - began, 2), rc


def bare(command):
    """The first command without its page, log file, source section and report:
    (cwd, env, ncu, options, metrics, program)."""
    cwd, env, argv = split(command)
    at = argv.index("--log-file")
    program = argv[at + 2:]
    opts, metrics, i = [], [], 1
    while i < at:
        a = argv[i]
        if a in ("--section", "--export", "--page"):
            i += 2
        elif a == "--metrics":
            metrics = argv[i + 1].split(",")
            i += 2
        elif a in ("--csv", "--force-overwrite"):
            i += 1
        else:
            opts.append(a)
            i += 1
    return cwd, env, argv[0], opts, metrics, program


def passes_and_columns(raw, source):
    passes = None
    if os.path.exists(raw):
        lines = open(raw, errors="replace").read().splitlines()
        start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
        if start is not None:
            rows = list(csv.reader(lines[start:]))
            if "profiler__replayer_passes" in rows[0]:
                col = rows[0].index("profiler__replayer_passes")
                per = [int(float(r[col])) for r in rows[2:] if len(r) > col and r[col]]
                passes = {"launches": len(per), "per_launch": sorted(set(per)), "sum": sum(per)}
    columns = None
    if os.path.exists(source):
        for line in open(source, errors="replace"):
            if line.startswith('"Line No"') or line.startswith('"Address"') or line.startswith('"#"'):
                columns = next(csv.reader([line]))
                break
    return passes, columns


def bases(kprof, archive, out, batch, facts):
    """Each way on basic's metrics alone and on the duration alone, for the passes."""
    fixed = os.path.join(out, "dry-fixed.jsonl")
    run([kprof, "kprof", "run", "--archive", archive, "--workspace-remap", os.path.join(out, "dry-fixed"),
         "--dry-run", "--message-format", "json"], env=dict(os.environ, KPROF_PLAN="fixed"), log=fixed)
    found = [json.loads(l) for l in open(fixed) if l.startswith("{") and '"dry-run-batch"' in l]
    name = os.path.basename(batch["program"]).rsplit("-", 1)[0]
    same = [b for b in found if os.path.basename(b["program"]).rsplit("-", 1)[0] == name]
    if not same:
        return
    basic = next(s["command"] for s in same[0]["stages"] if s["stage"] == "basic")
    cwd, env, ncu, opts, metrics, program = bare(basic)
    d = os.path.join(out, "bases")
    os.makedirs(d, exist_ok=True)
    table = facts.setdefault("_passes", {})
    for base, listed in [("basic", metrics), ("duration", ["gpu__time_duration.sum"])]:
        for way, (extra, more) in WAYS.items():
            tag = f"{name}-{base}-{way}"
            rep, raw = os.path.join(d, tag), os.path.join(d, f"{tag}_raw.csv")
            argv = [ncu] + opts + extra + ["--metrics", ",".join(listed + more), "-o", rep, "-f"] + program
            collect, rc = run(argv, cwd, env, os.path.join(d, f"{tag}.log"))
            run([ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "raw", "--log-file", raw], cwd, env,
                os.path.join(d, f"{tag}_raw.log"))
            passes, _ = passes_and_columns(raw, "")
            table[f"{base}+{way}"] = {"collect_s": collect, "rc": rc, "passes": passes}
            print(f"passes {name} {base}+{way}: {passes and passes['per_launch']} ({collect} s)", flush=True)
            if os.path.exists(rep + ".ncu-rep"):
                os.remove(rep + ".ncu-rep")


def main():
    args = sys.argv[1:]
    rounds = 1
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at:at + 2]
    kprof, archive, out = map(os.path.abspath, args[:3])
    passes_too = "--passes" in args
    if passes_too:
        args.remove("--passes")
    keep = args[3:]
    if os.path.exists(out):
        sys.exit(f"{out} exists: give a new folder")
    os.makedirs(out)
    section = glob.glob("/usr/local/cuda/nsight-compute*/sections/SourceCounters.section") + glob.glob(
        os.path.expanduser("~/Documents/NVIDIA Nsight Compute/*/Sections/SourceCounters.section"))
    if section:
        subprocess.call(["cp", section[0], os.path.join(out, "SourceCounters.section")])
    dry = os.path.join(out, "dry.jsonl")
    run([kprof, "kprof", "run", "--archive", archive, "--workspace-remap", os.path.join(out, "dry"),
         "--dry-run", "--message-format", "json"], log=dry)
    batches = [json.loads(l) for l in open(dry) if l.startswith("{") and '"dry-run-batch"' in l]
    batches = [b for b in batches if not keep or any(k in b["program"] for k in keep)]
    steps = open(os.path.join(out, "steps.tsv"), "w")
    steps.write("program\tkernels\tround\tway\tcollect_s\traw_s\tsource_s\trc\tpasses\n")
    facts = {}
    for b in batches:
        name = os.path.basename(b["program"]).rsplit("-", 1)[0]
        first = next(s["command"] for s in b["stages"] if "basic" in s["stage"].split("+"))
        cwd, env, ncu, opts, metrics, program = bare(first)
        for r in range(rounds):
            for way, (extra, more) in WAYS.items():
                tag = f"{name}-{way}-{r}"
                d = os.path.join(out, name)
                os.makedirs(d, exist_ok=True)
                rep = os.path.join(d, tag)
                argv = [ncu] + opts + extra + ["--metrics", ",".join(metrics + more), "-o", rep, "-f"] + program
                collect, rc = run(argv, cwd, env, os.path.join(d, f"{tag}.log"))
                raw, src = os.path.join(d, f"{tag}_raw.csv"), os.path.join(d, f"{tag}_source.csv")
                raw_s, rc_raw = run([ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "raw", "--log-file", raw],
                                    cwd, env, os.path.join(d, f"{tag}_raw.log"))
                src_s, rc_src = (0.0, None)
                if way != "none":
                    src_s, rc_src = run([ncu, "-i", rep + ".ncu-rep", "--csv", "--page", "source",
                                         "--print-source", "cuda,sass", "--log-file", src], cwd, env,
                                        os.path.join(d, f"{tag}_source.log"))
                passes, columns = passes_and_columns(raw, src)
                if r == 0 and way != "none" and os.path.exists(src):
                    run([kprof, "kprof", "import", "--raw", raw, "--source", src, "--output-dir",
                         os.path.join(d, f"import-{way}"), "--message-format", "json"],
                        log=os.path.join(d, f"import-{way}.jsonl"))
                if os.path.exists(rep + ".ncu-rep"):
                    os.remove(rep + ".ncu-rep")
                codes = [rc, rc_raw, rc_src]
                steps.write(f"{name}\t{len(b['kernels'])}\t{r}\t{way}\t{collect}\t{raw_s}\t{src_s}\t{codes}\t"
                            f"{passes and passes['per_launch']}\n")
                steps.flush()
                facts.setdefault(name, {}).setdefault(way, []).append(
                    {"collect_s": collect, "raw_s": raw_s, "source_s": src_s, "rc": codes, "passes": passes,
                     "columns": columns})
    if passes_too and batches:
        bases(kprof, archive, out, batches[0], facts)
    steps.close()
    json.dump(facts, open(os.path.join(out, "facts.json"), "w"), indent=1)
    lines = []
    for name, ways in facts.items():
        if name.startswith("_"):
            continue
        mean = {w: sum(x["collect_s"] + x["source_s"] for x in v) / len(v) for w, v in ways.items()}
        base = mean.get("section") or 1.0
        cells = ", ".join(
            f"{w} {mean[w]:.1f} s ({(ways[w][0]['passes'] or {}).get('per_launch')} passes)" for w in ways)
        lines.append(f"{name}: {cells}; sampling/section {mean.get('sampling', 0) / base:.2f}, "
                     f"executed/section {mean.get('executed', 0) / base:.2f}")
    open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
