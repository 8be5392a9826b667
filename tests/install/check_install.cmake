# check_install.cmake -- the installed package works from outside the tree.
#
# Installs the build into a scratch prefix, then builds the tiny client in
# consumer/ against the installed header and libraries in every way the
# README's Install section offers, runs each, and checks that it prints the
# build kind it linked ("library" or "program") and that only the shared
# library's clients depend on libgiveback at run time:
#   find_package   giveback::giveback          library, shared
#                  giveback::giveback_static   library, static
#                  giveback::program           program, static
#   pkg-config     giveback                    library, shared (rpath; and
#                                              LD_LIBRARY_PATH instead)
#                  giveback-static             library, static (with and
#                                              without --static)
#                  giveback-program            program, static (with and
#                                              without --static)
# and then again from a copy of the prefix made elsewhere, the original
# removed: the package is relocatable.
#
# Inputs: SOURCE_DIR, BINARY_DIR, C_COMPILER, VERSION (the project's),
# LIBDIR and INCLUDEDIR (CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR).
cmake_minimum_required(VERSION 3.20)
foreach(var SOURCE_DIR BINARY_DIR C_COMPILER VERSION LIBDIR INCLUDEDIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_install.cmake needs -D${var}=...")
  endif()
endforeach()
# An absolute directory would be installed into as it stands, outside the
# scratch prefix, so the test would write into the machine's own tree.
if(IS_ABSOLUTE "${LIBDIR}" OR IS_ABSOLUTE "${INCLUDEDIR}")
  message(FATAL_ERROR "CMAKE_INSTALL_LIBDIR (${LIBDIR}) and CMAKE_INSTALL_INCLUDEDIR "
    "(${INCLUDEDIR}) must be relative for the install test's scratch prefix")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/client.cmake)
set(work ${BINARY_DIR}/install-check)
set(prefix ${work}/prefix)
set(libdir ${prefix}/${LIBDIR})
gb_install_into(${work} ${prefix})

# The files the README names. The static archives have names of their own,
# so that -lgiveback means the shared library and nothing else.
if(CMAKE_HOST_APPLE)
  set(shared libgiveback.dylib)
else()
  set(shared libgiveback.so)
endif()
foreach(file ${INCLUDEDIR}/giveback.h ${LIBDIR}/${shared} ${LIBDIR}/libgiveback-static.a
             ${LIBDIR}/libgiveback-program.a ${LIBDIR}/cmake/giveback/givebackConfig.cmake
             ${LIBDIR}/pkgconfig/giveback.pc ${LIBDIR}/pkgconfig/giveback-static.pc
             ${LIBDIR}/pkgconfig/giveback-program.pc)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()
if(EXISTS ${libdir}/libgiveback.a)
  message(FATAL_ERROR "the install has a libgiveback.a beside the shared library; "
    "-lgiveback would no longer say which one it means")
endif()

# check_deps(<exe> <shared|static> <what>) fails unless exe depends on
# libgiveback at run time exactly when it linked the shared library.
if(CMAKE_HOST_APPLE)
  find_program(OTOOL otool REQUIRED)
else()
  find_program(READELF NAMES readelf llvm-readelf REQUIRED)
endif()
function(check_deps exe linkage what)
  if(CMAKE_HOST_APPLE)
    execute_process(COMMAND ${OTOOL} -L ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
    # The first line names the file itself.
    string(REGEX REPLACE "^[^\n]*\n" "" out "${out}")
  else()
    execute_process(COMMAND ${READELF} -d ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  endif()
  if(rc)
    message(FATAL_ERROR "${what}: cannot list the dynamic dependencies of ${exe}")
  endif()
  if(linkage STREQUAL "shared" AND NOT out MATCHES "libgiveback[.]")
    message(FATAL_ERROR "${what}: linked the shared library but does not depend on it:\n${out}")
  elseif(linkage STREQUAL "static" AND out MATCHES "libgiveback")
    message(FATAL_ERROR "${what}: linked a static archive but depends on libgiveback:\n${out}")
  endif()
endfunction()

# check_run(<what> <kind> <command>...) runs the client and fails unless it
# exits 0 (every byte given back) and prints the version and build kind.
function(check_run what kind)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE "." "[.]" version "${VERSION}")
  if(rc OR NOT out MATCHES "^giveback ${version} ${kind}\n$")
    message(FATAL_ERROR "${what}: expected \"giveback ${VERSION} ${kind}\", "
      "got exit ${rc}, output \"${out}\" ${err}")
  endif()
  message(STATUS "${what}: ${kind}")
endfunction()

set(consumer ${SOURCE_DIR}/tests/install/consumer)

# find_package, one client per exported target.
foreach(case "giveback::giveback|library|shared" "giveback::giveback_static|library|static"
             "giveback::program|program|static")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 target)
  list(GET case 1 kind)
  list(GET case 2 linkage)
  string(REPLACE "::" "-" name "${target}")
  set(what "find_package ${target}")
  set(dir ${work}/${name})
  gb_client_build("${what}" ${consumer} ${dir} ${prefix} ${libdir}/cmake/giveback -DGB_TARGET=${target})
  check_deps(${dir}/consumer ${linkage} "${what}")
  # The shared client finds the library through the rpath CMake gives a
  # program in its build tree, with no LD_LIBRARY_PATH.
  check_run("${what}" ${kind} ${dir}/consumer)
