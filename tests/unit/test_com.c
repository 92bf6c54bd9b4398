/* test_com.c: the COM tables (callback.def, info.def, metadata_import.def) against
 * the slot layout the runtime expects, the IIDs, and GUID parse/format. */
#include <stddef.h>

#include "com.h"
#include "test.h"

typedef void (*any_fn)(void);

#define SLOT(vtbl, member) (offsetof(vtbl, member) / sizeof(void *))

/* ---- Argument lists of zeros, one per parameter after self ---- */
#define T_CAT(a, b) T_CAT_(a, b)
#define T_CAT_(a, b) a##b
#define T_NARGS(...) T_NARGS_(__VA_ARGS__, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define T_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, n, ...) n
#define T_Z1
#define T_Z2 , 0
#define T_Z3 , 0, 0
#define T_Z4 , 0, 0, 0
#define T_Z5 , 0, 0, 0, 0
#define T_Z6 , 0, 0, 0, 0, 0
#define T_Z7 , 0, 0, 0, 0, 0, 0
#define T_Z8 , 0, 0, 0, 0, 0, 0, 0
#define T_Z9 , 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z10 , 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z11 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z12 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z13 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z14 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z15 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z16 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_Z17 , 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define T_GENERIC_ARGS(self, params) self T_CAT(T_Z, T_NARGS params)

/* Slots taking a struct by value get their own argument list (probe by name). */
#define T_SECOND(a, b, ...) b
#define T_IS_PROBE(...) T_SECOND(__VA_ARGS__, 0, 0)
#define T_PROBE ~, 1
#define T_IIF(c) T_CAT(T_IIF_, c)
#define T_IIF_0(t, f) f
#define T_IIF_1(t, f) t
#define T_SPECIAL_EventPipeAddProviderToSession T_PROBE
#define T_SPECIAL_ARGS(self, params) self, 0, (COR_PRF_EVENTPIPE_PROVIDER_CONFIG){0}
#define T_ARGS(name, self, params) \
    T_IIF(T_IS_PROBE(T_SPECIAL_##name))(T_SPECIAL_ARGS, T_GENERIC_ARGS)(self, params)

/* ---- One function per slot, with the slot's exact prototype, recording its index ---- */
static int g_hit = -1;
static int g_calls;

#define FAKE_IUNKNOWN(prefix, T)                                                         \
    static HRESULT prefix##_QueryInterface(T *self, REFIID riid, void **ppvObject) {     \
        (void)self, (void)riid, (void)ppvObject;                                         \
        g_hit = 0;                                                                       \
        return S_OK;                                                                     \
    }                                                                                    \
    static ULONG prefix##_AddRef(T *self) {                                              \
        (void)self;                                                                      \
        g_hit = 1;                                                                       \
        return 1;                                                                        \
    }                                                                                    \
    static ULONG prefix##_Release(T *self) {                                             \
        (void)self;                                                                      \
        g_hit = 2;                                                                       \
        return 1;                                                                        \
    }

FAKE_IUNKNOWN(cb, ICorProfilerCallback)
FAKE_IUNKNOWN(info, ICorProfilerInfo)
FAKE_IUNKNOWN(mdi, IMetaDataImport)

enum {
    CB_IDX_QueryInterface, CB_IDX_AddRef, CB_IDX_Release,
#define DNP_CALLBACK(ver, name, params) CB_IDX_##name,
#include "callback.def"
#undef DNP_CALLBACK
    CB_IDX_COUNT
};
enum {
    INFO_IDX_QueryInterface, INFO_IDX_AddRef, INFO_IDX_Release,
#define DNP_INFO(ver, name, params) INFO_IDX_##name,
#include "info.def"
#undef DNP_INFO
    INFO_IDX_COUNT
};
enum {
    MDI_IDX_QueryInterface, MDI_IDX_AddRef, MDI_IDX_Release,
#define DNP_MDI(ver, ret, name, params) MDI_IDX_##name,
#include "metadata_import.def"
#undef DNP_MDI
    MDI_IDX_COUNT
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DNP_CALLBACK(ver, name, params) \
    static HRESULT cb_##name params {   \
        g_hit = CB_IDX_##name;          \
        return S_OK;                    \
    }
