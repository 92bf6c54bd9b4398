/* com.h: every runtime interface dnprof implements or calls, generated from one
 * table per interface (*.def, in IDL order): the vtable structs, the slot names,
 * the interface version of each slot, and static assertions on the slot counts.
 *
 * A COM object in C is a struct whose first member points to its vtable; every
 * method takes the object first (Wine's shape). Interfaces that grow by version
 * (ICorProfilerCallback..11, ICorProfilerInfo..15, IMetaDataImport..2) are
 * prefix-compatible, so each family has ONE vtable type holding every slot, and
 * the table says from which version a slot exists. */
#ifndef DNP_COM_H
#define DNP_COM_H

#include "com_types.h"
#include "prof_structs.h"

typedef struct IUnknown IUnknown;
typedef struct IClassFactory IClassFactory;
typedef struct ICorProfilerCallback ICorProfilerCallback;
typedef struct ICorProfilerInfo ICorProfilerInfo;
typedef struct IMetaDataImport IMetaDataImport;
typedef struct IMetaDataEmit IMetaDataEmit;
typedef struct ICorProfilerFunctionControl ICorProfilerFunctionControl;

/* Interfaces we only pass along, never call: opaque. */
typedef struct ICorProfilerAssemblyReferenceProvider ICorProfilerAssemblyReferenceProvider;

#define DNP_IUNKNOWN_SLOTS(T)                                              \
    HRESULT (*QueryInterface)(T * self, REFIID riid, void **ppvObject);    \
    ULONG (*AddRef)(T * self);                                             \
    ULONG (*Release)(T * self);

/* An ICorProfiler*Enum's slots (corprof.idl): IUnknown's, then Skip, Reset,
 * Clone, GetCount and Next, whose items are E. */
#define DNP_ENUM_SLOTS(T, E)                                                   \
    DNP_IUNKNOWN_SLOTS(T)                                                      \
    HRESULT (*Skip)(T * self, ULONG celt);                                     \
    HRESULT (*Reset)(T * self);                                                \
    HRESULT (*Clone)(T * self, T ** ppEnum);                                   \
    HRESULT (*GetCount)(T * self, ULONG *pcelt);                               \
    HRESULT (*Next)(T * self, ULONG celt, E ids[], ULONG *pceltFetched);

typedef struct IUnknownVtbl {
    DNP_IUNKNOWN_SLOTS(IUnknown)
} IUnknownVtbl;
struct IUnknown {
    const IUnknownVtbl *lpVtbl;
};

typedef struct IClassFactoryVtbl {
    DNP_IUNKNOWN_SLOTS(IClassFactory)
    HRESULT (*CreateInstance)(IClassFactory *self, IUnknown *pUnkOuter, REFIID riid, void **ppvObject);
    HRESULT (*LockServer)(IClassFactory *self, BOOL fLock);
} IClassFactoryVtbl;
struct IClassFactory {
    const IClassFactoryVtbl *lpVtbl;
};

/* ---- ICorProfilerCallback..11 (callback.def) ---- */
typedef struct ICorProfilerCallbackVtbl {
    DNP_IUNKNOWN_SLOTS(ICorProfilerCallback)
#define DNP_CALLBACK(ver, name, params) HRESULT(*name) params;
#include "callback.def"
#undef DNP_CALLBACK
} ICorProfilerCallbackVtbl;
struct ICorProfilerCallback {
    const ICorProfilerCallbackVtbl *lpVtbl;
};

/* ---- ICorProfilerInfo..15 (info.def) ---- */
typedef struct ICorProfilerInfoVtbl {
    DNP_IUNKNOWN_SLOTS(ICorProfilerInfo)
#define DNP_INFO(ver, name, params) HRESULT(*name) params;
#include "info.def"
#undef DNP_INFO
} ICorProfilerInfoVtbl;
struct ICorProfilerInfo {
    const ICorProfilerInfoVtbl *lpVtbl;
};

/* ---- IMetaDataImport, IMetaDataImport2 (metadata_import.def) ---- */
typedef struct IMetaDataImportVtbl {
    DNP_IUNKNOWN_SLOTS(IMetaDataImport)
#define DNP_MDI(ver, ret, name, params) ret(*name) params;
#include "metadata_import.def"
#undef DNP_MDI
} IMetaDataImportVtbl;
struct IMetaDataImport {
    const IMetaDataImportVtbl *lpVtbl;
};

/* ---- IMetaDataEmit (metadata_emit.def) ---- */
typedef struct IMetaDataEmitVtbl {
    DNP_IUNKNOWN_SLOTS(IMetaDataEmit)
#define DNP_MDE(ret, name, params) ret(*name) params;
#include "metadata_emit.def"
#undef DNP_MDE
} IMetaDataEmitVtbl;
struct IMetaDataEmit {
    const IMetaDataEmitVtbl *lpVtbl;
};

