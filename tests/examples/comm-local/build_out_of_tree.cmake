# cmake -DPTDP_BUILD_DIR=... -DEXAMPLE_SOURCE_DIR=... -DWORK_DIR=... -DCXX_COMPILER=... -P build_out_of_tree.cmake
# Installs the ptdp build to WORK_DIR/prefix and builds the example communicator against that
# prefix alone, with a fresh CMake, in WORK_DIR/build. The tests after it use both.
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run_step("install of ${PTDP_BUILD_DIR}" ${CMAKE_COMMAND} --install ${PTDP_BUILD_DIR} --prefix ${prefix})
run_step("configure of ${EXAMPLE_SOURCE_DIR}" ${CMAKE_COMMAND}
  -S ${EXAMPLE_SOURCE_DIR} -B ${build}
  -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"
  -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${build}/CMakeCache.txt ptdp_dir_line REGEX "^ptdp_DIR:")
if(NOT ptdp_dir_line MATCHES "=${prefix}/")
  message(FATAL_ERROR "the example found ptdp elsewhere: ${ptdp_dir_line}")
endif()
run_step("build of the example" ${CMAKE_COMMAND} --build ${build})
if(NOT EXISTS ${build}/libptdp-comm-local.so)
  message(FATAL_ERROR "the example built no ${build}/libptdp-comm-local.so")
endif()
message(STATUS "comm-local built against ${prefix}: ${build}/libptdp-comm-local.so")
