#!/usr/bin/env python3
"""The census at tracing speed against ncu's census, side by side, on a GPU machine.

usage: census-speed.sh KPROF_BIN TRACER_SO OUT ARCHIVE... [--zoo DIR]

  KPROF_BIN   the cargo-kprof binary (built elsewhere; no cargo needed here)
  TRACER_SO   libkprof_tracer.so built elsewhere (`cargo build --release -p kprof-tracer`,
              or scripts/gpu/stage-binaries.sh, which copies it)
  OUT         must not exist; receives every run's folder and log, summary.txt, and
              census-speed.tar.gz holding all of that
  ARCHIVE...  archives of plain programs with no kernel named (burn.tar from
              third-party/build-burn.sh, candle.tar from build-candle.sh, ...)
  --zoo DIR   also the zoo's bench binaries in DIR (zoo/build.sh DEST): memory compute
              latency occupancy heldout mio

Per archive, each with `cargo-kprof kprof run --archive A --workspace-remap W --min-share 100`
(the census, then exit 6 when no kernel has all the time: nothing else runs), after one
traced run that is not measured (it fills the driver's JIT cache on a fresh machine):
  1. the program alone (its command from the traced run's manifest, without the tracer);
  2. the traced census (KPROF_CENSUS=trace, KPROF_TRACER=TRACER_SO);
  3. ncu's census of the first $NCU_CENSUS_LAUNCHES launches (KPROF_CENSUS=ncu,
     --census-launches, default 1000: at about 60 ms a launch, a whole framework run
     under ncu would not fit one GPU session), and the traced census of the same first
     launches (--census-launches), whose shares are the ones held to ncu's.
The census walls are the discovery stage's wall_ms in run_manifest.yaml; the shares come
from each breakdown.json.

The zoo's benches are harness programs, whose census kprof keeps on ncu's pass (its window
is the harness's range), so they are run here directly, as plain programs with their
timing bounded (KPROF_MIN_SAMPLES=3, KPROF_MIN_TIME=1ms): alone, with the tracer injected
(the trace files read here; the first $NCU_CENSUS_LAUNCHES launches counted), and under
`ncu --metrics gpu__time_duration.sum` (the same first launches).

Printed per program: the walls, each census's launches, every kernel above 5 % in either
with both shares and the difference, and the issue's targets: burn censused in at most
5 s more than its own run, candle in at most 2 s more, shares within 3 points.
Environment: KPROF_CUPTI (else the tracer's default search), NCU (else ncu on PATH,
else /usr/local/cuda/bin/ncu), STAGE_TIMEOUT_S (default 1800), LD_LIBRARY_PATH as the
programs need it (passed to kprof with --env).
"""

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time

SHARE_SHOWN = 5.0
SHARE_TOLERANCE = 3.0
TARGET_EXTRA_S = {"burn": 5.0, "candle": 2.0}
TRACER_VARS = ("CUDA_INJECTION64_PATH", "KPROF_TRACE_OUT", "KPROF_CUPTI", "KPROF_TRACE_LAUNCHES")
ZOO = ["memory", "compute", "latency", "occupancy", "heldout", "mio"]


def run(cmd, log, env=None, cwd=None):
    """Runs `cmd`, its output into `log`; returns (exit code, wall seconds)."""
    start = time.monotonic()
    timeout = int(os.environ.get("STAGE_TIMEOUT_S", "1800"))
    with open(log, "w") as out:
        out.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        out.flush()
        try:
            code = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    wall = time.monotonic() - start
    with open(log, "a") as out:
        out.write(f"exit={code} wall_s={wall:.2f}\n")
    return code, wall


def function_name(kernel):
    """As kprof's `function_name`: `void ns::f<int>(float *)` -> `f`."""
    head = kernel.split("(")[0].split("<")[0].strip()
    return head.split(" ")[-1].split("::")[-1]


def shares_of_breakdown(path):
    b = json.load(open(path))
    shares = {}
    for r in b["kernels"]:
        shares[r["function"]] = shares.get(r["function"], 0.0) + r["share_pct"]
    return b["launches"], shares


def demangled(names):
    """Names through c++filt when there is one."""
    if not shutil.which("c++filt"):
        return names
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout
    return out.splitlines() if len(out.splitlines()) == len(names) else names


def shares_of_trace(folder):
    totals, launches = {}, 0
    for f in glob.glob(os.path.join(folder, "*.tsv")):
        for line in open(f):
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "error":
                print(f"  trace error: {fields[1]}")
            if fields[0] == "kernel":
                launches += int(fields[1])
                totals[fields[9]] = totals.get(fields[9], 0) + int(fields[2])
    names = list(totals)
    by_function = {}
    for name, pretty in zip(names, demangled(names)):
        fn = function_name(pretty)
        by_function[fn] = by_function.get(fn, 0) + totals[name]
    total = sum(by_function.values()) or 1
    return launches, {f: 100.0 * ns / total for f, ns in by_function.items()}


