#!/usr/bin/env bash
# Fails when a compiler pass, a transform or the runtime tests an equation for one primitive
# by name (`prim == Prim::x`, `case Prim::x:`), or when the compiler or the runtime reads
# control flow's params by name (a scan's "num_carry", a while's "body_nconsts"): what they
# need to know of a primitive is a slot of its rules (core/rules.h; a sub-program's role is
# the program_roles slot's) or a trait of the list (core/primitive.h), read generically
# (STYLE.md, principle 9). Making equations (emit(Prim::x, ...), bind(Prim::x, ...)) and
# their params is fine.
# Usage: passes_name_no_primitive.sh <src dir>
set -euo pipefail
src="$1"
# The exceptions, each with its reason:
allowed=(
  # inline-calls makes a shard_map's manual-enter/exit boundaries, whose meaning the
  # compiler itself defines (as reshard makes collectives).
  "compiler/compile.cpp:e.prim == Prim::shard_map"
  # The runtime implements the collectives the partitioner makes (they move buffers
  # between devices and processes, which a kernel cannot): run_collective picks each one's
  # implementation, as the rule table picks a kernel.
  "runtime/collectives.cpp:eqn.prim == Prim::collective_permute"
  "runtime/collectives.cpp:case Prim::collective_permute:"
  "runtime/collectives.cpp:case Prim::all_gather:"
  "runtime/collectives.cpp:case Prim::all_reduce:"
  "runtime/collectives.cpp:case Prim::reduce_scatter:"
  "runtime/collectives.cpp:case Prim::all_to_all:"
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
    echo "names a primitive: $rel: ${text#"${text%%[![:space:]]*}"}"
    status=1
  fi
done < <(grep -nE '(==|!=) *(core::)?Prim::[a-z_]+|case +(core::)?Prim::' \
           "$src"/compiler/*.cpp "$src"/transforms/*.cpp "$src"/runtime/*.cpp || true)
# Control flow's params are its own: the program_roles slot says what they mean.
params='branches|cond_jaxpr|body_jaxpr|cond_nconsts|body_nconsts|num_consts|num_carry|length|reverse'
while IFS= read -r hit; do
  file="${hit%%:*}"
  rest="${hit#*:}"
  text="${rest#*:}"
  echo "reads a control-flow param: ${file#"$src"/}: ${text#"${text%%[![:space:]]*}"}"
  status=1
done < <(grep -nE "get<[^\"]*>\(\"($params)\"\)" \
           "$src"/compiler/*.cpp "$src"/runtime/*.cpp || true)
exit $status
