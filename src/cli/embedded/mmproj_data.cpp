// cli/embedded/mmproj_data: the bytes of the embedded model's vision tower (see embedded_model.h),
// pulled in by the assembler from K3_EMBEDDED_MMPROJ_PATH when CMake found the file; otherwise
// the two symbols bracket nothing. K3_EMBEDDED_MMPROJ_SHA256 keeps a compiler cache honest, as
// in model_data.cpp.
#ifdef K3_EMBEDDED_MMPROJ_PATH
__asm__(
    ".section .rodata.k3_embedded_mmproj,\"a\",@progbits\n"
    ".balign 64\n"
    ".globl k3_embedded_mmproj_data\n"
    "k3_embedded_mmproj_data:\n"
    ".incbin \"" K3_EMBEDDED_MMPROJ_PATH
    "\"\n"
    ".globl k3_embedded_mmproj_end\n"
    "k3_embedded_mmproj_end:\n"
    ".byte 0\n"
    ".previous\n");
#else
__asm__(
    ".section .rodata.k3_embedded_mmproj,\"a\",@progbits\n"
    ".globl k3_embedded_mmproj_data\n"
    "k3_embedded_mmproj_data:\n"
    ".globl k3_embedded_mmproj_end\n"
    "k3_embedded_mmproj_end:\n"
    ".byte 0\n"
    ".previous\n");
#endif
