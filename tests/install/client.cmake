# client.cmake -- what the install checks share: the build installed into
# a scratch prefix, and a client project built against it with
# find_package(giveback). Included by check_install.cmake and
# check_handoff.cmake, which define SOURCE_DIR, BINARY_DIR and C_COMPILER.

# Empties work and installs BINARY_DIR into prefix, under it.
function(gb_install_into work prefix)
  file(REMOVE_RECURSE ${work})
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "cmake --install failed: ${rc}\n${out}")
  endif()
endfunction()

# gb_client_build(<what> <source> <dir> <prefix> <package-dir> [cache args...])
# configures the project in source, in dir, against the package installed
# in prefix (with the cache arguments after package-dir), fails unless the
# giveback package it found is package-dir (the one just installed, not
# another on the machine), and builds it. what names the client in every
# failure.
function(gb_client_build what source dir prefix package)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${source} -B ${dir} -DCMAKE_PREFIX_PATH=${prefix}
                          -DCMAKE_C_COMPILER=${C_COMPILER} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${what}: configuring the client failed\n${out}")
  endif()
  file(STRINGS ${dir}/CMakeCache.txt found REGEX "^giveback_DIR:")
  if(NOT found STREQUAL "giveback_DIR:PATH=${package}")
    message(FATAL_ERROR "${what}: found another giveback package: ${found}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${what}: building the client failed\n${out}")
  endif()
endfunction()
