# GPU delivery. The host code is always built: it reaches the CUDA driver through
# dlopen at run time, so the extension imports and the CPU paths work without CUDA.
# The GPUDirect reorder kernels are compiled by nvcc into a fatbin (sm_90 machine
# code + compute_90 PTX) and embedded, when an nvcc is found: CUDACXX, CUDA_HOME,
# PATH, /usr/local/cuda, or the nvidia-cuda-nvcc wheel of the building Python.
target_sources(casper400g_rx_engine PRIVATE
  src/chunk_router.cpp
  src/cuda_chunks.cpp
  src/cuda_delivery.cpp
  src/cuda_driver.cpp
  src/cuda_fatbin.cpp
  src/cuda_gpudirect.cpp
  src/emu_source.cpp
  src/host_lanes.cpp
  src/lane_queue.cpp
  src/staged_lanes.cpp
)
target_sources(_core PRIVATE src/cuda_bindings.cpp src/lanes_bindings.cpp)
target_link_libraries(casper400g_rx_engine PUBLIC ${CMAKE_DL_LIBS})

option(CASPER400G_RX_CUDA_KERNELS "Compile the GPUDirect kernels when nvcc is found" ON)
option(CASPER400G_RX_REQUIRE_CUDA_KERNELS "Fail the build when nvcc is not found" OFF)

if(CASPER400G_RX_CUDA_KERNELS)
  set(_nvcc_hints "")
  if(DEFINED ENV{CUDACXX})
    get_filename_component(_d "$ENV{CUDACXX}" DIRECTORY)
    list(APPEND _nvcc_hints "${_d}")
  endif()
  if(DEFINED ENV{CUDA_HOME})
    list(APPEND _nvcc_hints "$ENV{CUDA_HOME}/bin")
  endif()
  list(APPEND _nvcc_hints /usr/local/cuda/bin)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import os, nvidia; print(';'.join(os.path.join(p, 'cu13', 'bin') for p in nvidia.__path__))"
    OUTPUT_VARIABLE _wheel_bins OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  list(APPEND _nvcc_hints ${_wheel_bins})
  find_program(CASPER400G_RX_NVCC nvcc HINTS ${_nvcc_hints})
endif()

if(CASPER400G_RX_NVCC)
  set(_fatbin "${CMAKE_CURRENT_BINARY_DIR}/casper400g_rx_kernels.fatbin")
  add_custom_command(
    OUTPUT "${_fatbin}"
    COMMAND "${CASPER400G_RX_NVCC}" -std=c++17 -O3 -fatbin
            "-I${CMAKE_CURRENT_SOURCE_DIR}/include"
            -gencode arch=compute_90,code=sm_90
            -gencode arch=compute_90,code=compute_90
            -o "${_fatbin}" "${CMAKE_CURRENT_SOURCE_DIR}/src/cuda_kernels.cu"
    DEPENDS src/cuda_kernels.cu src/rdma_kernels.cuh include/casper400g_rx/cuda_kernels.h
            include/casper400g_rx/gd_spead.h
            include/casper400g_rx/cuda_driver.h
    COMMENT "nvcc: GPUDirect reorder kernels (sm_90 + PTX)"
    VERBATIM)
  add_custom_target(casper400g_rx_kernels DEPENDS "${_fatbin}")
  add_dependencies(casper400g_rx_engine casper400g_rx_kernels)
  set_source_files_properties(src/cuda_fatbin.cpp PROPERTIES
    OBJECT_DEPENDS "${_fatbin}"
    COMPILE_DEFINITIONS "CASPER400G_RX_FATBIN=\"${_fatbin}\"")
  message(STATUS "casper400g_rx: GPUDirect kernels compiled with ${CASPER400G_RX_NVCC}")
elseif(CASPER400G_RX_REQUIRE_CUDA_KERNELS)
  message(FATAL_ERROR "casper400g_rx: nvcc not found (CASPER400G_RX_REQUIRE_CUDA_KERNELS=ON)")
else()
  message(STATUS "casper400g_rx: no nvcc found; building without the GPUDirect kernels")
endif()
