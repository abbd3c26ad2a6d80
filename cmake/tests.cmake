# Registers every test with ctest: C unit tests in tests/*.c and busted specs in
# spec/*_spec.lua (each spec file is one ctest test, run under LuaJIT with the freshly
# built library). One `ctest` run therefore gives the whole summary.
file(GLOB LUAMX_C_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_*.c)
foreach(src ${LUAMX_C_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE luamx_static)
  target_compile_options(${name} PRIVATE ${LUAMX_WARNINGS})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  add_test(NAME c_${name} COMMAND ${name})
  if(LUAMX_WITH_CUDA)
    target_compile_definitions(${name} PRIVATE LUAMX_WITH_CUDA $<$<BOOL:${LUAMX_CUDA_SIM}>:LUAMX_CUDA_SIM>)
  endif()
  if(LUAMX_CUDA_SIM)  # kernel tests reach the simulator's controls (lmx_sim.h)
    target_include_directories(${name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cuda/sim/include)
    if(name MATCHES "^test_cu_") # tests/test_cu_*.c run the CUDA kernels in two orders
      add_test(NAME c_${name}_reverse COMMAND ${name})
      set_tests_properties(c_${name}_reverse PROPERTIES ENVIRONMENT "LUAMX_SIM_ORDER=reverse")
    endif()
  endif()
endforeach()
# The gradient checker's device modes (tests/gradcheck_device.h): every op with a kernel
# on gpu(0) against the CPU (skips without a GPU context), and the same machinery with
# cpu(1) in the GPU's place, so it is exercised in every build.
# The cuDNN derivation test also checks the run-time switch where cuDNN is built in.
if(LUAMX_WITH_CUDNN)
  target_compile_definitions(test_cudnn_args PRIVATE LUAMX_HAVE_CUDNN)
  target_include_directories(test_cudnn_args PRIVATE ${CUDNN_INCLUDE_DIR})
  add_test(NAME c_test_cudnn_args_off COMMAND test_cudnn_args)
  set_tests_properties(c_test_cudnn_args_off PROPERTIES ENVIRONMENT "LUAMX_CUDNN=0")
endif()
add_test(NAME c_test_gradcheck_agree COMMAND test_gradcheck --agree)
add_test(NAME c_test_gradcheck_agree_self COMMAND test_gradcheck --agree-self)

# The CUDA simulator's own test and the kernel tests written as .cu (SIM build only):
# compiled as host C++ against the simulator's headers. Kernel tests run under two
# thread orders, so a missing barrier shows in one direction or the other.
if(LUAMX_CUDA_SIM)
  file(GLOB LUAMX_CU_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_*.cu)
  foreach(src ${LUAMX_CU_TESTS})
    get_filename_component(name ${src} NAME_WE)
    set_source_files_properties(${src} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE luamx_static)
    target_compile_options(${name} PRIVATE ${LUAMX_CXX_WARNINGS})
    target_include_directories(${name} BEFORE PRIVATE
      ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cuda/sim/include ${CMAKE_CURRENT_SOURCE_DIR}/src)
    add_test(NAME c_${name} COMMAND ${name})
    add_test(NAME c_${name}_reverse COMMAND ${name})
    set_tests_properties(c_${name}_reverse PROPERTIES ENVIRONMENT "LUAMX_SIM_ORDER=reverse")
  endforeach()
  # one simulated GPU with a small memory: the runtime's device count and capacity
  add_test(NAME c_test_cuda_sim_1gpu COMMAND test_cuda_sim)
  set_tests_properties(c_test_cuda_sim_1gpu PROPERTIES ENVIRONMENT
    "LUAMX_SIM_GPUS=1;LUAMX_SIM_GPU_MEM=16777216;LUAMX_SIM_ORDER=forward")
endif()

# The real CUDA build compiles the simulator's test kernels with nvcc (compile only: the
# machines that build it have no GPU), so the source the simulator runs is proven CUDA.
if(LUAMX_WITH_CUDA AND NOT LUAMX_CUDA_SIM)
  add_library(cuda_nvcc_check OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/tests/cuda_nvcc_check.cu)
  set_target_properties(cuda_nvcc_check PROPERTIES CUDA_ARCHITECTURES "80-real;90")
  target_include_directories(cuda_nvcc_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_compile_options(cuda_nvcc_check PRIVATE -std=c++17 -Xcompiler=-Wall,-Wextra
    ${LUAMX_NVCC_WERROR})
endif()

set(LUAMX_TEST_ENV
  "LUAMX_LIB=$<TARGET_FILE:luamx>"
  # semicolons escaped: ENVIRONMENT is itself a CMake list
  "LUA_PATH=${CMAKE_CURRENT_SOURCE_DIR}/lua/?.lua\\;${CMAKE_CURRENT_SOURCE_DIR}/lua/?/init.lua\\;${CMAKE_CURRENT_SOURCE_DIR}/spec/?.lua\\;\\;"
  "LUAMX_SOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}"
  "LUAMX_FIXTURES=${CMAKE_CURRENT_SOURCE_DIR}/spec/fixtures")
if(LUAMX_SANITIZE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE ASAN_LIB OUTPUT_STRIP_TRAILING_WHITESPACE)
  # LuaJIT is not instrumented: the ASan runtime must be loaded first. Specs test
  # out-of-memory paths with absurd sizes, so allocation failures return NULL.
  # libluamx is preloaded too, so it (and libgomp) stay mapped until exit and leak
  # reports symbolize instead of pointing at an unloaded module.
  list(APPEND LUAMX_TEST_ENV "LD_PRELOAD=${ASAN_LIB}:$<TARGET_FILE:luamx>"
    "ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:halt_on_error=1:exitcode=23"
    "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/tests/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=24")
endif()

file(GLOB LUAMX_SPECS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/spec/*_spec.lua)
if(BUSTED)
  foreach(spec ${LUAMX_SPECS})
    get_filename_component(name ${spec} NAME_WE)
    add_test(NAME ${name}
      COMMAND ${LUAJIT} ${BUSTED} --output=plainTerminal ${spec}
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${LUAMX_TEST_ENV}" TIMEOUT 900)
  endforeach()
else()
  message(WARNING "busted not found: the Lua specs are not registered")
endif()

# The numerical checks on both BLAS paths: a representative forward spec and the gradient
# checker with OpenBLAS's baseline kernels forced (OPENBLAS_CORETYPE=Prescott, SSE3), and
# with the kernels luamx chooses from the CPU's features (OPENBLAS_CORETYPE unset; the
# plain entries above follow whatever the caller's environment says). C tests load
# OpenBLAS without the Lua module: tests/blas_auto.sh makes the Lua module's decision first.
if(BUSTED)
  foreach(spec ops_forward_spec rnn_op_spec)
    add_test(NAME ${spec}_blas_baseline
      COMMAND ${LUAJIT} ${BUSTED} --output=plainTerminal spec/${spec}.lua
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(${spec}_blas_baseline PROPERTIES ENVIRONMENT "${LUAMX_TEST_ENV}" TIMEOUT 900)
    set_property(TEST ${spec}_blas_baseline APPEND PROPERTY ENVIRONMENT "OPENBLAS_CORETYPE=Prescott")
    add_test(NAME ${spec}_blas_auto
      COMMAND env -u OPENBLAS_CORETYPE -u LUAMX_BLAS_CORETYPE ${LUAJIT} ${BUSTED}
              --output=plainTerminal spec/${spec}.lua
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(${spec}_blas_auto PROPERTIES ENVIRONMENT "${LUAMX_TEST_ENV}" TIMEOUT 900)
  endforeach()
endif()
# The float32 numerical specs with every float32 product forced onto oneDNN
# (LUAMX_GEMM=dnnl; kernels/cpu/gemm_route.c) and onto OpenBLAS alone (LUAMX_GEMM=openblas);
# the plain entries run the automatic split by shape. models_torch_spec trains against
# PyTorch's figures, autograd_spec checks gradients, fuse_fc_act_spec the fused bias and
# activation epilogue, fuse_conv_chain_spec the convolutions' fused epilogue. The C
# gradient checker is float64, which always runs on OpenBLAS, so it is not repeated here. Where libdnnl.so.2 is absent the dnnl entries run on
# OpenBLAS (gemm_route_spec says whether oneDNN ran).
if(BUSTED)
  foreach(spec ops_forward_spec ops_loss_linalg_spec ops_attention_spec lowp_nn_spec
          autograd_spec models_torch_spec fuse_fc_act_spec fuse_conv_chain_spec)
    foreach(lib dnnl openblas)
      add_test(NAME ${spec}_gemm_${lib}
        COMMAND ${LUAJIT} ${BUSTED} --output=plainTerminal spec/${spec}.lua
        WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
      set_tests_properties(${spec}_gemm_${lib} PROPERTIES ENVIRONMENT "${LUAMX_TEST_ENV}" TIMEOUT 900)
      set_property(TEST ${spec}_gemm_${lib} APPEND PROPERTY ENVIRONMENT "LUAMX_GEMM=${lib}")
      if(LUAMX_SANITIZE AND lib STREQUAL "dnnl") # LeakSanitizer's exit check crashes with
        set_property(TEST ${spec}_gemm_${lib} APPEND PROPERTY ENVIRONMENT # oneDNN's threads
          "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:exitcode=23")
      endif()
    endforeach()
  endforeach()
endif()
add_test(NAME c_test_gradcheck_blas_baseline COMMAND test_gradcheck)
set_tests_properties(c_test_gradcheck_blas_baseline PROPERTIES ENVIRONMENT "OPENBLAS_CORETYPE=Prescott")
add_test(NAME c_test_gradcheck_blas_auto
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/blas_auto.sh ${LUAJIT} $<TARGET_FILE:test_gradcheck>)
set_tests_properties(c_test_gradcheck_blas_auto PROPERTIES ENVIRONMENT "${LUAMX_TEST_ENV}")

# The GPU runtime (src/device/cuda*.c) over a host fake of the CUDA runtime, in builds
# without CUDA (CUDA and simulator builds test the runtime itself): the runtime's own
# sources are compiled into the test with tests/fake_cuda first on the include path.
if(NOT LUAMX_WITH_CUDA)
  add_executable(test_cuda_fake tests/fake_cuda/test_cuda_fake.c tests/fake_cuda/fake_cudart.c
    src/device/cuda.c src/device/cuda_state.c src/device/cuda_copy.c)
  target_include_directories(test_cuda_fake BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests/fake_cuda)
  target_include_directories(test_cuda_fake PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
    ${CMAKE_CURRENT_SOURCE_DIR}/tests)
  target_compile_definitions(test_cuda_fake PRIVATE LUAMX_WITH_CUDA LMX_CUDA_RUNTIME_ONLY)
  target_compile_options(test_cuda_fake PRIVATE ${LUAMX_WARNINGS})
  target_link_libraries(test_cuda_fake PRIVATE luamx_static)
  add_test(NAME c_test_cuda_fake COMMAND test_cuda_fake)
endif()

# In the simulator, device memory is host memory: the runtime's out-of-memory checks
# run against small simulated GPUs (256 MiB) rather than the 2 GiB default.
if(LUAMX_CUDA_SIM)
  if(TEST gpu_runtime_spec)
    set_property(TEST gpu_runtime_spec APPEND PROPERTY ENVIRONMENT "LUAMX_SIM_GPU_MEM=268435456")
  endif()
  set_property(TEST c_test_cuda_runtime APPEND PROPERTY ENVIRONMENT "LUAMX_SIM_GPU_MEM=268435456")
  # the nccl kvstore on a machine with one GPU: both contexts are gpu(0), summed without NCCL
  if(BUSTED)
    add_test(NAME gpu_nccl_spec_1gpu
      COMMAND ${LUAJIT} ${BUSTED} --output=plainTerminal ${CMAKE_CURRENT_SOURCE_DIR}/spec/gpu_nccl_spec.lua
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(gpu_nccl_spec_1gpu PROPERTIES ENVIRONMENT "${LUAMX_TEST_ENV};LUAMX_SIM_GPUS=1"
      TIMEOUT 900)
  endif()
endif()

# Specs that start other programs (the luamx command, LDoc, gnuplot, Graphviz's dot):
# under the sanitizers those children inherit the preloaded ASan runtime, and its leak
# check at their exit reports what those programs (or a luamx process ended by os.exit,
# whose Lua state is never closed) still hold, which is no leak of ours. Memory errors are
# still caught there; leak checking stays on for every other spec.
if(LUAMX_SANITIZE)
  foreach(spec repl_spec everyday_spec docs_spec runtime_features_spec)
    if(TEST ${spec})
      set_property(TEST ${spec} APPEND PROPERTY ENVIRONMENT
        "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:exitcode=23")
    endif()
  endforeach()
endif()
