# Fails, listing the offenders, when a file includes a header of a layer above its own.
# Usage: cmake -DROOT=<checkout> -P check_layers.cmake
#
# The order, lowest first, as DESIGN.md's table has it: core's IR and array value hold
# Sharding (params, an array's layout) while sharding/ includes nothing from core. There are
# no exceptions: code that needs a layer above moves to that layer.
cmake_minimum_required(VERSION 3.20)
set(LAYERS base sharding core prims lax transforms compiler runtime api
           numpy random nn optax distributed checkpointing interop)

# The layer of each public header (include/parax/): the lowest layer that may call what it
# declares, which is the layer that defines it except for lax's typed functions. Those are
# declared over core's Array alone, so lax.h, special.h and collectives.h are core's:
# prims' jvp, transpose and batching rules call them, as JAX's rules call lax, and core's
# and the transforms' interpreters build equations with them. They are defined in src/lax, a
# link-time dependency like core::default_backend() (declared in core, defined in runtime).
# linalg.h declares jnp.linalg beside lax.linalg (its norm takes numpy's Axes), so it is
# numpy's, and src/lax/linalg.cpp defines lax.linalg's binders without including it.
set(PUBLIC_base dtype.h shape.h errors.h config.h profiler.h)
set(PUBLIC_sharding device.h sharding.h)
set(PUBLIC_core array.h tree.h lax.h special.h collectives.h)
set(PUBLIC_lax control_flow.h convolution.h)
set(PUBLIC_transforms jit.h grad.h vmap.h shard_map.h custom_derivatives.h)
set(PUBLIC_runtime distributed.h)
set(PUBLIC_api debug.h device_put.h explain.h)
set(PUBLIC_numpy numpy.h indexing.h linalg.h)
set(PUBLIC_random random.h)
set(PUBLIC_nn nn.h module.h)
set(PUBLIC_optax optax.h)
set(PUBLIC_distributed multihost.h)
set(PUBLIC_checkpointing checkpointing.h)
set(PUBLIC_interop torch.h parax.h)

if(NOT ROOT)
  message(FATAL_ERROR "pass -DROOT=<checkout>")
endif()

function(layer_index name out)
  list(FIND LAYERS "${name}" i)
  set(${out} ${i} PARENT_SCOPE)
endfunction()

# Sets `out` to the layer of an include path ("core/trace.h", "parax/jit.h"), or "".
function(layer_of_include path out)
  set(layer "")
  if(path MATCHES "^parax/(.+)$")
    set(header "${CMAKE_MATCH_1}")
    foreach(l IN LISTS LAYERS)
      if(header IN_LIST PUBLIC_${l})
        set(layer ${l})
      endif()
    endforeach()
    if(layer STREQUAL "")
      message(FATAL_ERROR "include/parax/${header} has no layer: add it to check_layers.cmake")
    endif()
  elseif(path MATCHES "^([a-z_]+)/")
    if(CMAKE_MATCH_1 IN_LIST LAYERS)
      set(layer ${CMAKE_MATCH_1})
    endif()
  endif()
  set(${out} "${layer}" PARENT_SCOPE)
endfunction()

set(files_and_layers)
file(GLOB_RECURSE sources RELATIVE "${ROOT}/src" "${ROOT}/src/*.h" "${ROOT}/src/*.cpp")
foreach(f IN LISTS sources)
  string(REGEX MATCH "^[a-z_]+" layer "${f}")
  if(NOT layer IN_LIST LAYERS)
    message(FATAL_ERROR "src/${f} is in no layer of ${LAYERS}")
  endif()
  list(APPEND files_and_layers "src/${f}|${layer}")
endforeach()
file(GLOB publics RELATIVE "${ROOT}/include/parax" "${ROOT}/include/parax/*.h")
foreach(h IN LISTS publics)
  layer_of_include("parax/${h}" layer)
  list(APPEND files_and_layers "include/parax/${h}|${layer}")
endforeach()

set(offenders)
foreach(entry IN LISTS files_and_layers)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 file)
  list(GET parts 1 layer)
  layer_index(${layer} own)
  file(STRINGS "${ROOT}/${file}" includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*$" "\\1" path "${line}")
    layer_of_include("${path}" theirs)
    if(theirs STREQUAL "")
      continue()
    endif()
    layer_index(${theirs} above)
    if(above GREATER own)
      list(APPEND offenders "  ${file} (${layer}) includes ${path} (${theirs})")
    endif()
  endforeach()
endforeach()

if(offenders)
  list(JOIN offenders "\n" text)
  message(FATAL_ERROR "files including a layer above their own (order: ${LAYERS}):\n${text}\n"
                      "Move the code to the layer it needs.")
endif()
list(LENGTH files_and_layers n)
message(STATUS "layering: ${n} files, none includes a layer above its own")
