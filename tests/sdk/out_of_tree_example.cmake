# cmake -DPTDP_BUILD_DIR=... -DEXAMPLE_SOURCE_DIR=... -DWORK_DIR=... -DCXX_COMPILER=...
#       -DPLUGIN_INSTALL_DIR=... -P out_of_tree_example.cmake
# Installs the ptdp build to WORK_DIR/prefix, builds the example plugin against it in
# WORK_DIR/build, checks the installed ptdp-host lists it as a loadable scheduler, holds it to the
# installed scheduler conformance suite, and trains with it.
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/../support/build_against_install.cmake)

install_ptdp(${WORK_DIR})
set(build ${WORK_DIR}/build)
foreach(file include/ptdp/plugin.hpp include/ptdp/sdk.hpp bin/ptdp-host)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install lacks ${file}")
  endif()
endforeach()

# Every in-tree plugin of the build is installed next to the host.
file(GLOB built_plugins RELATIVE ${PTDP_BUILD_DIR}/lib/ptdp ${PTDP_BUILD_DIR}/lib/ptdp/libptdp-*.so)
file(GLOB installed_plugins RELATIVE ${prefix}/${PLUGIN_INSTALL_DIR} ${prefix}/${PLUGIN_INSTALL_DIR}/libptdp-*.so)
list(SORT built_plugins)
list(SORT installed_plugins)
if(NOT "${built_plugins}" STREQUAL "${installed_plugins}")
  message(FATAL_ERROR "installed plugins [${installed_plugins}] differ from built [${built_plugins}]")
endif()

# A fresh configure that can only find ptdp in the private prefix.
build_example(${EXAMPLE_SOURCE_DIR} ${build} libptdp-sched-gpipe.so)
set(plugin ${build}/libptdp-sched-gpipe.so)

run_step("ptdp-host plugins" ${CMAKE_COMMAND} -E env --unset=PTDP_PLUGIN_PATH
  ${prefix}/bin/ptdp-host plugins --json --path ${build})
set(doc "${step_output}")
string(JSON search_first GET "${doc}" search_path 0)
if(NOT search_first STREQUAL build)
  message(FATAL_ERROR "search path starts with ${search_first}, not ${build}")
endif()
string(JSON search_count LENGTH "${doc}" search_path)
set(found_install_dir OFF)
math(EXPR last "${search_count} - 1")
foreach(i RANGE ${last})
  string(JSON dir GET "${doc}" search_path ${i})
  if(dir STREQUAL "${prefix}/${PLUGIN_INSTALL_DIR}")
    set(found_install_dir ON)
  endif()
endforeach()
if(NOT found_install_dir)
  message(FATAL_ERROR "the installed host does not search ${prefix}/${PLUGIN_INSTALL_DIR}:\n${doc}")
endif()

string(JSON refused_count LENGTH "${doc}" refused)
if(refused_count GREATER 0)
  math(EXPR last "${refused_count} - 1")
  foreach(i RANGE ${last})
    string(JSON path GET "${doc}" refused ${i} path)
    if(path STREQUAL plugin)
      string(JSON error GET "${doc}" refused ${i} error)
      message(FATAL_ERROR "the example plugin was refused: ${error}")
    endif()
  endforeach()
endif()

# The ABI the installed SDK declares: the example is built against it.
file(STRINGS ${prefix}/include/ptdp/plugin.hpp abi_lines REGEX "^#define PTDP_ABI_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*PTDP_ABI_MAJOR ([0-9]+).*" "\\1" abi_major "${abi_lines}")
string(REGEX REPLACE ".*PTDP_ABI_MINOR ([0-9]+).*" "\\1" abi_minor "${abi_lines}")
set(sdk_abi "${abi_major}.${abi_minor}")

string(JSON plugin_count LENGTH "${doc}" plugins)
set(found OFF)
if(plugin_count GREATER 0)
  math(EXPR last "${plugin_count} - 1")
  foreach(i RANGE ${last})
    string(JSON path GET "${doc}" plugins ${i} path)
    if(path STREQUAL plugin)
      string(JSON name GET "${doc}" plugins ${i} name)
      string(JSON kind GET "${doc}" plugins ${i} kind)
      string(JSON abi GET "${doc}" plugins ${i} abi)
      if(NOT name STREQUAL "sched-gpipe" OR NOT kind STREQUAL "scheduler" OR NOT abi STREQUAL sdk_abi)
        message(FATAL_ERROR "the example loaded as ${name} (${kind}, ABI ${abi}), expected sched-gpipe (scheduler, ABI ${sdk_abi})")
      endif()
      set(found ON)
    endif()
  endforeach()
endif()
if(NOT found)
  message(FATAL_ERROR "ptdp-host plugins did not list ${plugin}:\n${doc}")
endif()

# The example is held to the scheduler conformance suite installed beside the host.
run_step("the installed scheduler conformance suite on the example" ${CMAKE_COMMAND} -E env
  PTDP_CONFORMANCE_SCHEDULER=${plugin} ${prefix}/bin/ptdp-scheduler-conformance)
if(NOT step_log MATCHES "\\[  PASSED  \\] [1-9][0-9]* tests")
  message(FATAL_ERROR "the scheduler conformance suite ran no test on the example:\n${step_log}")
endif()

# A manifest names the out-of-tree scheduler by path; the installed host verifies its schedule
# like a stock one's and trains two pipeline stages with it.
string(REPEAT "an out-of-tree scheduler trains this text. " 200 corpus)
file(WRITE ${WORK_DIR}/corpus.txt "${corpus}")
file(WRITE ${WORK_DIR}/gpipe.toml "[run]
steps = 2
[model]
layers = 2
hidden = 32
heads = 2
seq_len = 16
vocab = 256
[parallel]
pipeline = 2
micro_batch = 2
global_batch = 8
[data]
path = \"corpus.txt\"
[plugins]
communicator = \"comm-ucx\"
kernels = \"kernels-ref\"
scheduler = \"${plugin}\"
[launch]
nproc_per_node = 2
timeout_s = 30
")
run_step("ptdp-host run with the example scheduler" ${CMAKE_COMMAND} -E env --unset=PTDP_PLUGIN_PATH
  ${prefix}/bin/ptdp-host run ${WORK_DIR}/gpipe.toml)
if(NOT step_log MATCHES "schedule [^\n]*libptdp-sched-gpipe.so verified" OR NOT step_log MATCHES "step 2/2")
  message(FATAL_ERROR "the run with the example scheduler did not verify and train:\n${step_log}")
endif()

file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "sched-gpipe built against ${prefix}, loaded as a scheduler, verified and trained with")
