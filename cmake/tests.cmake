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
  endif()
endforeach()
# The gradient checker's device modes (tests/gradcheck_device.h): every op with a kernel
# on gpu(0) against the CPU (skips without a GPU context), and the same machinery with
# cpu(1) in the GPU's place, so it is exercised in every build.
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