/* ---- ICorProfilerFunctionControl (function_control.def) ---- */
typedef struct ICorProfilerFunctionControlVtbl {
    DNP_IUNKNOWN_SLOTS(ICorProfilerFunctionControl)
#define DNP_FC(name, params) HRESULT(*name) params;
#include "function_control.def"
#undef DNP_FC
} ICorProfilerFunctionControlVtbl;
struct ICorProfilerFunctionControl {
    const ICorProfilerFunctionControlVtbl *lpVtbl;
};

/* Slot counts, IUnknown's three included, as corprof.idl and cor.h give them. */
enum {
    DNP_CALLBACK_SLOTS = 3
#define DNP_CALLBACK(ver, name, params) +1
#include "callback.def"
#undef DNP_CALLBACK
    ,
    DNP_INFO_SLOTS = 3
#define DNP_INFO(ver, name, params) +1
#include "info.def"
#undef DNP_INFO
    ,
    DNP_MDI_SLOTS = 3
#define DNP_MDI(ver, ret, name, params) +1
#include "metadata_import.def"
#undef DNP_MDI
    ,
    DNP_MDE_SLOTS = 3
#define DNP_MDE(ret, name, params) +1
#include "metadata_emit.def"
#undef DNP_MDE
    ,
    DNP_FC_SLOTS = 3
#define DNP_FC(name, params) +1
#include "function_control.def"
#undef DNP_FC
};

_Static_assert(DNP_CALLBACK_SLOTS == 98, "ICorProfilerCallback11 has 98 slots");
_Static_assert(sizeof(ICorProfilerCallbackVtbl) == DNP_CALLBACK_SLOTS * sizeof(void *), "callback vtable size");
_Static_assert(DNP_INFO_SLOTS == 115, "ICorProfilerInfo15 has 115 slots");
_Static_assert(sizeof(ICorProfilerInfoVtbl) == DNP_INFO_SLOTS * sizeof(void *), "info vtable size");
_Static_assert(DNP_MDI_SLOTS == 3 + 62 + 8, "IMetaDataImport2 has 73 slots");
_Static_assert(sizeof(IMetaDataImportVtbl) == DNP_MDI_SLOTS * sizeof(void *), "metadata vtable size");
_Static_assert(DNP_MDE_SLOTS == 3 + 49, "IMetaDataEmit has 52 slots");
_Static_assert(sizeof(IMetaDataEmitVtbl) == DNP_MDE_SLOTS * sizeof(void *), "metadata emit vtable size");
_Static_assert(DNP_FC_SLOTS == 6, "ICorProfilerFunctionControl has 6 slots");
_Static_assert(sizeof(ICorProfilerFunctionControlVtbl) == DNP_FC_SLOTS * sizeof(void *), "function control vtable size");

/* The version in which each Info slot first exists, by name: DNP_INFO_VERSION(GetClassIDInfo2) == 2. */
enum {
#define DNP_INFO(ver, name, params) DNP_INFO_VER_##name = ver,
#include "info.def"
#undef DNP_INFO
};
#define DNP_INFO_VERSION(name) DNP_INFO_VER_##name

/* Names and versions of every slot, for diagnostics and tests (com.c). */
extern const char *const dnp_callback_slot_names[DNP_CALLBACK_SLOTS];
extern const unsigned char dnp_callback_slot_versions[DNP_CALLBACK_SLOTS];
extern const char *const dnp_info_slot_names[DNP_INFO_SLOTS];
extern const unsigned char dnp_info_slot_versions[DNP_INFO_SLOTS];
extern const char *const dnp_mdi_slot_names[DNP_MDI_SLOTS];
extern const char *const dnp_mde_slot_names[DNP_MDE_SLOTS];
extern const char *const dnp_fc_slot_names[DNP_FC_SLOTS];

/* Interface IDs (corprof.idl, cor.h, unknwn.idl). */
extern const IID IID_IUnknown;
extern const IID IID_IClassFactory;
extern const IID IID_ICorProfilerCallback[12]; /* [1..11]; [0] unused */
extern const IID IID_ICorProfilerInfo[16];     /* [1..15]; [0] unused */
extern const IID IID_IMetaDataImport;
extern const IID IID_IMetaDataImport2;
extern const IID IID_IMetaDataEmit;
extern const IID IID_ICorProfilerFunctionControl;

int dnp_guid_equal(const GUID *a, const GUID *b);
/* Parses "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}" (braces optional). 0 or -1. */
int dnp_guid_parse(const char *text, GUID *out);
/* Writes the braced upper-case form; buf holds at least 39 bytes. */
void dnp_guid_format(const GUID *g, char *buf);

#endif