#include "callback.def"
#undef DNP_CALLBACK
#define DNP_INFO(ver, name, params)  \
    static HRESULT info_##name params { \
        g_hit = INFO_IDX_##name;        \
        return S_OK;                    \
    }
#include "info.def"
#undef DNP_INFO
#define T_IS_VOID_void T_PROBE
#define T_RET_NONE(ret)
#define T_RET_ZERO(ret) return (ret)0;
#define DNP_MDI(ver, ret, name, params)                                  \
    static ret mdi_##name params {                                       \
        g_hit = MDI_IDX_##name;                                          \
        T_IIF(T_IS_PROBE(T_IS_VOID_##ret))(T_RET_NONE, T_RET_ZERO)(ret) \
    }
#include "metadata_import.def"
#undef DNP_MDI
#pragma GCC diagnostic pop

/* ---- Fake vtables, built from the tables in table order: slot i is function i ---- */
static const any_fn cb_slots[] = {
    (any_fn)cb_QueryInterface, (any_fn)cb_AddRef, (any_fn)cb_Release,
#define DNP_CALLBACK(ver, name, params) (any_fn)cb_##name,
#include "callback.def"
#undef DNP_CALLBACK
};
static const any_fn info_slots[] = {
    (any_fn)info_QueryInterface, (any_fn)info_AddRef, (any_fn)info_Release,
#define DNP_INFO(ver, name, params) (any_fn)info_##name,
#include "info.def"
#undef DNP_INFO
};
static const any_fn mdi_slots[] = {
    (any_fn)mdi_QueryInterface, (any_fn)mdi_AddRef, (any_fn)mdi_Release,
#define DNP_MDI(ver, ret, name, params) (any_fn)mdi_##name,
#include "metadata_import.def"
#undef DNP_MDI
};
_Static_assert(sizeof cb_slots == sizeof(ICorProfilerCallbackVtbl), "callback slots");
_Static_assert(sizeof info_slots == sizeof(ICorProfilerInfoVtbl), "info slots");
_Static_assert(sizeof mdi_slots == sizeof(IMetaDataImportVtbl), "metadata slots");
_Static_assert((int)CB_IDX_COUNT == (int)DNP_CALLBACK_SLOTS &&
                   (int)INFO_IDX_COUNT == (int)DNP_INFO_SLOTS &&
                   (int)MDI_IDX_COUNT == (int)DNP_MDI_SLOTS, "index enums");

/* Calls one slot through its member name and checks that the function reached is the
 * table's entry for that name, at the member's position, with the recorded name. */
#define CHECK_SLOT(obj, Vtbl, names, name, call)                   \
    do {                                                           \
        g_hit = -1;                                                \
        (void)(call);                                              \
        g_calls++;                                                 \
        ASSERT_EQ(g_hit, SLOT(Vtbl, name));                    \
        ASSERT_STREQ(names[g_hit], #name);                        \
    } while (0)

#define CHECK_IUNKNOWN(obj, Vtbl, names)                                                  \
    CHECK_SLOT(obj, Vtbl, names, QueryInterface, (obj).lpVtbl->QueryInterface(&(obj), 0, 0)); \
    CHECK_SLOT(obj, Vtbl, names, AddRef, (obj).lpVtbl->AddRef(&(obj)));                 \
    CHECK_SLOT(obj, Vtbl, names, Release, (obj).lpVtbl->Release(&(obj)))

TEST(com_callback_every_slot_reachable) {
    ICorProfilerCallbackVtbl vt;
    memcpy(&vt, cb_slots, sizeof vt);
    ICorProfilerCallback obj = {&vt};
    g_calls = 0;
    CHECK_IUNKNOWN(obj, ICorProfilerCallbackVtbl, dnp_callback_slot_names);
#define DNP_CALLBACK(ver, name, params)                                          \
    CHECK_SLOT(obj, ICorProfilerCallbackVtbl, dnp_callback_slot_names, name,     \
               obj.lpVtbl->name(T_ARGS(name, &obj, params)));
#include "callback.def"
#undef DNP_CALLBACK
    ASSERT_EQ(g_calls, 98);
    return 0;
}

TEST(com_info_every_slot_reachable) {
    ICorProfilerInfoVtbl vt;
    memcpy(&vt, info_slots, sizeof vt);
    ICorProfilerInfo obj = {&vt};
    g_calls = 0;
    CHECK_IUNKNOWN(obj, ICorProfilerInfoVtbl, dnp_info_slot_names);
#define DNP_INFO(ver, name, params)                                      \
    CHECK_SLOT(obj, ICorProfilerInfoVtbl, dnp_info_slot_names, name,     \
               obj.lpVtbl->name(T_ARGS(name, &obj, params)));
#include "info.def"
#undef DNP_INFO
    ASSERT_EQ(g_calls, 115);
    return 0;
}

TEST(com_metadata_every_slot_reachable) {
    IMetaDataImportVtbl vt;
    memcpy(&vt, mdi_slots, sizeof vt);
    IMetaDataImport obj = {&vt};
    g_calls = 0;
    CHECK_IUNKNOWN(obj, IMetaDataImportVtbl, dnp_mdi_slot_names);
    /* CloseEnum returns void: called as a statement, not through CHECK_SLOT's (void)(call). */
#define DNP_MDI(ver, ret, name, params)                                  \
    g_hit = -1;                                                          \
    obj.lpVtbl->name(T_ARGS(name, &obj, params));                        \
    g_calls++;                                                           \
    ASSERT_EQ(g_hit, SLOT(IMetaDataImportVtbl, name));               \
    ASSERT_STREQ(dnp_mdi_slot_names[g_hit], #name);
#include "metadata_import.def"
#undef DNP_MDI
    ASSERT_EQ(g_calls, 73);
    return 0;
}

/* Positions counted by hand from corprof.idl and cor.h, IUnknown's three included. */
TEST(com_known_slot_positions) {
    ASSERT_EQ(SLOT(IUnknownVtbl, QueryInterface), 0);
    ASSERT_EQ(SLOT(IUnknownVtbl, Release), 2);
    ASSERT_EQ(SLOT(IClassFactoryVtbl, CreateInstance), 3);
    ASSERT_EQ(SLOT(IClassFactoryVtbl, LockServer), 4);

    ASSERT_EQ(SLOT(IMetaDataImportVtbl, CloseEnum), 3);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetTypeDefProps), 12);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetTypeRefProps), 14);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetMethodProps), 30);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetMemberRefProps), 31);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetSigFromToken), 41);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetNestedClassProps), 62);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, IsGlobal), 64);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, EnumGenericParams), 65);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, GetMethodSpecProps), 67);
    ASSERT_EQ(SLOT(IMetaDataImportVtbl, EnumMethodSpecs), 72);

    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetClassFromObject), 3);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetClassIDInfo), 14);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetFunctionInfo), 15);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, SetEventMask), 16);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetModuleMetaData), 21);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetILToNativeMapping), 35);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, DoStackSnapshot), 36);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetClassIDInfo2), 41);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetNotifiedExceptionClauseInfo), 56);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, EnumJITedFunctions), 57);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, SetEnterLeaveFunctionHooks3), 61);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, SetEnterLeaveFunctionHooks3WithInfo), 62);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetModuleInfo2), 70);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, EnumThreads), 71);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetObjectSize2), 80);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, SetEventMask2), 82);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, EnumNgenModuleMethodsInliningThisMethod), 83);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetCodeInfo4), 92);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, SuspendRuntime), 97);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, ResumeRuntime), 98);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, GetEnvironmentVariable), 99);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, EventPipeStartSession), 101);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, CreateHandle), 108);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, EventPipeCreateProvider2), 113);
    ASSERT_EQ(SLOT(ICorProfilerInfoVtbl, EnumerateGCHeapObjects), 114);

    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, Initialize), 3);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, Shutdown), 4);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, JITCompilationStarted), 23);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, ExceptionCLRCatcherExecute), 71);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, ThreadNameChanged), 72);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, InitializeForAttach), 80);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, ReJITCompilationStarted), 83);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, ConditionalWeakTableElementReferences), 89);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, DynamicMethodJITCompilationStarted), 92);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, EventPipeEventDelivered), 95);
    ASSERT_EQ(SLOT(ICorProfilerCallbackVtbl, LoadAsNotificationOnly), 97);

    /* cor.h: GetTokenFromSig is IMetaDataEmit's 21st method; corprof.idl:
     * ICorProfilerFunctionControl's three after IUnknown's */
    ASSERT_EQ(SLOT(IMetaDataEmitVtbl, SetModuleProps), 3);
    ASSERT_EQ(SLOT(IMetaDataEmitVtbl, DefineTypeRefByName), 12);
    ASSERT_EQ(SLOT(IMetaDataEmitVtbl, DefineMemberRef), 14);
    ASSERT_EQ(SLOT(IMetaDataEmitVtbl, SetRVA), 22);
    ASSERT_EQ(SLOT(IMetaDataEmitVtbl, GetTokenFromSig), 23);
    ASSERT_STREQ(dnp_mde_slot_names[23], "GetTokenFromSig");
    ASSERT_EQ(SLOT(ICorProfilerFunctionControlVtbl, SetCodegenFlags), 3);
    ASSERT_EQ(SLOT(ICorProfilerFunctionControlVtbl, SetILFunctionBody), 4);
    ASSERT_EQ(SLOT(ICorProfilerFunctionControlVtbl, SetILInstrumentedCodeMap), 5);
    ASSERT_STREQ(dnp_fc_slot_names[4], "SetILFunctionBody");
    return 0;
}