def shares_of_ncu_page(path):
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return 0, {}
    import csv
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    name_col, dur_col = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    unit = rows[1][dur_col]
    scale = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit, 1)
    totals = {}
    for r in rows[2:]:
        if len(r) > dur_col and r[dur_col]:
            fn = function_name(r[name_col])
            totals[fn] = totals.get(fn, 0) + float(r[dur_col].replace(",", "")) * scale
    total = sum(totals.values()) or 1
    return len(rows) - 2, {f: 100.0 * ns / total for f, ns in totals.items()}


def discovery_wall_s(manifest):
    text = open(manifest).read()
    m = re.search(r"- stage: discovery\n(?:\s+\w.*\n)*?\s+wall_ms: (\d+)", text)
    return int(m.group(1)) / 1000 if m else None


def traced_command(profile):
    """The traced run's command line, as commands.sh has it (the line after its comment)."""
    lines = open(os.path.join(profile, "commands.sh")).read().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("# kprof's tracer injected"):
            return lines[i + 1]
    return None


def profile_dir(ws):
    dirs = [d for d in glob.glob(os.path.join(ws, "workspace", "profile", "*")) if
            os.path.isfile(os.path.join(d, "breakdown.json"))]
    return dirs[0] if dirs else None


def alone_command(traced):
    """The traced command (`cd DIR && env K=V... PROGRAM ARGS`, shell-quoted) without the
    tracer's variables: (argv, cwd)."""
    cwd = None
    words = shlex.split(traced)
    if words[:1] == ["cd"]:
        cwd, words = words[1], words[3:]
    if words[:1] == ["env"]:
        words = ["env"] + [w for w in words[1:] if not w.startswith(tuple(v + "=" for v in TRACER_VARS))]
    return words, cwd


def compare(name, walls, censuses, out):
    lines = [f"== {name}"]
    lines.append("  walls: " + ", ".join(f"{k} {v:.2f} s" if v is not None else f"{k} ?" for k, v in walls.items()))
    (tl, ts), (nl, ns) = censuses
    lines.append(f"  launches: trace {tl}, ncu {nl}")
    worst = 0.0
    for f in sorted(set(ts) | set(ns), key=lambda f: -max(ts.get(f, 0), ns.get(f, 0))):
        a, b = ts.get(f, 0.0), ns.get(f, 0.0)
        if max(a, b) > SHARE_SHOWN:
            worst = max(worst, abs(a - b))
            lines.append(f"  {a:6.1f} % trace  {b:6.1f} % ncu  {a - b:+5.1f}  {f}")
    lines.append(f"  shares within {SHARE_TOLERANCE} points: {'yes' if worst <= SHARE_TOLERANCE else 'NO'} (worst {worst:.1f})")
    target = next((t for k, t in TARGET_EXTRA_S.items() if k in name), None)
    if target is not None and walls.get("traced census") is not None and walls.get("alone") is not None:
        extra = walls["traced census"] - walls["alone"]
        lines.append(f"  traced census {extra:+.2f} s against its own run (target <= {target} s): "
                     f"{'met' if extra <= target else 'MISSED'}")
    print("\n".join(lines), flush=True)
    out.write("\n".join(lines) + "\n")


