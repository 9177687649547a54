# Runs PROGRAM --small --checkpoint through LAUNCH_A (a launcher command line, or empty) for
# 30 uninterrupted steps, then again in a fresh directory stopped after step 12 (after the
# background save of step 10), then resumes that directory through LAUNCH_B (another
# launcher or process count). Fails unless the stopped run and the resumed one print, step
# for step, the uninterrupted run's losses (each process of a launcher printing them all).
# Usage: cmake -DPROGRAM=... -DLAUNCH_A="..." -DLAUNCH_B="..." -DWORK=<dir> -P checkpoint_resume.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
separate_arguments(launch_a UNIX_COMMAND "${LAUNCH_A}")
separate_arguments(launch_b UNIX_COMMAND "${LAUNCH_B}")

# Runs one training, returns its step lines of process 0 (without parax-run's "[0] ").
function(train out launch)
  execute_process(COMMAND ${launch} ${PROGRAM} --small ${ARGN}
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 240)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${launch} ${PROGRAM} --small ${ARGN} exited with ${rc}:\n${text}\n${err}")
  endif()
  string(REGEX REPLACE "\\[[1-9][0-9]*\\] [^\n]*\n" "" text "${text}")  # other processes
  string(REPLACE "[0] " "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

train(full "${launch_a}" --checkpoint ${WORK}/full)
train(cut "${launch_a}" --checkpoint ${WORK}/cut --stop-after 12)
train(resumed "${launch_b}" --checkpoint ${WORK}/cut)

string(REGEX MATCHALL "step [0-9]+ loss [^\n]*" full_steps "${full}")
string(REGEX MATCHALL "step [0-9]+ loss [^\n]*" cut_steps "${cut}")
string(REGEX MATCHALL "step [0-9]+ loss [^\n]*" resumed_steps "${resumed}")
list(LENGTH full_steps n)
if(NOT n EQUAL 30)
  message(FATAL_ERROR "the uninterrupted run printed ${n} steps:\n${full}")
endif()
list(SUBLIST full_steps 0 12 want_cut)
if(NOT cut_steps STREQUAL want_cut)
  message(FATAL_ERROR "the stopped run printed\n${cut}\ninstead of\n${want_cut}")
endif()
if(NOT resumed MATCHES "# resumed after step 10 ")
  message(FATAL_ERROR "the resumed run did not resume after step 10:\n${resumed}")
endif()
list(SUBLIST full_steps 10 20 want_resumed)
if(NOT resumed_steps STREQUAL want_resumed)
  message(FATAL_ERROR "the resumed run printed\n${resumed}\ninstead of\n${want_resumed}")
endif()
message(STATUS "stopped after step 12, resumed after step 10: the uninterrupted run's losses")
