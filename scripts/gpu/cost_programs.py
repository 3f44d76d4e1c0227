#!/usr/bin/env python3
"""What `auto` costs per program against what an expert would run by hand, side by side.

usage: scripts/gpu/cost-bench.sh --programs KPROF ARCHIVE WORK_DIR [PROGRAM...]

  KPROF     a cargo-kprof binary
  ARCHIVE   an archive of harness programs (`cargo kprof archive --workspace ...`)
  WORK_DIR  a new folder; the table is WORK_DIR/programs.md, the facts WORK_DIR/programs.json
  PROGRAM   substrings of the program names to keep (default: every batch of the archive)

In one run, on the GPU machine:
  1. The dry run's batched `basic` command of every program (one ncu run over all its
     kernels, the same window and filter) with its metrics replaced by
     `--section SpeedOfLight` (the cheapest run that reads the SOL numbers) and by
     `--set full` (every section in one batched run), each timed.
  2. `cargo-kprof kprof run --archive` three times over those programs' kernels:
       fixed  KPROF_PLAN=fixed: basic, source, one run per chosen follow-up stage;
       fresh  the planner, with an empty cost history (KPROF_COST_HISTORY);
       again  the planner, with the history `fresh` wrote.
     Per program, a run's wall is the sum of its distinct ncu runs' wall times (from the
     profiles' run_manifest.yaml), its passes the replay passes per launch of its stages
     summed over the kernels, the source stage counted apart.
  3. The ratios the planner is held to, and whether each kernel's verdict (class,
     limiter, confidence) is the same in the three runs; then, for the short-kernel
     programs together (longest kernel under 10 ms) and for the others, the lines
     `auto/full = X.XX`, `auto/sol = Y.YY` (fresh, source stage included) and
     `again/full = Z.ZZ`, and each program's dry-run estimate against its fresh wall
     (`dry` is the dry run without history, `dry again` the one after `fresh`).
Clocks are never changed (`--clock-control none`, as archived).
"""
import json
import os
import re
import shlex
import subprocess
import sys
import time


def run(argv, cwd=None, env=None, log=None):
    began = time.monotonic()
    with open(log, "w") if log else open(os.devnull, "w") as f:
        rc = subprocess.call(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    return time.monotonic() - began, rc


def split(command):
    """`cd DIR && env K=V ... NCU ARGS...` into (cwd, env, argv)."""
    words = shlex.split(command)
    cwd = None
    if words[0] == "cd":
        cwd, words = words[1], words[3:]
    env = dict(os.environ)
    if words[0] == "env":
        words = words[1:]
        while "=" in words[0] and not words[0].startswith("/"):
            k, v = words[0].split("=", 1)
            env[k] = v
            words = words[1:]
    return cwd, env, words


def page_facts(path):
    """Replay passes summed over a raw page's launches, and its longest launch (ms)."""
    import csv
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return 0, None
    rows = list(csv.reader(lines[start:]))
    col = rows[0].index("profiler__replayer_passes")
    passes = sum(int(float(r[col])) for r in rows[2:] if len(r) > col and r[col])
    longest = None
    if "gpu__time_duration.sum" in rows[0]:
        d = rows[0].index("gpu__time_duration.sum")
        scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "nsecond": 1e-6, "ms": 1.0, "msecond": 1.0}.get(rows[1][d], 1.0)
        longest = max(float(r[d].replace(",", "")) * scale for r in rows[2:] if len(r) > d and r[d])
    return passes, longest


def by_hand(batch, what, out, name):
    """The batch's first command (basic, or basic merged with follow-ups) with its metrics
    replaced by `what` and without the source section and report it adds for the hot
    lines (what an expert runs by hand), timed."""
    basic = next(s["command"] for s in batch["stages"] if "basic" in s["stage"].split("+"))
    cwd, env, argv = split(basic)
    bare, skip = [], 0
    for a in argv:
        if skip:
            skip -= 1
        elif a in ("--section", "--export"):
            skip = 1
        elif a != "--force-overwrite":
            bare.append(a)
    argv = bare
    at = argv.index("--metrics")
    argv = argv[:at] + what + argv[at + 2:]
    page = os.path.join(out, f"{name}.csv")
    argv[argv.index("--log-file") + 1] = page
    secs, rc = run(argv, cwd, env, os.path.join(out, f"{name}.log"))
    passes, longest = page_facts(page) if os.path.exists(page) else (None, None)
    return {"wall_s": round(secs, 2), "rc": rc, "passes": passes, "longest_ms": longest}


def manifests(root):
    for dirpath, _, files in os.walk(root):
        if "run_manifest.yaml" in files and "/.batch_" not in dirpath:
            yield dirpath, open(os.path.join(dirpath, "run_manifest.yaml")).read()


