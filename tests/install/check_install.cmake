# check_install.cmake -- the installed package works from outside the tree.
#
# Installs the build into a scratch prefix, then builds a tiny consumer
# twice: with find_package(giveback) linking giveback::giveback, and with
# pkg-config's flags, and runs both.
set(prefix ${BINARY_DIR}/install-check/prefix)
set(work ${BINARY_DIR}/install-check)
file(REMOVE_RECURSE ${work})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

set(consumer ${SOURCE_DIR}/tests/install/consumer)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${consumer} -B ${work}/consumer
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the find_package consumer failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${work}/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the find_package consumer failed")
endif()
execute_process(COMMAND ${work}/consumer/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "giveback 0\\.1\\.0 library")
  message(FATAL_ERROR "the find_package consumer did not run: ${rc} ${out}")
endif()

find_program(PKG_CONFIG pkg-config)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config is not installed (ci/install-deps.sh base installs it)")
endif()
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig:${prefix}/lib64/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs giveback OUTPUT_VARIABLE flags
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc)
  message(FATAL_ERROR "pkg-config does not find giveback")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${C_COMPILER} ${consumer}/main.c ${flags} -Wl,-rpath,${prefix}/lib
                        -o ${work}/pc-consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building with pkg-config's flags failed")
endif()
execute_process(COMMAND ${work}/pc-consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "giveback 0\\.1\\.0 library")
  message(FATAL_ERROR "the pkg-config consumer did not run: ${rc} ${out}")
endif()
message(STATUS "installed package found and linked by find_package and pkg-config")