/* Methods added per version, as corprof.idl and cor.h declare them. */
TEST(com_slot_versions) {
    static const int info_added[16] = {0, 33, 21, 14, 10, 2, 1, 3, 3, 3, 6, 2, 7, 3, 3, 1};
    static const int cb_added[12] = {0, 69, 8, 3, 6, 1, 1, 1, 2, 1, 2, 1};
    int info_count[16] = {0}, cb_count[12] = {0};
    for (int i = 0; i < DNP_INFO_SLOTS; i++) {
        ASSERT_LT(dnp_info_slot_versions[i], 16);
        ASSERT(i == 0 || dnp_info_slot_versions[i] >= dnp_info_slot_versions[i - 1]);
        info_count[dnp_info_slot_versions[i]]++;
    }
    for (int i = 0; i < DNP_CALLBACK_SLOTS; i++) {
        ASSERT_LT(dnp_callback_slot_versions[i], 12);
        ASSERT(i == 0 || dnp_callback_slot_versions[i] >= dnp_callback_slot_versions[i - 1]);
        cb_count[dnp_callback_slot_versions[i]]++;
    }
    ASSERT_EQ(info_count[0], 3);
    ASSERT_EQ(cb_count[0], 3);
    for (int v = 1; v < 16; v++)
        ASSERT_EQ(info_count[v], info_added[v]);
    for (int v = 1; v < 12; v++)
        ASSERT_EQ(cb_count[v], cb_added[v]);
    ASSERT_EQ(DNP_INFO_VERSION(GetClassIDInfo), 1);
    ASSERT_EQ(DNP_INFO_VERSION(GetClassIDInfo2), 2);
    ASSERT_EQ(DNP_INFO_VERSION(SetEnterLeaveFunctionHooks3), 3);
    ASSERT_EQ(DNP_INFO_VERSION(SetEventMask2), 5);
    ASSERT_EQ(DNP_INFO_VERSION(SuspendRuntime), 10);
    ASSERT_EQ(DNP_INFO_VERSION(EnumerateGCHeapObjects), 15);
    ASSERT_STREQ(dnp_info_slot_names[0], "QueryInterface");
    ASSERT_STREQ(dnp_callback_slot_names[2], "Release");
    ASSERT_STREQ(dnp_mdi_slot_names[DNP_MDI_SLOTS - 1], "EnumMethodSpecs");
    /* IMetaDataEmit: GetTokenFromSig is its 21st method (cor.h), MergeEnd its last */
    ASSERT_EQ(offsetof(IMetaDataEmitVtbl, GetTokenFromSig) / sizeof(void *), 23);
    ASSERT_STREQ(dnp_mde_slot_names[23], "GetTokenFromSig");
    ASSERT_STREQ(dnp_mde_slot_names[DNP_MDE_SLOTS - 1], "MergeEnd");
    return 0;
}

