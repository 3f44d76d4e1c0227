#!/usr/bin/env bash
# The census at tracing speed against ncu's census, side by side (issue #44's "done when":
# the burn program censused whole in at most 5 s more than its own run, candle in at most
# 2 s more, every kernel's share within 3 points of ncu's).
#
# usage: scripts/gpu/census-speed.sh KPROF_BIN TRACER_SO OUT ARCHIVE... [--zoo DIR]
#
# See scripts/gpu/census_speed.py for what runs and what is printed.
set -euo pipefail
exec python3 "$(dirname "$0")/census_speed.py" "$@"