endforeach()

# pkg-config, found the way the README says: PKG_CONFIG_PATH.
find_program(PKG_CONFIG pkg-config)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config is not installed (ci/install-deps.sh base installs it)")
endif()
set(ENV{PKG_CONFIG_PATH} ${libdir}/pkgconfig)
# pkg_flags(<out> <args>...) is pkg-config's output for args, as a list.
function(pkg_flags out)
  execute_process(COMMAND ${PKG_CONFIG} ${ARGN} OUTPUT_VARIABLE flags ERROR_VARIABLE err
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc)
    message(FATAL_ERROR "pkg-config ${ARGN} failed: ${err}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()
# build(<what> <exe> <flags>...) compiles the client with the flags.
function(build what exe)
  execute_process(COMMAND ${C_COMPILER} ${consumer}/main.c ${ARGN} -o ${exe}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${what}: building the client failed: ${C_COMPILER} "
      "${consumer}/main.c ${ARGN} -o ${exe}\n${out}")
  endif()
endfunction()

foreach(module giveback giveback-static giveback-program)
  foreach(var prefix libdir includedir)
    pkg_flags(value --variable=${var} ${module})
    set(pc_${var} "${value}")
  endforeach()
  pkg_flags(pc_version --modversion ${module})
  # The modules find the prefix from where they lie (${pcfiledir}/../..),
  # so the paths are compared once resolved.
  foreach(var prefix libdir includedir)
    get_filename_component(pc_${var} "${pc_${var}}" REALPATH)
  endforeach()
  if(NOT pc_prefix STREQUAL prefix OR NOT pc_libdir STREQUAL libdir
     OR NOT pc_includedir STREQUAL "${prefix}/${INCLUDEDIR}" OR NOT pc_version STREQUAL VERSION)
    message(FATAL_ERROR "pkg-config ${module}: prefix ${pc_prefix}, libdir ${pc_libdir}, "
      "includedir ${pc_includedir}, version ${pc_version}; expected ${prefix}, ${libdir}, "
      "${prefix}/${INCLUDEDIR}, ${VERSION}")
  endif()
endforeach()

# The shared library: with an rpath, then with none and LD_LIBRARY_PATH
# (DYLD_LIBRARY_PATH on macOS), the README's two ways to find it.
pkg_flags(flags --cflags --libs giveback)
set(what "pkg-config giveback")
build("${what}" ${work}/pc-shared-rpath ${flags} -Wl,-rpath,${libdir})
check_deps(${work}/pc-shared-rpath shared "${what}")
check_run("${what} (rpath)" library ${work}/pc-shared-rpath)
build("${what}" ${work}/pc-shared ${flags})
if(CMAKE_HOST_APPLE)
  set(path_var DYLD_LIBRARY_PATH)
else()
  set(path_var LD_LIBRARY_PATH)
endif()
check_run("${what} (${path_var})" library ${CMAKE_COMMAND} -E env ${path_var}=${libdir} ${work}/pc-shared)

# The static archives, each with and without --static: their modules list
# what they need in Libs, so a link without --static works too.
foreach(case "giveback-static|library" "giveback-program|program")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 module)
  list(GET case 1 kind)
  foreach(static --static "")
    pkg_flags(flags ${static} --cflags --libs ${module})
    if(static)
      set(what "pkg-config --static ${module}")
      set(exe ${work}/pc-${module}-with-static)
    else()
      set(what "pkg-config ${module}")
      set(exe ${work}/pc-${module})
    endif()
    build("${what}" ${exe} ${flags})
    check_deps(${exe} static "${what}")
    check_run("${what}" ${kind} ${exe})
  endforeach()
endforeach()

# Relocated: the whole prefix copied elsewhere still builds its clients,
# through pkg-config (the modules name no absolute path) and through
# find_package (CMake's package finds its prefix from where it lies).
set(moved ${work}/moved)
file(COPY ${prefix}/ DESTINATION ${moved})
file(REMOVE_RECURSE ${prefix})
set(ENV{PKG_CONFIG_PATH} ${moved}/${LIBDIR}/pkgconfig)
foreach(case "giveback-static|library" "giveback-program|program")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 module)
  list(GET case 1 kind)
  set(what "pkg-config ${module}, the prefix moved")
  pkg_flags(flags --cflags --libs ${module})
  build("${what}" ${work}/moved-${module} ${flags})
  check_run("${what}" ${kind} ${work}/moved-${module})
endforeach()
pkg_flags(flags --cflags --libs giveback)
set(what "pkg-config giveback, the prefix moved")
build("${what}" ${work}/moved-shared ${flags} -Wl,-rpath,${moved}/${LIBDIR})
check_run("${what}" library ${work}/moved-shared)
set(dir ${work}/moved-find-package)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${consumer} -B ${dir} -DCMAKE_PREFIX_PATH=${moved}
                        -DCMAKE_C_COMPILER=${C_COMPILER} -DGB_TARGET=giveback::program
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
endif()
if(rc)
  message(FATAL_ERROR "find_package giveback::program, the prefix moved: the client did not build\n${out}")
endif()
check_run("find_package giveback::program, the prefix moved" program ${dir}/consumer)

message(STATUS "the installed package builds and runs from find_package (3 targets) "
               "and pkg-config (3 modules), shared and static, both builds, and moved")
