#include "kernel_table.h"
namespace hmllm { namespace kern { void fill_neon_dotprod(KernelSet*) {} } }
