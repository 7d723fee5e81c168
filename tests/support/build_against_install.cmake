# Included by the -P scripts that build an example plugin out of tree, the way an outside author
# does: install the ptdp build to a private prefix and build the example against that prefix
# alone, with a fresh CMake that cannot find ptdp anywhere else.

# Runs a command; fails the script with its output unless it succeeds. Leaves its stdout in
# step_output and stdout + stderr in step_log.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
  set(step_log "${out}${err}" PARENT_SCOPE)
endfunction()

# Installs PTDP_BUILD_DIR to <work_dir>/prefix (set in `prefix`), wiping work_dir first.
function(install_ptdp work_dir)
  set(prefix ${work_dir}/prefix)
  file(REMOVE_RECURSE ${work_dir})
  file(MAKE_DIRECTORY ${work_dir})
  run_step("install of ${PTDP_BUILD_DIR}" ${CMAKE_COMMAND} --install ${PTDP_BUILD_DIR} --prefix ${prefix})
  set(prefix ${prefix} PARENT_SCOPE)
endfunction()

# Configures and builds the example in `source` against `prefix` into `build`, extra CMake
# arguments after; fails unless it found ptdp in the prefix and built <build>/<library>.
function(build_example source build library)
  run_step("configure of ${source}" ${CMAKE_COMMAND}
    -S ${source} -B ${build}
    -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    ${ARGN})
  file(STRINGS ${build}/CMakeCache.txt ptdp_dir_line REGEX "^ptdp_DIR:")
  if(NOT ptdp_dir_line MATCHES "=${prefix}/")
    message(FATAL_ERROR "the example found ptdp elsewhere: ${ptdp_dir_line}")
  endif()
  run_step("build of the example" ${CMAKE_COMMAND} --build ${build})
  if(NOT EXISTS ${build}/${library})
    message(FATAL_ERROR "the example built no ${build}/${library}")
  endif()
endfunction()
