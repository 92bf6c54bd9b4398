/* rejit_lock.c: what the probe in System.Threading.Lock's slow path is handed
 * as each call starts (rejit.h rejit_lock_args, docs/waits.md): the runtime's
 * Lock checked in CoreLib's metadata, and the IL that reads the holder, the
 * timeout and the caller's thread id. */
#include <string.h>

#include "il_rewrite.h"
#include "names.h"
#include "rejit.h"

/* An instance field: 1 when it is an int32 or a uint32, 0 when another type;
 * -1 for a static field or one that cannot be read. */
static int field_u4(IMetaDataImport *imp, mdFieldDef fd) {
    ULONG n = 0;
    DWORD attr = 0;
    PCCOR_SIGNATURE s = NULL;
    if (FAILED(imp->lpVtbl->GetFieldProps(imp, fd, NULL, NULL, 0, NULL, &attr, &s, &n, NULL, NULL, NULL)) ||
        (attr & 0x10 /* fdStatic */))
        return -1;
    return n == 2 && s[0] == 0x06 /* FIELD */ && (s[1] == 0x08 || s[1] == 0x09);
}

/* The one instance field of value type td, when it is 4 bytes (I4, U4). */
static int one_u4_field(IMetaDataImport *imp, mdTypeDef td) {
    HCORENUM he = NULL;
    mdFieldDef fds[8];
    ULONG k = 0, n = 0;
    int u4 = 0;
    if (SUCCEEDED(imp->lpVtbl->EnumFields(imp, &he, td, fds, 8, &k)))
        for (ULONG i = 0; i < k && i < 8; i++) {
            int f = field_u4(imp, fds[i]);
            n += f >= 0, u4 = f >= 0 ? f : u4;
        }
    if (he)
        imp->lpVtbl->CloseEnum(imp, he);
    return n == 1 && u4 == 1;
}

/* Whether sig[0, n) is that of an instance method taking (int32, a value
 * type defined in imp's module with one 4-byte field) and returning a value
 * type: Lock.TryEnterSlow's (ThreadId TryEnterSlow(int, ThreadId)). */
static int lock_slow_sig(IMetaDataImport *imp, const uint8_t *sig, size_t n) {
    const uint8_t *q = sig, *end = sig + n;
    uint32_t tok = 0;
    if (n < 6 || q[0] != 0x20 /* HASTHIS */ || q[1] != 2 || q[2] != 0x11 /* VALUETYPE: the return */)
        return 0;
    q += 3;
    if (dnp_sig_uint(&q, end, &tok) != 0 || end - q < 3 || q[0] != 0x08 /* int32 */ || q[1] != 0x11)
        return 0;
    q += 2;
    return dnp_sig_uint(&q, end, &tok) == 0 && (tok & 3) == 0 /* a TypeDef */ &&
           one_u4_field(imp, (mdTypeDef)(0x02000000u | tok >> 2));
}

int rejit_lock_args(ModuleID module, mdMethodDef method, dnp_il_probe *p) {
    IMetaDataImport *imp = names_module_import(module);
    if (!imp)
        return -1;
    mdTypeDef td = 0;
    mdFieldDef fd = 0;
    ULONG len = 0, nsig = 0, rva = 0;
    DWORD attr = 0, impl = 0;
    PCCOR_SIGNATURE msig = NULL;
    WCHAR w[8];
    static const WCHAR name[] = {'_', 'o', 'w', 'n', 'i', 'n', 'g', 'T', 'h', 'r', 'e', 'a', 'd', 'I', 'd', 0};
    int ok = SUCCEEDED(imp->lpVtbl->GetMethodProps(imp, method, &td, w, 8, &len, &attr, &msig, &nsig, &rva, &impl)) &&
             !(attr & 0x10 /* mdStatic */) && msig && lock_slow_sig(imp, msig, nsig) &&
             SUCCEEDED(imp->lpVtbl->FindField(imp, td, name, NULL, 0, &fd)) && field_u4(imp, fd) == 1;
    imp->lpVtbl->Release(imp);
    if (!ok)
        return -1;
    const uint8_t il[] = {0x02, 0x7B, (uint8_t)fd, (uint8_t)(fd >> 8), (uint8_t)(fd >> 16), (uint8_t)(fd >> 24),
                          0x03, 0x0F, 0x02, 0x4B};
    memcpy(p->enter_args, il, sizeof il);
    p->enter_args_len = sizeof il;
    p->enter_pushes = 3;
    return 0;
}

