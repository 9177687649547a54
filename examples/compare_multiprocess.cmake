# Runs REFERENCE --small (one process, 8 devices) and PROGRAM --small through LAUNCHER as
# 2 processes of 4 devices; fails unless every process printed the reference's two
# data-parallel losses (the lines after its "# 8-way batch data parallelism" header).
execute_process(COMMAND ${REFERENCE} --small OUTPUT_VARIABLE ref RESULT_VARIABLE rc
                TIMEOUT 240)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${REFERENCE} exited with ${rc}")
endif()
string(REGEX MATCH "# 8-way batch data parallelism\n([^\n]*)\n([^\n]*)\n" _ "${ref}")
set(want "${CMAKE_MATCH_1}\n${CMAKE_MATCH_2}")
execute_process(COMMAND ${LAUNCHER} -n 2 --devices-per-process 4 ${PROGRAM} --small
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 240)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "parax-run exited with ${rc}:\n${out}\n${err}")
endif()
foreach(p 0 1)
  string(REGEX MATCHALL "\\[${p}\\] [^#\n][^\n]*" lines "${out}")
  list(JOIN lines "\n" got)
  string(REPLACE "[${p}] " "" got "${got}")
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "process ${p} printed\n${got}\ninstead of the one-process losses\n${want}")
  endif()
endforeach()
message(STATUS "both processes printed the one-process losses:\n${want}")
