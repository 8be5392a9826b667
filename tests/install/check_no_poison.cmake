# check_no_poison.cmake -- the shipped libraries hold no poison code.
#
# A poison replaces one fix object; whatever it needs beyond the mechanism
# the clean runtime uses itself must live in the poison, not in a shared
# file, or every shipped library carries it. This lists with nm:
#   - each poison object (POISON_OBJECTS): every global symbol it defines
#     or calls;
#   - each fix object (FIX_OBJECTS): the seams, which a poison defines too;
#   - each shipped library (LIBRARIES: libgiveback.so, libgiveback-static.a,
#     libgiveback-program.a): what it defines, and, in the static ones, what
#     its objects call.
# A symbol of a poison that no fix defines and no clean object calls is the
# poison's own; the test fails if a shipped library defines one. (A poison
# usually calls such code rather than defining it, e.g. a stack walk left in
# pin.c for the quadratic-walk poison alone: it is defined in the clean
# libraries, called by the poison only.)
#
# Inputs: NM, LIBRARIES, POISON_OBJECTS, FIX_OBJECTS, each list joined with
# "|" (ctest passes the arguments through).
cmake_minimum_required(VERSION 3.20)
foreach(var NM LIBRARIES POISON_OBJECTS FIX_OBJECTS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_no_poison.cmake needs -D${var}=...")
  endif()
  string(REPLACE "|" ";" ${var} "${${var}}")
endforeach()

# nm_symbols(<file> <defined-out> <undefined-out> <globals-only>) lists the
# symbols file defines and those it calls (POSIX format: name type ...).
function(nm_symbols file defined_out undefined_out globals_only)
  execute_process(COMMAND ${NM} -P ${file} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "${NM} -P ${file} failed: ${rc} ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(defined "")
  set(undefined "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^([^ ]+) ([A-Za-z?]) ")
      continue() # an archive member's heading, or empty
    endif()
    set(name "${CMAKE_MATCH_1}")
    set(type "${CMAKE_MATCH_2}")
    if(type STREQUAL "U" OR type STREQUAL "w" OR type STREQUAL "v")
      list(APPEND undefined "${name}")
    elseif(NOT globals_only OR type MATCHES "^[A-Z]$")
      list(APPEND defined "${name}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES defined)
  list(REMOVE_DUPLICATES undefined)
  set(${defined_out} "${defined}" PARENT_SCOPE)
  set(${undefined_out} "${undefined}" PARENT_SCOPE)
endfunction()

set(seams "")
foreach(obj IN LISTS FIX_OBJECTS)
  nm_symbols(${obj} def undef TRUE)
  list(APPEND seams ${def})
endforeach()

set(clean_calls "")
set(clean_defs "")
foreach(lib IN LISTS LIBRARIES)
  nm_symbols(${lib} def undef FALSE)
  list(APPEND clean_calls ${undef})
  set(defs_${lib} "${def}")
endforeach()

set(failures "")
set(npoison 0)
foreach(obj IN LISTS POISON_OBJECTS)
  nm_symbols(${obj} def undef TRUE)
  get_filename_component(name ${obj} NAME)
  foreach(sym IN LISTS def undef)
    if(sym IN_LIST seams OR sym IN_LIST clean_calls)
      continue()
    endif()
    math(EXPR npoison "${npoison} + 1")
    foreach(lib IN LISTS LIBRARIES)
      if(sym IN_LIST defs_${lib})
        get_filename_component(libname ${lib} NAME)
        list(APPEND failures "${sym} (used by ${name} alone) is defined in ${libname}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "poison-only code in the shipped libraries:\n  ${text}")
endif()
list(LENGTH POISON_OBJECTS nobj)
list(LENGTH LIBRARIES nlib)
message(STATUS "no poison-only symbol in ${nlib} shipped libraries "
               "(${npoison} poison-only symbols of ${nobj} poison objects checked)")