TEST(com_guid_roundtrip) {
    char buf[39];
    GUID g, h;
    ASSERT_EQ(dnp_guid_parse("{176fbed1-a55c-4796-98ca-a9da0ef883e7}", &g), 0);
    ASSERT_EQ(g.Data1, 0x176FBED1);
    ASSERT_EQ(g.Data2, 0xA55C);
    ASSERT_EQ(g.Data3, 0x4796);
    ASSERT_EQ(g.Data4[0], 0x98);
    ASSERT_EQ(g.Data4[1], 0xCA);
    ASSERT_EQ(g.Data4[2], 0xA9);
    ASSERT_EQ(g.Data4[7], 0xE7);
    memset(buf, 'x', sizeof buf);
    dnp_guid_format(&g, buf);
    ASSERT_STREQ(buf, "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}");
    ASSERT_EQ(dnp_guid_parse(buf, &h), 0);
    ASSERT(dnp_guid_equal(&g, &h));
    ASSERT_EQ(dnp_guid_parse("176FBED1-A55C-4796-98CA-A9DA0EF883E7", &h), 0);
    ASSERT(dnp_guid_equal(&g, &h));
    ASSERT_EQ(dnp_guid_parse("{00000000-0000-0000-0000-000000000000}", &h), 0);
    dnp_guid_format(&h, buf);
    ASSERT_STREQ(buf, "{00000000-0000-0000-0000-000000000000}");
    ASSERT_EQ(dnp_guid_parse("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", &h), 0);
    dnp_guid_format(&h, buf);
    ASSERT_STREQ(buf, "{FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF}");
    h.Data4[7] ^= 1;
    ASSERT(!dnp_guid_equal(&g, &h));
    return 0;
}

