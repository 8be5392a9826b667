# check_handoff.cmake -- a region handed between threads gives its memory
# back, from a program built against the installed package.
#
# Installs the build into a scratch prefix, as check_install.cmake does,
# configures handoff/ as a project of its own against that prefix with
# find_package(giveback), builds it with warnings as errors and runs it.
# The program makes its own checks from what it measures in that run (every
# node found in the handed region from the consumer thread, the sum, the
# resident size before, at each round's end and after the last leave) and
# exits 0 only when they hold; this script also wants its last line "ok"
# and prints its output, the measured sizes in it.
#
# Inputs: SOURCE_DIR, BINARY_DIR, C_COMPILER.
cmake_minimum_required(VERSION 3.20)
foreach(var SOURCE_DIR BINARY_DIR C_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_handoff.cmake needs -D${var}=...")
  endif()
endforeach()

set(work ${BINARY_DIR}/install-handoff)
set(prefix ${work}/prefix)
file(REMOVE_RECURSE ${work})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}\n${out}")
endif()

set(dir ${work}/build)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/handoff -B ${dir}
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
                        "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "configuring the handoff client against the installed package failed\n${out}")
endif()
# The package must be the one just installed, not another on the machine.
file(STRINGS ${dir}/CMakeCache.txt found REGEX "^giveback_DIR:")
string(FIND "${found}" "${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the handoff client found giveback elsewhere: ${found}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${dir}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "building the handoff client failed\n${out}")
endif()

execute_process(COMMAND ${dir}/handoff_client RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "handoff_client:\n${out}${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "handoff_client failed (exit status ${rc})")
endif()
if(NOT out MATCHES "\nok\n$")
  message(FATAL_ERROR "handoff_client exited 0 without printing \"ok\" last")
endif()
message(STATUS "a region handed between threads of a program built against the "
               "installed package gave its memory back")
