# check_examples.cmake -- the examples build against the installed package
# and keep their promises.
#
# Installs the build into a scratch prefix, as tests/install does, then
# configures examples/ as a project of its own against that prefix, builds
# it with warnings as errors, and runs each example: each must exit 0 and
# print something. Called with SOURCE_DIR, BINARY_DIR and C_COMPILER.
if(NOT DEFINED WORK_NAME)
  set(WORK_NAME examples-check)
endif()
set(work ${BINARY_DIR}/${WORK_NAME})
set(prefix ${work}/prefix)
file(REMOVE_RECURSE ${work})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${work}/build
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
                        "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring examples/ against the installed package failed")
endif()
# The package must be the one just installed, not another on the machine.
file(STRINGS ${work}/build/CMakeCache.txt found REGEX "^giveback_DIR:")
string(FIND "${found}" "${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "examples/ found giveback elsewhere: ${found}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${work}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building examples/ failed")
endif()

# EXAMPLES names the programs to run (default: the four that need only
# giveback and the platform's threads); lua_state is built only where Lua
# 5.4 is found, and a missing one is reported as skipped, with the reason,
# for ctest to count.
if(NOT DEFINED EXAMPLES)
  set(EXAMPLES request_loop interpreter enumerator request_handoff)
endif()
foreach(example ${EXAMPLES})
  if(NOT EXISTS ${work}/build/${example})
    message(STATUS "examples: skipped: ${example} was not built (see the configure output above)")
    return()
  endif()
  execute_process(COMMAND ${work}/build/${example} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${example}:\n${out}${err}")
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${example} failed (exit status ${rc})")
  endif()
  if(out STREQUAL "")
    message(FATAL_ERROR "${example} printed nothing")
  endif()
endforeach()
message(STATUS "the examples built against the installed package and ran")
