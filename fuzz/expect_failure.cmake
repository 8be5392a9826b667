# expect_failure.cmake -- passes when a program fails the way it must.
#
# A teeth test runs the corpus replay on a poison build: it must fail, and
# for the poison's own reason (a use-after-free report, or the end-of-input
# counters), not for any other. ctest alone cannot say both; this script
# runs the program, and passes only on a non-zero exit (or a signal) whose
# output matches EXPECT.
#
# Usage: cmake -DPROGRAM=... -DARGS=a;b -DENV=K=V;K=V -DEXPECT=regex -P expect_failure.cmake
foreach(kv IN LISTS ENV)
  string(REGEX REPLACE "=.*" "" key "${kv}")
  string(REGEX REPLACE "^[^=]*=" "" value "${kv}")
  set(ENV{${key}} "${value}")
endforeach()
execute_process(COMMAND "${PROGRAM}" ${ARGS}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(result EQUAL 0)
  message(FATAL_ERROR "expected ${PROGRAM} to fail (${EXPECT}), but it ran clean:\n${all}")
endif()
if(NOT all MATCHES "${EXPECT}")
  message(FATAL_ERROR "${PROGRAM} failed (${result}), but not with '${EXPECT}':\n${all}")
endif()
string(REGEX MATCH "[^\n]*(${EXPECT})[^\n]*" line "${all}")
message(STATUS "caught as expected (${result}): ${line}")
