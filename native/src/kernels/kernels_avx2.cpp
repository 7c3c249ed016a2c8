#include "kernel_table.h"
namespace hmllm { namespace kern { void fill_avx2(KernelSet*) {} } }
