# Installs the build into a scratch prefix and runs the installed bin/parax-run.
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed")
endif()
execute_process(COMMAND ${prefix}/bin/parax-run -n 2 sh -c "echo hi"
                OUTPUT_VARIABLE out RESULT_VARIABLE rc TIMEOUT 20)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\\[0\\] hi" OR NOT out MATCHES "\\[1\\] hi")
  message(FATAL_ERROR "the installed parax-run failed (${rc}): ${out}")
endif()
file(REMOVE_RECURSE ${WORK})
