/* module_md.c: a loaded module's metadata, and CoreLib among the modules (module_md.h). */
#include "module_md.h"

#include <string.h>

#include "utf16.h"

int module_md_read(ModuleID module, dnp_md *md) {
    LPCBYTE base = NULL;
    ULONG len = 0;
    AssemblyID assembly = 0;
    DWORD flags = 0;
    if (!AGENT_HAS_INFO(GetModuleInfo2) ||
        INFO_CALL(GetModuleInfo2, module, &base, 0, &len, NULL, &assembly, &flags) != S_OK || !base ||
        (flags & COR_PRF_MODULE_DYNAMIC))
        return -1;
    char err[160];
    return dnp_md_open(md, base, 0, (flags & COR_PRF_MODULE_FLAT_LAYOUT) != 0, err, sizeof err);
}

int module_is_corelib(ModuleID module) {
    char16_t w[1024];
    ULONG len = 0;
    if (INFO_CALL(GetModuleInfo, module, NULL, 1024, &len, (WCHAR *)w, NULL) != S_OK || len == 0)
        return 0;
    char path[1024];
    dnp_utf16_name(w, 1024, len, path, sizeof path);
    const char *base = strrchr(path, '/');
    return strcmp(base ? base + 1 : path, "System.Private.CoreLib.dll") == 0;
}
