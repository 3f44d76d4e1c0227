#!/usr/bin/env bash
# Builds what the GPU machine runs and copies it into DEST under stable names:
#   copy fma tiny hgemm occupancy reduce   the demo bench binaries (release)
#   harness-gpu-tests                      the harness' GPU test binary (tests/gpu.rs)
#   libkprof_tracer.so                     the census tracer (tracer/), for KPROF_TRACER
#   tracer-gpu-tests                       the tracer's GPU test binary (tracer/tests/gpu.rs);
#                                          it finds libkprof_tracer.so beside its parent folder,
#                                          so run it from DEST/tracer-tests/deps/ (copied so)
#
# usage: scripts/gpu/stage-binaries.sh DEST
#
# The GPU machine needs no Rust toolchain: the binaries load libcuda and libnvrtc at run
# time. demo-nvcc's build script needs nvcc to embed its PTX; this uses $NVCC, else nvcc
# from $CUDA_HOME or PATH, else installs NVIDIA's nvcc wheels (pinned to CUDA 13.0, the GPU
# machine's driver version, whose PTX that driver can load) into $KPROF_NVCC_CACHE
# (default /tmp/kprof-nvcc). Executables are taken from cargo's JSON messages, not guessed.
set -euo pipefail

dest="${1:?usage: scripts/gpu/stage-binaries.sh DEST}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

if [ -z "${NVCC:-}" ]; then
    if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
        NVCC="$CUDA_HOME/bin/nvcc"
    elif command -v nvcc >/dev/null 2>&1; then
        NVCC="$(command -v nvcc)"
    else
        cache="${KPROF_NVCC_CACHE:-/tmp/kprof-nvcc}"
        echo "stage-binaries: using NVIDIA's CUDA 13.0 compiler wheels in $cache" >&2
        eval "$("$repo/.ci/install-cuda-tools.sh" "$cache")"
    fi
fi
export NVCC
echo "stage-binaries: nvcc is $NVCC ($("$NVCC" --version | tail -n 2 | head -n 1))" >&2

messages="$(mktemp -d)"
trap 'rm -rf "$messages"' EXIT

# Copies the executables of the given target kind and names from cargo's JSON messages.
copy_artifacts() { # FILE KIND RENAME(name=newname,...)
    python3 - "$1" "$2" "$3" "$dest" <<'PY'
import json, shutil, sys, os
messages, kind, renames, dest = sys.argv[1:5]
wanted = dict(pair.split("=") for pair in renames.split(","))
found = {}
for line in open(messages):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    target = msg["target"]
    if kind in target["kind"] and target["name"] in wanted:
        found[target["name"]] = msg["executable"]
missing = sorted(set(wanted) - set(found))
if missing:
    sys.exit(f"stage-binaries: cargo built no {kind} target named {', '.join(missing)}")
for name, exe in sorted(found.items()):
    out = os.path.join(dest, wanted[name])
    shutil.copy2(exe, out)
    print(f"stage-binaries: {out} <- {exe}", file=sys.stderr)
PY
}

# Host debug info is most of each binary's size (18 MB -> 3 MB); kernels keep their line
# info, which lives in the embedded PTX. KPROF_STAGE_KEEP_DEBUG=1 keeps it.
strip_staged() {
    if [ "${KPROF_STAGE_KEEP_DEBUG:-0}" != 1 ] && command -v strip >/dev/null 2>&1; then
        for f in "$@"; do strip --strip-debug "$dest/$f"; done
    fi
}

cargo build --release --manifest-path "$repo/examples/demo/Cargo.toml" --benches \
    --message-format=json-render-diagnostics >"$messages/demo.json"
copy_artifacts "$messages/demo.json" bench \
    "copy=copy,fma=fma,tiny=tiny,hgemm=hgemm,occupancy=occupancy,reduce=reduce"
strip_staged copy fma tiny hgemm occupancy reduce

(cd "$repo" && cargo test -p kprof-harness --release --no-run \
    --message-format=json-render-diagnostics) >"$messages/harness.json"
copy_artifacts "$messages/harness.json" test "gpu=harness-gpu-tests"
strip_staged harness-gpu-tests

(cd "$repo" && cargo build --release -p kprof-tracer --message-format=json-render-diagnostics) \
    >"$messages/tracer.json"
python3 - "$messages/tracer.json" "$dest" <<'PY'
import json, shutil, sys
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "kprof_tracer":
        for f in msg["filenames"]:
            if f.endswith(".so"):
                shutil.copy2(f, sys.argv[2] + "/libkprof_tracer.so")
                print(f"stage-binaries: {sys.argv[2]}/libkprof_tracer.so <- {f}", file=sys.stderr)
PY
# The tracer's GPU test looks for the cdylib one folder above its own: the layout of
# cargo's target/<profile>/deps/.
(cd "$repo" && cargo test -p kprof-tracer --release --no-run \
    --message-format=json-render-diagnostics) >"$messages/tracer-tests.json"
copy_artifacts "$messages/tracer-tests.json" test "gpu=tracer-gpu-tests"
mkdir -p "$dest/tracer-tests/deps"
mv "$dest/tracer-gpu-tests" "$dest/tracer-tests/deps/tracer-gpu-tests"
cp "$dest/libkprof_tracer.so" "$dest/tracer-tests/libkprof_tracer.so"

# The reduce bench is useless without its PTX: fail here, not on the GPU machine.
if ! "$dest/reduce" --list >/dev/null || ! grep -aq '\.entry reduce_kernel' "$dest/reduce"; then
    echo "stage-binaries: $dest/reduce has no embedded PTX; check demo-nvcc's build warnings" >&2
    exit 1
fi
ls -l "$dest" >&2
