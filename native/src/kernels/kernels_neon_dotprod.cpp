// NEON kernels with the ARMv8.2 dot-product extension (vdotq_s32, Cortex-A76/A78/X1 and newer).
// Compiled with -march=armv8.2-a+dotprod and only called when HWCAP_ASIMDDP is reported: a
// Cortex-A53 would die with SIGILL here. Everything is file-local for that reason.
#include <arm_neon.h>

#include "kernel_table.h"

namespace hmllm {
namespace kern {
namespace {
#define HMLLM_NEON_DOTPROD 1
#include "kernels_neon_body.h"
}  // namespace

void fill_neon_dotprod(KernelSet* ks) { fill_all(ks); }

}  // namespace kern
}  // namespace hmllm