def archive_runs(kprof, tracer, out, archive, summary):
    name = os.path.basename(archive).removesuffix(".tar")
    env_args = ["--env", f"LD_LIBRARY_PATH={os.environ['LD_LIBRARY_PATH']}"] if os.environ.get("LD_LIBRARY_PATH") else []
    ncu_cap = os.environ.get("NCU_CENSUS_LAUNCHES", "1000")
    results = {}
    # The first run of a program on a fresh machine fills the driver's JIT cache (candle
    # loads its kernels as PTX): on the H200 its first traced run took 17.1 s where the
    # program alone, run after it, took 0.7 s. So a traced run that is not measured comes
    # first, and every measured run finds the cache as the user's second run would.
    for way, extra, env in [
        ("warm-up", [], {"KPROF_CENSUS": "trace", "KPROF_TRACER": tracer}),
        ("trace", [], {"KPROF_CENSUS": "trace", "KPROF_TRACER": tracer}),
        ("trace-capped", ["--census-launches", ncu_cap], {"KPROF_CENSUS": "trace", "KPROF_TRACER": tracer}),
        ("ncu", ["--census-launches", ncu_cap], {"KPROF_CENSUS": "ncu"}),
    ]:
        ws = os.path.join(out, f"{name}-{way}")
        cmd = [kprof, "kprof", "run", "--archive", archive, "--workspace-remap", ws, "--min-share", "100", *extra, *env_args]
        code, wall = run(cmd, os.path.join(out, f"{name}-{way}.log"), env={**os.environ, **env})
        d = profile_dir(ws)
        results[way] = (code, wall, d)
        print(f"{name} {way}: exit {code}, {wall:.2f} s, {d}", flush=True)
    d_trace, d_capped, d_ncu = results["trace"][2], results["trace-capped"][2], results["ncu"][2]
    if not d_trace or not d_capped or not d_ncu:
        print(f"{name}: a census left no breakdown.json; see the logs", flush=True)
        return
    traced_manifest = os.path.join(d_trace, "run_manifest.yaml")
    traced = traced_command(d_trace)
    if traced is None or "not a trace" in open(os.path.join(out, f"{name}-trace.log")).read():
        print(f"{name}: the census was NOT traced (see {name}-trace.log for the note)", flush=True)
    alone = None
    if traced is not None:
        argv, cwd = alone_command(traced)
        _, alone = run(argv, os.path.join(out, f"{name}-alone.log"), cwd=cwd)
    walls = {"alone": alone, "traced census": discovery_wall_s(traced_manifest),
             "ncu census": discovery_wall_s(os.path.join(d_ncu, "run_manifest.yaml"))}
    # The shares of the same first launches: the capped trace against ncu's.
    censuses = (shares_of_breakdown(os.path.join(d_capped, "breakdown.json")),
                shares_of_breakdown(os.path.join(d_ncu, "breakdown.json")))
    compare(name, walls, censuses, summary)


def zoo_runs(tracer, out, zoo, summary):
    ncu = os.environ.get("NCU") or shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    bounded = {**os.environ, "KPROF_MIN_SAMPLES": "3", "KPROF_MIN_TIME": "1ms", "KPROF_QUIET": "1"}
    cap = os.environ.get("NCU_CENSUS_LAUNCHES", "1000")
    for bench in ZOO:
        exe = os.path.join(zoo, bench)
        if not os.path.isfile(exe):
            continue
        # Not measured: fills the driver's JIT cache with the bench's PTX (see archive_runs).
        run([exe], os.path.join(out, f"zoo-{bench}-warm-up.log"), env=bounded)
        _, alone = run([exe], os.path.join(out, f"zoo-{bench}-alone.log"), env=bounded)
        trace_dir = os.path.join(out, f"zoo-{bench}-trace")
        os.makedirs(trace_dir)
        # The same first launches ncu counts below.
        traced_env = {**bounded, "CUDA_INJECTION64_PATH": tracer, "KPROF_TRACE_OUT": trace_dir,
                      "KPROF_TRACE_LAUNCHES": cap}
        if os.environ.get("KPROF_CUPTI"):
            traced_env["KPROF_CUPTI"] = os.environ["KPROF_CUPTI"]
        _, traced = run([exe], os.path.join(out, f"zoo-{bench}-trace.log"), env=traced_env)
        page = os.path.join(out, f"zoo-{bench}-ncu.csv")
        # As kprof's census runs ncu: the program's caches kept (`--cache-control none`).
        ncu_cmd = [ncu, "--cache-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
                   "--launch-count", cap, "--log-file", page, exe]
        _, ncu_wall = run(ncu_cmd, os.path.join(out, f"zoo-{bench}-ncu.log"), env=bounded)
        walls = {"alone": alone, "traced census": traced, "ncu census": ncu_wall}
        compare(f"zoo {bench}", walls, (shares_of_trace(trace_dir), shares_of_ncu_page(page)), summary)


def main(argv):
    args = list(argv)
    zoo = None
    if "--zoo" in args:
        i = args.index("--zoo")
        zoo = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    kprof, tracer, out, archives = os.path.abspath(args[0]), os.path.abspath(args[1]), args[2], args[3:]
    if os.path.exists(out):
        sys.exit(f"census-speed: {out} exists; give a new OUT")
    os.makedirs(out)
    out = os.path.abspath(out)
    with open(os.path.join(out, "summary.txt"), "w") as summary:
        for a in archives:
            archive_runs(kprof, tracer, out, os.path.abspath(a), summary)
        if zoo:
            zoo_runs(tracer, out, os.path.abspath(zoo), summary)
    # The unpacked executables are large and reproducible: left out of the tarball.
    with tarfile.open(os.path.join(out, "census-speed.tar.gz"), "w:gz") as tar:
        for entry in sorted(os.listdir(out)):
            if entry != "census-speed.tar.gz":
                tar.add(os.path.join(out, entry), arcname=entry,
                        filter=lambda t: None if "/workspace/bin/" in t.name or t.name.endswith("/bin") else t)
    print(f"census-speed: {out}/summary.txt, {out}/census-speed.tar.gz")


if __name__ == "__main__":
    main(sys.argv[1:])
