#!/usr/bin/env bash
# Runs the ncu stage commands that `cargo kprof --dry-run` wrote into each profile
# directory's commands.sh, exactly as written, on a GPU machine without cargo (the build
# line is skipped: its executables must already be at the paths commands.sh names).
#
# usage: scripts/gpu/run-commands.sh PROFILE_DIR...
# Writes PROFILE_DIR/replay.log: per stage the exit status, wall time and the replay
# passes ncu reported (profiler__replayer_passes).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
status=0
for dir in "$@"; do
  script="$dir/commands.sh"
  [ -f "$script" ] || { echo "run-commands: no $script" >&2; status=1; continue; }
  log="$dir/replay.log"
  : > "$log"
  stage=""
  while IFS= read -r line; do
    case "$line" in
      "# Stage "*) stage="${line#\# Stage }" ;;
      *" ncu "*|*"/ncu "*)
        t0=$(date +%s%N)
        sh -c "$line" > "$dir/.stage.out" 2>&1
        rc=$?
        t1=$(date +%s%N)
        raw=$(printf '%s\n' "$line" | grep -o -- '--log-file [^ ]*' | cut -d' ' -f2)
        passes=$(python3 - "$raw" <<'PY' 2>/dev/null
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
rows = list(csv.reader(lines[start:]))
col = rows[0].index("profiler__replayer_passes")
print(",".join(r[col] for r in rows[2:]))
PY
)
        echo "stage=$stage rc=$rc wall_ms=$(( (t1 - t0) / 1000000 )) passes=${passes:-?}" >> "$log"
        [ "$rc" = 0 ] || { status=1; cat "$dir/.stage.out" >> "$log"; }
        rm -f "$dir/.stage.out"
        ;;
    esac
  done < "$script"
  echo "$(basename "$dir"):"; sed 's/^/  /' "$log"
done
exit "$status"
