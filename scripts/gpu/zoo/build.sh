#!/usr/bin/env bash
# Builds the zoo's bench targets (examples/zoo, release, line info) and copies the bench
# executables into DEST under their bench names (memory, compute, latency, occupancy,
# heldout, mio), for record-full.sh on a GPU machine without cargo. Needs no GPU and no CUDA:
# the binaries load libcuda and libnvrtc at run time and carry their kernels' source.
#
# usage: scripts/gpu/zoo/build.sh DEST
#
# Then checks, without a GPU, that the entries agree everywhere, and fails if not:
#   - kernels.tsv lists exactly the [[package.metadata.kprof.kernels]] entries of
#     examples/zoo/Cargo.toml (name, bench, case regex, kernel regex),
#   - every entry names a kernel defined in examples/zoo/kernels/*.cu, and its kernel regex
#     matches exactly one kernel defined there,
#   - record-full.sh --list DEST: every case regex matches exactly one case of its binary,
#   - record-fixes.sh --list DEST: the same for fixes.tsv (the fix variants of FIXES.md).
# Executables are taken from cargo's JSON messages, not guessed. Host debug info is
# stripped (the kernels' line info comes from NVRTC at run time); KPROF_STAGE_KEEP_DEBUG=1
# keeps it.
set -euo pipefail

dest="${1:?usage: scripts/gpu/zoo/build.sh DEST}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
zoo="$repo/examples/zoo"
benches=(memory compute latency occupancy heldout mio)
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

messages="$(mktemp)"
trap 'rm -f "$messages"' EXIT

cargo build --release --benches --manifest-path "$zoo/Cargo.toml" \
    --message-format=json-render-diagnostics >"$messages"

python3 - "$messages" "$dest" "${benches[@]}" <<'PY'
import json, os, shutil, sys
messages, dest, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
found = {}
for line in open(messages):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    target = msg["target"]
    if "bench" in target["kind"] and target["name"] in wanted:
        found[target["name"]] = msg["executable"]
missing = sorted(set(wanted) - set(found))
if missing:
    sys.exit(f"zoo build: cargo built no bench target named {', '.join(missing)}")
for name in wanted:
    out = os.path.join(dest, name)
    shutil.copy2(found[name], out)
    print(f"zoo build: {out} <- {found[name]}", file=sys.stderr)
PY

if [ "${KPROF_STAGE_KEEP_DEBUG:-0}" != 1 ] && command -v strip >/dev/null 2>&1; then
    for b in "${benches[@]}"; do strip --strip-debug "$dest/$b"; done
fi

python3 - "$zoo/Cargo.toml" "$here/kernels.tsv" "$zoo/kernels" <<'PY'
import pathlib, re, sys, tomllib
cargo_toml, tsv, kernels_dir = sys.argv[1:4]
entries = tomllib.load(open(cargo_toml, "rb"))["package"]["metadata"]["kprof"]["kernels"]
from_toml = [
    (e["name"], e["bench"], e["case"], e.get("regex", ".*" + re.escape(e["name"]) + ".*"))
    for e in entries
]
from_tsv = []
for line in open(tsv):
    line = line.rstrip("\n")
    if not line or line.startswith("#") or line.startswith("name\t"):
        continue
    name, bench, case, regex, held_out = line.split("\t")
    if held_out not in ("yes", "no"):
        sys.exit(f"zoo build: kernels.tsv: held_out of {name} is {held_out!r}, not yes or no")
    from_tsv.append((name, bench, case, regex))
problems = []
if from_toml != from_tsv:
    for row in sorted(set(from_toml) ^ set(from_tsv)):
        where = "Cargo.toml" if row in from_toml else "kernels.tsv"
        problems.append(f"only in {where}: {row}")
    if not problems:
        problems.append("the entries are listed in a different order")
defined = []
for cu in sorted(pathlib.Path(kernels_dir).glob("*.cu")):
    defined += re.findall(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(', cu.read_text())
for name, _, _, regex in from_toml:
    if name not in defined:
        problems.append(f"entry {name}: no kernel of that name in kernels/*.cu")
    hits = [k for k in defined if re.search(regex, k)]
    if len(hits) != 1:
        problems.append(f"entry {name}: kernel regex {regex!r} matches {hits}")
if len(defined) != len(set(defined)):
    problems.append(f"a kernel name is defined twice: {sorted(defined)}")
for p in problems:
    print("zoo build:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"zoo build: {len(from_toml)} entries agree (Cargo.toml, kernels.tsv, {len(defined)} kernels)", file=sys.stderr)
PY

if ! "$here/record-full.sh" --list "$dest" >"$dest/list-check.txt" 2>&1; then
    grep -v '^ok ' "$dest/list-check.txt" >&2
    echo "zoo build: the --list check failed; see $dest/list-check.txt" >&2
    exit 1
fi
echo "zoo build: --list check passed ($(grep -c '^ok ' "$dest/list-check.txt") entries)" >&2
if ! "$here/record-fixes.sh" --list "$dest" >"$dest/list-check-fixes.txt" 2>&1; then
    grep -v '^ok ' "$dest/list-check-fixes.txt" >&2
    echo "zoo build: the fix variants' --list check failed; see $dest/list-check-fixes.txt" >&2
    exit 1
fi
echo "zoo build: fix variants' --list check passed ($(grep -c '^ok ' "$dest/list-check-fixes.txt") entries of fixes.tsv)" >&2
ls -l "$dest" >&2
