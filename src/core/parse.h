// Reads programs back from the text `to_string(Program)` prints (JAX's jaxpr notation), so
// compiler passes can be tested text-in, text-out.
#pragma once

#include <string_view>

#include "core/program.h"

namespace parax::core {

// Parses `{ lambda c:f32[3]; a:f32[8,8] b:i32[]. let d:f32[8,8] = add a 1.0 in (d,) }`,
// one-line or one equation a line. Variables may have any names (`x`, `w1`) and are
// numbered in order of definition, as the printer names them, so parsing a printed program
// prints it back identically. A literal takes the type of the
// equation's first operand of its kind (float, integer, bool), else of its first result of
// that kind, else float32 / int32 (weak) / bool. Param values: ints, floats, True/False,
// int tuples, dtype names, bare words (strings), nested programs, NamedSharding(...) and
// SingleDeviceSharding(...); `mesh`, when given, resolves `P('a', None)` shardings and
// axis names in tuples (`mesh_axes=('a',)`), and is the mesh of any NamedSharding whose
// mesh prints the same. Other meshes are built by make_mesh over the first devices by id.
// Throws ValueError naming the line, column and what was expected.
Program parse_program(std::string_view text, const Mesh* mesh = nullptr);

// Parses `P('a', None)` or `PartitionSpec(('a', 'b'),)`; throws ValueError as above.
PartitionSpec parse_partition_spec(std::string_view text);

}  // namespace parax::core