TEST(com_guid_rejects_malformed) {
    static const char *const bad[] = {
        "",
        "{}",
        "{176FBED1-A55C-4796-98CA-A9DA0EF883E7",   /* unclosed */
        "176FBED1-A55C-4796-98CA-A9DA0EF883E7}",   /* unopened */
        "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}}", /* trailing */
        "176FBED1-A55C-4796-98CA-A9DA0EF883E7 ",
        " 176FBED1-A55C-4796-98CA-A9DA0EF883E7",
        "176FBED1-A55C-4796-98CA-A9DA0EF883E",     /* short */
        "176FBED1-A55C-4796-98CA-A9DA0EF883E77",   /* long */
        "176FBED1A55C-4796-98CA-A9DA0EF883E7",     /* missing dash */
        "176FBED1-A55C-4796-98CAA9DA0EF883E7",
        "176FBED1-A55C-4796-98C-AA9DA0EF883E7",    /* dash misplaced */
        "176FBED1_A55C-4796-98CA-A9DA0EF883E7",
        "G76FBED1-A55C-4796-98CA-A9DA0EF883E7",    /* not hex */
        "176FBED1-A55C-4796-98CA-A9DA0EF883EZ",
        "+76FBED1-A55C-4796-98CA-A9DA0EF883E7",
        "0x76FBED-A55C-4796-98CA-A9DA0EF883E7",
        "(176FBED1-A55C-4796-98CA-A9DA0EF883E7)",
    };
    const GUID sentinel = {0x12345678, 0x9ABC, 0xDEF0, {1, 2, 3, 4, 5, 6, 7, 8}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        GUID g = sentinel;
        if (dnp_guid_parse(bad[i], &g) != -1) {
            fprintf(stderr, "accepted malformed \"%s\"\n", bad[i]);
            return 1;
        }
        ASSERT(dnp_guid_equal(&g, &sentinel));
    }
    GUID g;
    ASSERT_EQ(dnp_guid_parse(NULL, &g), -1);
    return 0;
}

