#include "kernel_table.h"
namespace hmllm { namespace kern { void fill_neon_i8mm(KernelSet*) {} } }
