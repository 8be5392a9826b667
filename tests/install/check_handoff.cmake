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
# Inputs: SOURCE_DIR, BINARY_DIR, C_COMPILER, LIBDIR (CMAKE_INSTALL_LIBDIR).
cmake_minimum_required(VERSION 3.20)
foreach(var SOURCE_DIR BINARY_DIR C_COMPILER LIBDIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_handoff.cmake needs -D${var}=...")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/client.cmake)

set(work ${BINARY_DIR}/install-handoff)
set(prefix ${work}/prefix)
gb_install_into(${work} ${prefix})
set(dir ${work}/build)
gb_client_build("the handoff client" ${SOURCE_DIR}/tests/install/handoff ${dir} ${prefix}
                ${prefix}/${LIBDIR}/cmake/giveback "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror")

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
