/* elt.c (arch/x86_64): the runtime's ELT data (arch.h). The slow-path hooks
 * (--args) are given no caller SP, but eltInfo points to a
 * COR_PRF_ELT_INFO_INTERNAL whose first member points to the stub's
 * PROFILE_PLATFORM_SPECIFIC_DATA, which holds the method's caller SP at 0x20
 * (profiledRsp; dotnet/runtime vm/amd64/asmconstants.h, asmhelpers.S): the
 * same key as the fast path's. */
#include "arch/arch.h"

uintptr_t arch_elt_caller_sp(uintptr_t elt) {
    uintptr_t handle = elt ? *(const uintptr_t *)elt : 0;
    if (handle > elt && handle - elt < 65536) {
        uintptr_t csp = *(const uintptr_t *)(handle + 0x20);
        if (csp > handle && csp - handle < (1u << 20))
            return csp;
    }
    return 0;
}