def kprof_run(kprof, archive, remap, env, log, kernels):
    selection = [a for k in kernels for a in ("-k", k)]
    secs, rc = run([kprof, "kprof", "run", "--archive", archive, "--workspace-remap", remap,
                    "--message-format", "json"] + selection, env=env, log=log)
    verdicts = {}
    for line in open(log, errors="replace"):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("reason") == "analysed":
            for k in ev["kernels"]:
                verdicts[k["kernel"]] = f'{k["classification"]}/{k.get("limiter")}/{k["confidence"]}'
    stages = {}  # kernel -> [(stage, command, wall_ms, passes per launch)]
    for d, text in manifests(remap):
        kernel = re.search(r"^kernel: (.*)$", text, re.M).group(1).strip("'\"")
        rows = []
        for block in re.split(r"\n- stage: ", text.split("\nstages:", 1)[1])[0:]:
            m = re.search(r"^(?:- stage: )?(\S+)", block.strip())
            cmd = re.search(r"command: (.*)", block)
            wall = re.search(r"wall_ms: (\d+)", block)
            passes = re.findall(r"^  - (\d+)$", block, re.M)
            if m and wall:
                rows.append((m.group(1), cmd.group(1) if cmd else "", int(wall.group(1)),
                             int(passes[0]) if passes else 0))
        stages[kernel] = rows
    return {"wall_s": round(secs, 2), "rc": rc, "verdicts": verdicts, "stages": stages}


def program_cost(result, kernels):
    """Distinct ncu runs of the program's kernels: wall (s), the source runs' wall (s),
    passes without the source stage, and the source stage's (5 per launch on the H200 when
    it runs on its own, none when its page is imported)."""
    seen = {}
    source_wall = {}
    passes = source = 0
    for k in kernels:
        mine = set()
        for stage, cmd, wall, p in result["stages"].get(k, []):
            seen[(cmd, wall)] = wall
            if stage == "source":
                source_wall[(cmd, wall)] = wall
            if (cmd, wall) in mine:
                continue  # one merged run gives a kernel several pages
            mine.add((cmd, wall))
            if stage == "source":
                # Imported from the first run's report: no replay of its own (that run's
                # source section is in its passes).
                source += 0 if "--import" in cmd else 5
            else:
                passes += p
    return sum(seen.values()) / 1000.0, sum(source_wall.values()) / 1000.0, passes, source


