// cli/embedded/model_data: the bytes of the embedded default model (see embedded_model.h),
// pulled in by the assembler from K3_EMBEDDED_MODEL_PATH (set by CMake). The section is
// read-only data, aligned like a GGUF data section, and bracketed by two symbols.
// K3_EMBEDDED_MODEL_SHA256 (the file's digest, from CMake) is unused here but part of the
// compile line, so a compiler cache never returns an object built from another model.
#ifndef K3_EMBEDDED_MODEL_PATH
#error "K3_EMBEDDED_MODEL_PATH must name the GGUF file to embed"
#endif

__asm__(
    ".section .rodata.k3_embedded_model,\"a\",@progbits\n"
    ".balign 64\n"
    ".globl k3_embedded_model_data\n"
    "k3_embedded_model_data:\n"
    ".incbin \"" K3_EMBEDDED_MODEL_PATH
    "\"\n"
    ".globl k3_embedded_model_end\n"
    "k3_embedded_model_end:\n"
    ".byte 0\n"
    ".previous\n");
