# Per-file optimisation of the CPU kernels (kernels/cpu/*.c): -O3.
# At the project's -O2, GCC 12 vectorises none of the elementwise loops (its "very cheap"
# cost model will not version a loop for possible aliasing between the output and the
# inputs); at -O3 it does (measured with -fopt-info-vec and bench/ops.lua). The rest of
# the engine keeps the project's flags. -fno-math-errno lets sqrt vectorise and
# -fno-trapping-math lets comparisons if-convert inside loops (cpu_math.h's exp; the kernels
# neither read errno nor trap on FP exceptions); NaN/inf semantics stay exact (no
# -ffast-math).
file(GLOB LUAMX_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cpu/*.c)
set_source_files_properties(${LUAMX_KERNEL_SOURCES} TARGET_DIRECTORY luamx_obj
  PROPERTIES COMPILE_OPTIONS "-O3;-fno-math-errno;-fno-trapping-math")
# im2col / col2im copy rows of out-width elements (8 floats for LeNet's second
# convolution): GCC's loop-distribution turns those loops into memcpy calls, and the call,
# the vector-register spills around it and vzeroupper cost more than the copy (perf: 35%
# of a LeNet conv2 forward). Keep them as inline vector loops.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cpu/conv.c TARGET_DIRECTORY luamx_obj
    APPEND PROPERTY COMPILE_OPTIONS "-fno-tree-loop-distribute-patterns")
endif()
