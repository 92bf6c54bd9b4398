/* elt.c (arch/aarch64): the runtime's ELT data (arch.h). The slow-path hooks
 * (--args) are given no caller SP, but eltInfo points to a
 * COR_PRF_ELT_INFO_INTERNAL whose first member points to the stub's
 * PROFILE_PLATFORM_SPECIFIC_DATA, which holds the method's caller SP at 232
 * (profiledSp, after fp, pc, x8, x0-x7, the function ID and q0-q7:
 * dotnet/runtime vm/arm64/asmconstants.h): the same key as the fast path's
 * x11. */
#include "arch/arch.h"

#define PLATFORM_DATA_PROFILED_SP 232

uintptr_t arch_elt_caller_sp(uintptr_t elt) {
    uintptr_t handle = elt ? *(const uintptr_t *)elt : 0;
    if (handle > elt && handle - elt < 65536) {
        uintptr_t csp = *(const uintptr_t *)(handle + PLATFORM_DATA_PROFILED_SP);
        if (csp > handle && csp - handle < (1u << 20))
            return csp;
    }
    return 0;
}
