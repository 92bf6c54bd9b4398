/* frame_lib.c: the library of a native frame, from the name the sampler gave
 * it (docs/sampling.md, "Resolving addresses"): "libcrypto.so.3!SHA256_Update"
 * (.symtab or .dynsym), "[libcoreclr.so+0x5fc990]" (a function by its unwind
 * table), "[libc.so.6]" (nothing known). Managed names ("Ns.Type::Method") and
 * the sampler's own frames ("[waiting]", "[anonymous code]", "[GC]") have none.
 * pprof's Mapping and speedscope's "file" carry it (export.h). */
#include <string.h>

#include "export.h"

static size_t put(const char *from, size_t n, char *out, size_t cap) {
    if (!n || n >= cap)
        return 0;
    memcpy(out, from, n);
    out[n] = 0;
    return n;
}

size_t dnp_frame_library(const char *name, char *out, size_t cap) {
    if (!name || !*name || strstr(name, "::"))
        return 0;
    if (name[0] == '[') {
        const char *close = strchr(name, ']'), *plus = strstr(name, "+0x");
        if (!close || close[1])
            return 0;
        if (plus && plus < close)
            return put(name + 1, (size_t)(plus - name - 1), out, cap);
        size_t n = (size_t)(close - name - 1);
        /* "[libc.so.6]", not "[waiting]" */
        for (const char *p = name + 1; p + 3 <= close; p++)
            if (strncmp(p, ".so", 3) == 0)
                return put(name + 1, n, out, cap);
        return 0;
    }
    const char *bang = strchr(name, '!');
    if (!bang || bang == name || !bang[1])
        return 0;
    for (const char *p = name; p < bang; p++)
        if (*p == ' ' || *p == '[' || *p == '(' || *p == '<' || *p == ',')
            return 0;
    return put(name, (size_t)(bang - name), out, cap);
}
