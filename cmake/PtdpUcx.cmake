# Finds UCX for comm-ucx. With CUDA: the UCX of PyPI's libucx-cu13 wheel, built with the cuda_copy
# and cuda_ipc transports (scripts/setup.sh unpacks it into .deps/ucx), so that comm-ucx moves
# CUDA memory and several ranks can share one GPU. Otherwise, or when the wheel is missing,
# Debian's UCX, whose transports move host memory only. Sets PTDP_UCX_CUDA.
set(PTDP_UCX_CUDA OFF)
set(_ptdp_ucx_wheel ${PROJECT_SOURCE_DIR}/.deps/ucx/libucx/lib/cmake/ucx)
if(PTDP_HAVE_CUDA AND EXISTS ${_ptdp_ucx_wheel}/ucx-config.cmake)
  set(ucx_DIR ${_ptdp_ucx_wheel} CACHE PATH "UCX's CMake package" FORCE)
  find_package(ucx CONFIG REQUIRED)
  set(PTDP_UCX_CUDA ON)
  message(STATUS "ptdp: comm-ucx moves host and CUDA memory (UCX ${ucx_VERSION} of the libucx-cu13 wheel)")
else()
  if(ucx_DIR STREQUAL _ptdp_ucx_wheel OR ucx_DIR MATCHES "/[.]deps/ucx/")
    unset(ucx_DIR CACHE)  # an earlier configure found the wheel, which is gone now
  endif()
  find_package(ucx REQUIRED)
  if(PTDP_HAVE_CUDA)
    message(STATUS "ptdp: comm-ucx moves host memory only: no libucx-cu13 UCX in .deps/ucx (scripts/setup.sh)")
  endif()
endif()
