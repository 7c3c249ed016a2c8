#include "kernel_table.h"
namespace hmllm { namespace kern { void fill_neon(KernelSet*) {} } }
