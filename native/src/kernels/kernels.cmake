# Tensor kernels: included by native/CMakeLists.txt right after add_library(hmllm). Portable code
# builds with the target's baseline flags; each instruction-set file gets its own flags and is
# only called after cpu_features() has reported that extension, so one binary runs everywhere.
# Every set must give bitwise the scalar reference's results (kernel_table.h), so no kernel file
# may let the compiler contract a*b+c into an fma: -ffp-contract=off, set for the whole target,
# is repeated in the per-file flags so that these files keep it even when built elsewhere.
set(HMLLM_KERNEL_DIR ${CMAKE_CURRENT_LIST_DIR})
target_sources(hmllm PRIVATE
    ${HMLLM_KERNEL_DIR}/cpu_features.cpp
    ${HMLLM_KERNEL_DIR}/dispatch.cpp
    ${HMLLM_KERNEL_DIR}/kernels_scalar.cpp)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    target_sources(hmllm PRIVATE
        ${HMLLM_KERNEL_DIR}/kernels_neon.cpp
        ${HMLLM_KERNEL_DIR}/kernels_neon_dotprod.cpp
        ${HMLLM_KERNEL_DIR}/kernels_neon_i8mm.cpp)
    # zig cc (HMLLM_ZIG, set by hmbuild's zig toolchain) reads -march as a CPU name; it takes
    # LLVM's cpu+feature form for the same instructions.
    if(HMLLM_ZIG)
        set(HMLLM_DOTPROD_FLAG "-mcpu=generic+v8_2a+dotprod")
        set(HMLLM_I8MM_FLAG "-mcpu=generic+v8_2a+dotprod+i8mm")
    else()
        set(HMLLM_DOTPROD_FLAG "-march=armv8.2-a+dotprod")
        set(HMLLM_I8MM_FLAG "-march=armv8.2-a+dotprod+i8mm")
    endif()
    set_source_files_properties(${HMLLM_KERNEL_DIR}/kernels_neon_dotprod.cpp
        PROPERTIES COMPILE_OPTIONS "${HMLLM_DOTPROD_FLAG};-ffp-contract=off")
    set_source_files_properties(${HMLLM_KERNEL_DIR}/kernels_neon_i8mm.cpp
        PROPERTIES COMPILE_OPTIONS "${HMLLM_I8MM_FLAG};-ffp-contract=off")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    target_sources(hmllm PRIVATE ${HMLLM_KERNEL_DIR}/kernels_avx2.cpp)
    set_source_files_properties(${HMLLM_KERNEL_DIR}/kernels_avx2.cpp
        PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-ffp-contract=off")
endif()