TEST(com_iids) {
    static const struct {
        const IID *iid;
        const char *text;
    } known[] = {
        {&IID_IUnknown, "{00000000-0000-0000-C000-000000000046}"},
        {&IID_IClassFactory, "{00000001-0000-0000-C000-000000000046}"},
        {&IID_ICorProfilerCallback[1], "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}"},
        {&IID_ICorProfilerCallback[2], "{8A8CC829-CCF2-49FE-BBAE-0F022228071A}"},
        {&IID_ICorProfilerCallback[3], "{4FD2ED52-7731-4B8D-9469-03D2CC3086C5}"},
        {&IID_ICorProfilerCallback[4], "{7B63B2E3-107D-4D48-B2F6-F61E229470D2}"},
        {&IID_ICorProfilerCallback[5], "{8DFBA405-8C9F-45F8-BFFA-83B14CEF78B5}"},
        {&IID_ICorProfilerCallback[6], "{FC13DF4B-4448-4F4F-950C-BA8D19D00C36}"},
        {&IID_ICorProfilerCallback[7], "{F76A2DBA-1D52-4539-866C-2AA518F9EFC3}"},
        {&IID_ICorProfilerCallback[8], "{5BED9B15-C079-4D47-BFE2-215A140C07E0}"},
        {&IID_ICorProfilerCallback[9], "{27583EC3-C8F5-482F-8052-194B8CE4705A}"},
        {&IID_ICorProfilerCallback[10], "{CEC5B60E-C69C-495F-87F6-84D28EE16FFB}"},
        {&IID_ICorProfilerCallback[11], "{42350846-AAED-47F7-B128-FD0C98881CDE}"},
        {&IID_ICorProfilerInfo[1], "{28B5557D-3F3F-48B4-90B2-5F9EEA2F6C48}"},
        {&IID_ICorProfilerInfo[2], "{CC0935CD-A518-487D-B0BB-A93214E65478}"},
        {&IID_ICorProfilerInfo[3], "{B555ED4F-452A-4E54-8B39-B5360BAD32A0}"},
        {&IID_ICorProfilerInfo[4], "{0D8FDCAA-6257-47BF-B1BF-94DAC88466EE}"},
        {&IID_ICorProfilerInfo[5], "{07602928-CE38-4B83-81E7-74ADAF781214}"},
        {&IID_ICorProfilerInfo[6], "{F30A070D-BFFB-46A7-B1D8-8781EF7B698A}"},
        {&IID_ICorProfilerInfo[7], "{9AEECC0D-63E0-4187-8C00-E312F503F663}"},
        {&IID_ICorProfilerInfo[8], "{C5AC80A6-782E-4716-8044-39598C60CFBF}"},
        {&IID_ICorProfilerInfo[9], "{008170DB-F8CC-4796-9A51-DC8AA0B47012}"},
        {&IID_ICorProfilerInfo[10], "{2F1B5152-C869-40C9-AA5F-3ABE026BD720}"},
        {&IID_ICorProfilerInfo[11], "{06398876-8987-4154-B621-40A00D6E4D04}"},
        {&IID_ICorProfilerInfo[12], "{27B24CCD-1CB1-47C5-96EE-98190DC30959}"},
        {&IID_ICorProfilerInfo[13], "{6E6C7EE2-0701-4EC2-9D29-2E8733B66934}"},
        {&IID_ICorProfilerInfo[14], "{F460E352-D76D-4FE9-835F-F6AF9D6E862D}"},
        {&IID_ICorProfilerInfo[15], "{B446462D-BD22-41DD-872D-DC714C49EB56}"},
        {&IID_IMetaDataImport, "{7DAC8207-D3AE-4C75-9B67-92801A497D44}"},
        {&IID_IMetaDataImport2, "{FCE5EFA0-8BBA-4F8E-A036-8F2022B08466}"},
        {&IID_IMetaDataEmit, "{BA3FEE4C-ECB9-4E41-83B7-183FA41CD859}"},
        {&IID_ICorProfilerFunctionControl, "{F0963021-E1EA-4732-8581-E01B0BD3C0C6}"},
    };
    char buf[39];
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        GUID g;
        ASSERT_EQ(dnp_guid_parse(known[i].text, &g), 0);
        dnp_guid_format(known[i].iid, buf);
        ASSERT_STREQ(buf, known[i].text);
        ASSERT(dnp_guid_equal(known[i].iid, &g));
        for (size_t j = 0; j < i; j++)
            ASSERT(!dnp_guid_equal(known[i].iid, known[j].iid));
    }
    /* cor.h's EXTERN_GUID form of IID_IMetaDataImport, field by field. */
    const GUID mdi = {0x7dac8207, 0xd3ae, 0x4c75, {0x9b, 0x67, 0x92, 0x80, 0x1a, 0x49, 0x7d, 0x44}};
    ASSERT(dnp_guid_equal(&IID_IMetaDataImport, &mdi));
    return 0;
}

