#!/usr/bin/env bash
# Runs the A/B checks of #16 on a GPU machine from the archives `ab-history.sh` wrote.
#
#   ab-run.sh KPROF ARCHIVES_DIR OUT_DIR CASE...
#
# CASE is `aa:N` (N checks of ab-aa.tar, the base against itself, named aa-1 ... aa-N) or
# `aa:M-N` (aa-M ... aa-N), `insts-time` (ab-insts.tar with --gate time), or any other
# name, checked once from ab-<case>.tar (`bank`, `slow3`, `insts`, `py-aa`, `py-slow`).
# With STOP_AFTER=S in the environment, no new check starts once S seconds have passed
# (a job on a shared GPU machine may have a wall-clock limit; the skipped cases are printed). With
# CHECK_TIMEOUT=S, a check still running after S seconds is sent SIGINT (kprof then stops
# the running step and records how each profile ended; the log says so). Each check
# unpacks into OUT_DIR/<case>[-n] and its console goes to OUT_DIR/<case>[-n].log, which
# ends with the exit status and the wall time of the whole check (unpacking, both sides'
# profiles, the rounds; no build: the archives hold the executables).
set -u
kprof=${1:?usage: ab-run.sh KPROF ARCHIVES_DIR OUT_DIR CASE...}
archives=${2:?}
out=${3:?}
shift 3
mkdir -p "$out"
start=$(date +%s)
check() { # name, archive, extra args...
  local name=$1 archive=$2 t0 t1 rc
  shift 2
  if [ -n "${STOP_AFTER:-}" ] && [ $(($(date +%s) - start)) -ge "$STOP_AFTER" ]; then
    echo "$name: skipped, STOP_AFTER=$STOP_AFTER s reached"
    return
  fi
  t0=$(date +%s.%N)
  {
    echo "\$ cargo-kprof kprof check --archive $(basename "$archive") --workspace-remap $name $* --message-format json"
    if [ -n "${CHECK_TIMEOUT:-}" ]; then
      timeout -s INT -k 30 "$CHECK_TIMEOUT" "$kprof" kprof check --archive "$archive" \
        --workspace-remap "$out/$name" "$@" --message-format json
    else
      "$kprof" kprof check --archive "$archive" --workspace-remap "$out/$name" "$@" --message-format json
    fi
    rc=$?
    t1=$(date +%s.%N)
    echo "exit $rc, wall $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
  } >"$out/$name.log" 2>&1
  tail -n 1 "$out/$name.log" | sed "s/^/$name: /"
}
for c in "$@"; do
  case $c in
    aa:*)
      range=${c#aa:}
      case $range in
        *-*) first=${range%-*} last=${range#*-} ;;
        *) first=1 last=$range ;;
      esac
      for n in $(seq "$first" "$last"); do check "aa-$n" "$archives/ab-aa.tar"; done
      ;;
    insts-time) check insts-time "$archives/ab-insts.tar" --gate time ;;
    *) check "$c" "$archives/ab-$c.tar" ;;
  esac
done
