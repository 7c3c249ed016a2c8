// ARMv8.0 NEON kernels (every aarch64 CPU, e.g. Cortex-A53/A55): int8 dots with vmull_s8 and
// vpadalq_s16. The code lives in kernels_neon_body.h, shared with the dotprod build.
#include <arm_neon.h>

#include "kernel_table.h"

namespace hmllm {
namespace kern {
namespace {
#define HMLLM_NEON_DOTPROD 0
#include "kernels_neon_body.h"
}  // namespace

void fill_neon(KernelSet* ks) { fill_all(ks); }

}  // namespace kern
}  // namespace hmllm
