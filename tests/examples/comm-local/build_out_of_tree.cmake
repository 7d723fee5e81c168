# cmake -DPTDP_BUILD_DIR=... -DEXAMPLE_SOURCE_DIR=... -DWORK_DIR=... -DCXX_COMPILER=... -P build_out_of_tree.cmake
# Installs the ptdp build to WORK_DIR/prefix and builds the example communicator against that
# prefix alone, with a fresh CMake, in WORK_DIR/build. The tests after it use both.
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/../../support/build_against_install.cmake)

install_ptdp(${WORK_DIR})
set(build ${WORK_DIR}/build)
build_example(${EXAMPLE_SOURCE_DIR} ${build} libptdp-comm-local.so "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror")
message(STATUS "comm-local built against ${prefix}: ${build}/libptdp-comm-local.so")
