# check_no_checks.cmake -- the shipped libraries hold none of the runtime's
# debug checks (runtime/src/check.h): a build without GB_CHECK compiles
# GB__ASSERT to nothing and leaves check.c out, so none of its symbols
# (gb__assert_fail, the gb__*_check checkers, gb__check_*) may be defined
# or called by libgiveback.so, libgiveback-static.a or libgiveback-program.a.
#
# Inputs: NM, LIBRARIES (joined with "|").
cmake_minimum_required(VERSION 3.20)
foreach(var NM LIBRARIES)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_no_checks.cmake needs -D${var}=...")
  endif()
endforeach()
string(REPLACE "|" ";" LIBRARIES "${LIBRARIES}")

set(found "")
foreach(lib IN LISTS LIBRARIES)
  execute_process(COMMAND ${NM} -P ${lib} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "${NM} -P ${lib} failed: ${rc} ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^_?(gb__assert_fail|gb__check_[A-Za-z0-9_]+|gb__[A-Za-z0-9_]+_check) ")
      list(APPEND found "${lib}: ${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES found)
if(found)
  list(JOIN found "\n  " list)
  message(FATAL_ERROR "shipped libraries built without GB_CHECK hold debug checks:\n  ${list}")
endif()
list(LENGTH LIBRARIES n)
message(STATUS "no debug checks in the ${n} shipped libraries")
