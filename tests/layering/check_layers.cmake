# Fails, listing the offenders, when a file includes a header of a layer above its own.
# Usage: cmake -DROOT=<checkout> -P check_layers.cmake
#
# The order, lowest first. DESIGN.md's table lists core before sharding, but core's IR and
# array value hold Sharding (params, an array's layout) while sharding/ includes nothing
# from core: sharding sits below core.
cmake_minimum_required(VERSION 3.20)
set(LAYERS base sharding core prims lax transforms compiler runtime api
           numpy random nn optax distributed interop)

# The layer of each public header (include/parax/): the layer that defines what it declares.
set(PUBLIC_base dtype.h shape.h errors.h config.h)
set(PUBLIC_sharding device.h sharding.h)
set(PUBLIC_core array.h tree.h)
set(PUBLIC_lax lax.h control_flow.h collectives.h special.h convolution.h linalg.h)
set(PUBLIC_transforms jit.h grad.h vmap.h shard_map.h custom_derivatives.h)
set(PUBLIC_runtime distributed.h)
set(PUBLIC_api debug.h device_put.h)
set(PUBLIC_numpy numpy.h indexing.h)
set(PUBLIC_random random.h)
set(PUBLIC_nn nn.h module.h)
set(PUBLIC_optax optax.h)
set(PUBLIC_distributed multihost.h)
set(PUBLIC_interop torch.h parax.h)

# The allowed exceptions, in one place: "<layer> <included header>: <reason>".
set(EXCEPTIONS
  "prims parax/lax.h: jvp, transpose and batching rules are written with lax calls, as JAX's are"
  "prims parax/numpy.h: a few derivative rules (collectives) use numpy compositions"
  "prims lax/promote.h: derivative rules reuse the front ends' promotion and constant helpers"
  "prims parax/special.h: the special functions' derivative rules bind each other through their lax wrappers (lgamma' is digamma), as parax/lax.h's do"
  "api parax/numpy.h: device_put builds arrays from host values with numpy's"
  "lax parax/numpy.h: collectives and convolution still use numpy compositions"
  "lax parax/custom_derivatives.h: lax.linalg's solve and determinants are custom_jvp functions"
  "lax parax/grad.h: lax.linalg's solve and determinants are custom_jvp functions"
  "lax parax/jit.h: staged_binary jits numpy's broadcasting functions"
  "lax api/array_impl.h: constants read the array value"
  "numpy parax/nn.h: indexing uses one_hot"
)

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

function(is_excepted layer path out)
  set(ok FALSE)
  foreach(e IN LISTS EXCEPTIONS)
    if(e MATCHES "^${layer} ${path}:")
      set(ok TRUE)
    endif()
  endforeach()
  set(${out} ${ok} PARENT_SCOPE)
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
      is_excepted(${layer} "${path}" ok)
      if(NOT ok)
        list(APPEND offenders "  ${file} (${layer}) includes ${path} (${theirs})")
      endif()
    endif()
  endforeach()
endforeach()

if(offenders)
  list(JOIN offenders "\n" text)
  message(FATAL_ERROR "files including a layer above their own (order: ${LAYERS}):\n${text}\n"
                      "Move the code to the right layer, or list an exception with its reason "
                      "in tests/layering/check_layers.cmake.")
endif()
list(LENGTH files_and_layers n)
message(STATUS "layering: ${n} files, none includes a layer above its own")
