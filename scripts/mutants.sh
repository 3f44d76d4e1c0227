#!/usr/bin/env bash
# Mutation testing of the modules whose mistakes users would not see: the verdict rules,
# the A/B comparison, the shell quoting of commands.sh, and the archive checks. Each
# mutant (an operator flipped, a function body replaced) must make a test fail.
#
# usage: scripts/mutants.sh [AREA...] [-- extra cargo-mutants options]
#   AREA: rules, ab, quoting, archive (all four without one)
#
# Needs cargo-mutants (`cargo install --locked cargo-mutants`). Not part of CI: on two
# cores one area takes from several minutes (quoting) to hours (rules). Results land in
# mutants.out/ (caught.txt, missed.txt, timeout.txt, unviable.txt); record the caught
# share and each survivor in the README's "Mutation testing" section.
set -euo pipefail
cd "$(dirname "$0")/.."

areas=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do areas+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#areas[@]} -gt 0 ] || areas=(rules ab quoting archive)

args=()
tests=()
for area in "${areas[@]}"; do
  case "$area" in
    rules)
      args+=(-f 'src/analyze/rules/*.rs')
      tests+=(analyze::rules thresholds limiters analysis_fixtures) ;;
    ab)
      args+=(-f 'src/compare/ab/*.rs')
      tests+=(compare::ab ab:: gate) ;;
    quoting)
      args+=(-f src/process/quote.rs --re 'shell_quote|quote')
      tests+=(process:: privilege launchers) ;;
    archive)
      args+=(-f 'src/archive/*.rs')
      tests+=(archive bad_input travel) ;;
    *) echo "mutants.sh: unknown area $area (rules, ab, quoting, archive)" >&2; exit 2 ;;
  esac
done

# One mutant at a time (cargo-mutants' default): the cores go to its build and tests. The
# library's own tests and the integration tests of each area, by name. `-- --in-place`
# reuses target/ instead of building a copy of the tree from scratch.
exec cargo mutants --timeout-multiplier 3 "${args[@]}" "$@" \
  -- --lib --test it -- "${tests[@]}"
