"""Model tools: the GGUF type table, known models, INT4 format, quantize, calibrate, eval, bench, plan."""
