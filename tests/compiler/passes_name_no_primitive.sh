#!/usr/bin/env bash
# Fails when a compiler pass or a transform tests an equation for one primitive by name
# (`prim == Prim::x`, `case Prim::x:`): what a pass needs to know of a primitive is a
# slot of its rules (core/rules.h) or a trait of the list (core/primitive.h), read
# generically (STYLE.md, principle 9). Making equations (emit(Prim::x, ...)) is fine.
# Usage: passes_name_no_primitive.sh <src dir>
set -euo pipefail
src="$1"
# The exceptions, each with its reason:
allowed=(
  # inline-calls makes a shard_map's manual-enter/exit boundaries, whose meaning the
  # compiler itself defines (as reshard makes collectives).
  "compiler/compile.cpp:e.prim == Prim::shard_map"
  # Control flow's structure (which operands each sub-program reads, which outputs loop
  # back as its carry, which are stacked) is the compiler's own contract with cond, while
  # and scan, as a region's boundaries are: propagation lays out each kind's carry.
  "compiler/propagate.cpp:case Prim::cond:"
  "compiler/propagate.cpp:case Prim::while_:"
  "compiler/propagate.cpp:case Prim::scan:"
  "compiler/cost.cpp:e.prim == core::Prim::scan"
  "compiler/cost.cpp:e.prim != core::Prim::cond"
  # fuse-elementwise makes fusion equations; how one runs its chain (which results may
  # write over an operand) is the compiler's own contract, asked of fuse.h by plan-buffers.
  "compiler/fuse.cpp:e.prim != Prim::fusion"
)
status=0
while IFS= read -r hit; do
  file="${hit%%:*}"
  rest="${hit#*:}"
  text="${rest#*:}"
  rel="${file#"$src"/}"
  ok=0
  for a in "${allowed[@]}"; do
    [[ "$rel" == "${a%%:*}" && "$text" == *"${a#*:}"* ]] && ok=1
  done
  if [[ $ok == 0 ]]; then
    echo "a pass names a primitive: $rel: ${text#"${text%%[![:space:]]*}"}"
    status=1
  fi
done < <(grep -nE '(==|!=) *(core::)?Prim::[a-z_]+|case +(core::)?Prim::' \
           "$src"/compiler/*.cpp "$src"/transforms/*.cpp || true)
exit $status