def main():
    kprof, archive, out = sys.argv[1:4]
    keep = sys.argv[4:]
    if os.path.exists(out):
        sys.exit(f"{out} exists: give a new folder")
    os.makedirs(out)
    kprof, archive, out = map(os.path.abspath, (kprof, archive, out))
    dry = os.path.join(out, "dry.jsonl")
    run([kprof, "kprof", "run", "--archive", archive, "--workspace-remap", os.path.join(out, "dry"),
         "--dry-run", "--message-format", "json"], log=dry)
    batches = [json.loads(l) for l in open(dry) if l.startswith("{") and '"dry-run-batch"' in l]
    batches = [b for b in batches if not keep or any(k in b["program"] for k in keep)]
    subprocess.call(["ncu", "--version"], stdout=subprocess.DEVNULL)
    facts = {"programs": {}}
    for b in batches:
        name = os.path.basename(b["program"]).rsplit("-", 1)[0]
        facts["programs"][name] = {
            "kernels": b["kernels"],
            "sol": by_hand(b, ["--section", "SpeedOfLight"], out, f"{name}-sol"),
            "full": by_hand(b, ["--set", "full"], out, f"{name}-full"),
        }
    base = dict(os.environ)
    history = os.path.join(out, "cost_history.jsonl")
    runs = {}
    for mode, extra in [("fixed", {"KPROF_PLAN": "fixed"}), ("fresh", {"KPROF_COST_HISTORY": history}),
                        ("again", {"KPROF_COST_HISTORY": history})]:
        env = dict(base, **extra)
        kernels = [k for b in batches for k in b["kernels"]]
        runs[mode] = kprof_run(kprof, archive, os.path.join(out, mode), env, os.path.join(out, f"{mode}.jsonl"),
                               kernels if keep else [])
    facts["runs"] = {m: {"wall_s": r["wall_s"], "rc": r["rc"], "verdicts": r["verdicts"]} for m, r in runs.items()}
    again_dry = os.path.join(out, "dry-again.jsonl")
    run([kprof, "kprof", "run", "--archive", archive, "--workspace-remap", os.path.join(out, "dry-again"),
         "--dry-run", "--message-format", "json"], env=dict(base, KPROF_COST_HISTORY=history), log=again_dry)
    estimates = {}
    for label, path in [("dry", dry), ("dry again", again_dry)]:
        for l in open(path):
            if l.startswith("{") and '"dry-run-batch"' in l:
                b = json.loads(l)
                name = os.path.basename(b["program"]).rsplit("-", 1)[0]
                estimates.setdefault(name, {})[label] = b.get("total_ms")
    table = ["| program | kernels | longest | SOL | full (passes) | auto fixed | auto fresh | auto again "
             "| of which source | fresh/SOL | fresh/full | again/SOL | again/full | passes fresh/full | "
             "targets (source stage apart) | same verdicts |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, p in facts["programs"].items():
        cost = {m: program_cost(runs[m], p["kernels"]) for m in runs}
        p["auto"] = {m: {"wall_s": round(c[0], 2), "source_wall_s": round(c[1], 2), "passes": c[2],
                         "source_passes": c[3]} for m, c in cost.items()}
        same = all(len({runs[m]["verdicts"].get(k) for m in runs}) == 1 for k in p["kernels"])
        sol, full = p["sol"]["wall_s"], p["full"]["wall_s"]
        fp = p["full"]["passes"] or 0
        longest = p["sol"].get("longest_ms") or 0.0
        bare = {m: c[0] - c[1] for m, c in cost.items()}  # the source stage's run apart
        if longest >= 10.0:
            checks = [("passes fresh <= 0.55 full", cost["fresh"][2] <= 0.55 * fp),
                      ("wall fresh <= 0.6 full", bare["fresh"] <= 0.6 * full)]
        else:
            checks = [("fresh <= 2.0 SOL", bare["fresh"] <= 2.0 * sol), ("fresh <= 0.5 full", bare["fresh"] <= 0.5 * full),
                      ("again <= 1.5 SOL", bare["again"] <= 1.5 * sol), ("again <= 0.4 full", bare["again"] <= 0.4 * full)]
        verdict = "; ".join(f"{n}: {'met' if ok else 'MISSED'}" for n, ok in checks)
        p["targets"] = {n: ok for n, ok in checks}
        table.append(
            f"| {name} | {len(p['kernels'])} | {longest:.2f} ms | {sol:.1f} s | {full:.1f} s ({fp}) | "
            f"{cost['fixed'][0]:.1f} s | {cost['fresh'][0]:.1f} s | {cost['again'][0]:.1f} s | "
            f"{cost['fresh'][1]:.1f} / {cost['again'][1]:.1f} s | "
            f"{cost['fresh'][0] / sol:.2f} ({bare['fresh'] / sol:.2f}) | {cost['fresh'][0] / full:.2f} ({bare['fresh'] / full:.2f}) | "
            f"{cost['again'][0] / sol:.2f} ({bare['again'] / sol:.2f}) | {cost['again'][0] / full:.2f} ({bare['again'] / full:.2f}) | "
            f"{cost['fresh'][2] / fp if fp else float('nan'):.2f} | {verdict} | {'yes' if same else 'NO'} |")
    table.append("")
    table.append("Ratios as auto/reference, in brackets without the source stage's run (the hot lines).")
    table.append("")
    for label, short in [("short-kernel programs", True), ("long-kernel programs", False)]:
        names = [n for n, p in facts["programs"].items() if ((p["sol"].get("longest_ms") or 0.0) < 10.0) == short]
        if not names:
            continue
        total = lambda f: sum(f(facts["programs"][n]) for n in names)
        auto, again = total(lambda p: p["auto"]["fresh"]["wall_s"]), total(lambda p: p["auto"]["again"]["wall_s"])
        full, sol = total(lambda p: p["full"]["wall_s"]), total(lambda p: p["sol"]["wall_s"])
        table.append(f"{label} ({', '.join(names)}):")
        table.append(f"auto/full = {auto / full:.2f}")
        table.append(f"auto/sol = {auto / sol:.2f}")
        table.append(f"again/full = {again / full:.2f}")
    table.append("")
    for name, p in facts["programs"].items():
        e = estimates.get(name, {})
        p["estimates_ms"] = e
        shown = []
        for label, mode in [("dry", "fresh"), ("dry again", "again")]:
            ms, wall = e.get(label), p["auto"][mode]["wall_s"]
            shown.append(f"{label} {ms / 1000:.1f} s against {mode} {wall:.1f} s ({ms / 1000 / wall:.2f})"
                         if ms and wall else f"{label}: no estimate")
        table.append(f"estimate {name}: " + "; ".join(shown))
    table.append("")
    table.append("whole runs: " + ", ".join(f"{m} {r['wall_s']:.1f} s (exit {r['rc']})" for m, r in runs.items()))
    open(os.path.join(out, "programs.md"), "w").write("\n".join(table) + "\n")
    json.dump(facts, open(os.path.join(out, "programs.json"), "w"), indent=1)
    print("\n".join(table))


if __name__ == "__main__":
    main()