/* Layouts on LP64 and the composite masks RUNTIME-FACTS.md quotes. */
_Static_assert(sizeof(void *) == 8, "LP64 only");
_Static_assert(sizeof(COR_IL_MAP) == 12, "COR_IL_MAP");
_Static_assert(sizeof(COR_DEBUG_IL_TO_NATIVE_MAP) == 12, "COR_DEBUG_IL_TO_NATIVE_MAP");
_Static_assert(sizeof(COR_FIELD_OFFSET) == 8, "COR_FIELD_OFFSET");
_Static_assert(sizeof(COR_PRF_CODE_INFO) == 16, "COR_PRF_CODE_INFO");
_Static_assert(sizeof(COR_PRF_FUNCTION) == 16, "COR_PRF_FUNCTION");
_Static_assert(sizeof(COR_PRF_METHOD) == 16, "COR_PRF_METHOD");
_Static_assert(sizeof(COR_PRF_GC_GENERATION_RANGE) == 32 &&
                   offsetof(COR_PRF_GC_GENERATION_RANGE, rangeStart) == 8, "COR_PRF_GC_GENERATION_RANGE");
_Static_assert(sizeof(COR_PRF_NONGC_HEAP_RANGE) == 24, "COR_PRF_NONGC_HEAP_RANGE");
_Static_assert(sizeof(COR_PRF_EX_CLAUSE_INFO) == 32, "COR_PRF_EX_CLAUSE_INFO");
_Static_assert(sizeof(COR_PRF_EVENTPIPE_PROVIDER_CONFIG) == 32 &&
                   offsetof(COR_PRF_EVENTPIPE_PROVIDER_CONFIG, filterData) == 24, "provider config");
_Static_assert(sizeof(COR_PRF_EVENTPIPE_PARAM_DESC) == 16, "COR_PRF_EVENTPIPE_PARAM_DESC");
_Static_assert(sizeof(COR_PRF_EVENT_DATA) == 16, "COR_PRF_EVENT_DATA");
_Static_assert(COR_PRF_ALLOWABLE_AFTER_ATTACH == 0x106502FEu, "ALLOWABLE_AFTER_ATTACH");
_Static_assert(COR_PRF_MONITOR_IMMUTABLE == 0xEE98CC00u, "MONITOR_IMMUTABLE");
_Static_assert(COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH == 0xF6u, "HIGH_ALLOWABLE_AFTER_ATTACH");
_Static_assert(IsTdNested(tdNestedFamORAssem) && !IsTdNested(tdPublic), "nested visibility");
