/* prof_structs.h: the profiling-API and metadata structs, enumeration values, callback
 * function types and opaque interfaces that info.def and metadata_import.def use and
 * com_types.h lacks (corprof.idl, cor.h, corhdr.h; Linux x86-64 / arm64 layout).
 * Written here, not copied. Enumerations crossing the ABI are int32_t typedefs with
 * their values in anonymous enums or #defines (32-bit masks). Include after com_types.h. */
#ifndef DNP_PROF_STRUCTS_H
#define DNP_PROF_STRUCTS_H

#include "com_types.h"

typedef uint32_t ULONG32;
typedef uint32_t UINT32;
typedef uint8_t UINT8;
typedef void *HANDLE;
typedef const char *MDUTF8CSTR;
typedef const void *UVCP_CONSTANT;

/* Interfaces passed or returned by pointer only: opaque. */
typedef struct IMethodMalloc IMethodMalloc;
typedef struct ICorProfilerObjectEnum ICorProfilerObjectEnum;
typedef struct ICorProfilerFunctionEnum ICorProfilerFunctionEnum;
typedef struct ICorProfilerModuleEnum ICorProfilerModuleEnum;
typedef struct ICorProfilerThreadEnum ICorProfilerThreadEnum;
typedef struct ICorProfilerMethodEnum ICorProfilerMethodEnum;
typedef struct IMetaDataAssemblyImport IMetaDataAssemblyImport;

/* ---- Structures (corprof.idl) ---- */
typedef struct COR_IL_MAP {
    ULONG32 oldOffset;
    ULONG32 newOffset;
    BOOL fAccurate;
} COR_IL_MAP;

typedef struct COR_DEBUG_IL_TO_NATIVE_MAP {
    ULONG32 ilOffset;
    ULONG32 nativeStartOffset;
    ULONG32 nativeEndOffset;
} COR_DEBUG_IL_TO_NATIVE_MAP;

/* Special ilOffset values in COR_DEBUG_IL_TO_NATIVE_MAP (CorDebugIlToNativeMappingTypes). */
enum { NO_MAPPING = -1, PROLOG = -2, EPILOG = -3 };

typedef struct COR_FIELD_OFFSET {
    mdFieldDef ridOfField;
    ULONG ulOffset;
} COR_FIELD_OFFSET;

typedef struct COR_PRF_CODE_INFO {
    UINT_PTR startAddress;
    SIZE_T size;
} COR_PRF_CODE_INFO;

typedef struct COR_PRF_FUNCTION {
    FunctionID functionId;
    ReJITID reJitId;
} COR_PRF_FUNCTION;

typedef struct COR_PRF_METHOD {
    ModuleID moduleId;
    mdMethodDef methodId;
} COR_PRF_METHOD;

typedef int32_t COR_PRF_STATIC_TYPE;
enum {
    COR_PRF_FIELD_NOT_A_STATIC = 0x0,
    COR_PRF_FIELD_APP_DOMAIN_STATIC = 0x1,
    COR_PRF_FIELD_THREAD_STATIC = 0x2,
    COR_PRF_FIELD_CONTEXT_STATIC = 0x4,
    COR_PRF_FIELD_RVA_STATIC = 0x8
};

typedef int32_t COR_PRF_GC_GENERATION;
enum {
    COR_PRF_GC_GEN_0 = 0,
    COR_PRF_GC_GEN_1 = 1,
    COR_PRF_GC_GEN_2 = 2,
    COR_PRF_GC_LARGE_OBJECT_HEAP = 3,
    COR_PRF_GC_PINNED_OBJECT_HEAP = 4
};

typedef struct COR_PRF_GC_GENERATION_RANGE {
    COR_PRF_GC_GENERATION generation;
    ObjectID rangeStart;
    UINT_PTR rangeLength;
    UINT_PTR rangeLengthReserved;
} COR_PRF_GC_GENERATION_RANGE;

typedef struct COR_PRF_NONGC_HEAP_RANGE {
    ObjectID rangeStart;
    UINT_PTR rangeLength;
    UINT_PTR rangeLengthReserved;
} COR_PRF_NONGC_HEAP_RANGE;

typedef int32_t COR_PRF_CLAUSE_TYPE;
enum {
    COR_PRF_CLAUSE_NONE = 0,
    COR_PRF_CLAUSE_FILTER = 1,
    COR_PRF_CLAUSE_CATCH = 2,
    COR_PRF_CLAUSE_FINALLY = 3
};

typedef struct COR_PRF_EX_CLAUSE_INFO {
    COR_PRF_CLAUSE_TYPE clauseType;
    UINT_PTR programCounter;
    UINT_PTR framePointer;
    UINT_PTR shadowStackPointer;
} COR_PRF_EX_CLAUSE_INFO;

/* EventPipe (ICorProfilerInfo12, 14). */
typedef struct COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
    const WCHAR *providerName;
    UINT64 keywords;
    UINT32 loggingLevel;
    const WCHAR *filterData;
} COR_PRF_EVENTPIPE_PROVIDER_CONFIG;

typedef struct COR_PRF_EVENTPIPE_PARAM_DESC {
    UINT32 type;
    UINT32 elementType;
    const WCHAR *name;
} COR_PRF_EVENTPIPE_PARAM_DESC;

typedef struct COR_PRF_EVENT_DATA {
    UINT64 ptr;
    UINT32 size;
    UINT32 reserved;
} COR_PRF_EVENT_DATA;

typedef struct COR_PRF_FILTER_DATA {
    UINT64 Ptr;
    UINT32 Size;
    UINT32 Type;
} COR_PRF_FILTER_DATA;

enum {
    COR_PRF_EVENTPIPE_LOGALWAYS = 0,
    COR_PRF_EVENTPIPE_CRITICAL = 1,
    COR_PRF_EVENTPIPE_ERROR = 2,
    COR_PRF_EVENTPIPE_WARNING = 3,
    COR_PRF_EVENTPIPE_INFORMATIONAL = 4,
    COR_PRF_EVENTPIPE_VERBOSE = 5
};

typedef void **ObjectHandleID;

/* ---- Callback function types (corprof.idl). Plain SysV functions on Linux. ---- */
typedef UINT_PTR FunctionIDMapper(FunctionID funcId, BOOL *pbHookFunction);
typedef UINT_PTR FunctionIDMapper2(FunctionID funcId, void *clientData, BOOL *pbHookFunction);

typedef void FunctionEnter(FunctionID funcID);
typedef void FunctionLeave(FunctionID funcID);
typedef void FunctionTailcall(FunctionID funcID);

typedef void FunctionEnter2(FunctionID funcId, UINT_PTR clientData, COR_PRF_FRAME_INFO func,
                            COR_PRF_FUNCTION_ARGUMENT_INFO *argumentInfo);
typedef void FunctionLeave2(FunctionID funcId, UINT_PTR clientData, COR_PRF_FRAME_INFO func,
                            COR_PRF_FUNCTION_ARGUMENT_RANGE *retvalRange);
typedef void FunctionTailcall2(FunctionID funcId, UINT_PTR clientData, COR_PRF_FRAME_INFO func);

typedef void FunctionEnter3(FunctionIDOrClientID functionIDOrClientID);
typedef void FunctionLeave3(FunctionIDOrClientID functionIDOrClientID);
typedef void FunctionTailcall3(FunctionIDOrClientID functionIDOrClientID);

typedef void FunctionEnter3WithInfo(FunctionIDOrClientID functionIDOrClientID, COR_PRF_ELT_INFO eltInfo);
typedef void FunctionLeave3WithInfo(FunctionIDOrClientID functionIDOrClientID, COR_PRF_ELT_INFO eltInfo);
typedef void FunctionTailcall3WithInfo(FunctionIDOrClientID functionIDOrClientID, COR_PRF_ELT_INFO eltInfo);

typedef HRESULT StackSnapshotCallback(FunctionID funcId, UINT_PTR ip, COR_PRF_FRAME_INFO frameInfo,
                                      ULONG32 contextSize, BYTE *context, void *clientData);

typedef BOOL ObjectReferenceCallback(ObjectID root, ObjectID *reference, void *clientData);

/* The IDL declares this one as a pointer type. */
typedef BOOL (*ObjectCallback)(ObjectID object, void *callbackState);

typedef void EventPipeProviderCallback(const UINT8 *source_id, UINT32 is_enabled, UINT8 level,
                                       UINT64 match_any_keywords, UINT64 match_all_keywords,
                                       COR_PRF_FILTER_DATA *filter_data, void *callback_data);

/* ---- Event masks: the COR_PRF_* flags and the attach masks, from prof_flags.def ---- */
#include "prof_flags.h"

#define COR_PRF_REQUIRE_PROFILE_IMAGE \
    (COR_PRF_USE_PROFILE_IMAGES | COR_PRF_MONITOR_CODE_TRANSITIONS | COR_PRF_MONITOR_ENTERLEAVE)
#define COR_PRF_MONITOR_IMMUTABLE                                                              \
    (COR_PRF_MONITOR_CODE_TRANSITIONS | COR_PRF_MONITOR_REMOTING |                             \
     COR_PRF_MONITOR_REMOTING_COOKIE | COR_PRF_MONITOR_REMOTING_ASYNC |                        \
     COR_PRF_ENABLE_INPROC_DEBUGGING | COR_PRF_ENABLE_JIT_MAPS |                               \
     COR_PRF_ENABLE_OBJECT_ALLOCATED | COR_PRF_ENABLE_FUNCTION_ARGS |                          \
     COR_PRF_ENABLE_FUNCTION_RETVAL | COR_PRF_ENABLE_FRAME_INFO | COR_PRF_USE_PROFILE_IMAGES | \
     COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST | COR_PRF_DISABLE_ALL_NGEN_IMAGES)
#define COR_PRF_HIGH_MONITOR_IMMUTABLE COR_PRF_HIGH_DISABLE_TIERED_COMPILATION

/* COR_PRF_MISC: special IDs. */
#define PROFILER_PARENT_UNKNOWN 0xFFFFFFFDu
#define PROFILER_GLOBAL_CLASS 0xFFFFFFFEu
#define PROFILER_GLOBAL_MODULE 0xFFFFFFFFu

/* ---- Values of the enumerations that com_types.h types as int32_t ---- */
enum { COR_PRF_SNAPSHOT_DEFAULT = 0x0, COR_PRF_SNAPSHOT_REGISTER_CONTEXT = 0x1, COR_PRF_SNAPSHOT_X86_OPTIMIZED = 0x2 };
enum { COR_PRF_CACHED_FUNCTION_FOUND = 0, COR_PRF_CACHED_FUNCTION_NOT_FOUND = 1 };
enum {
    COR_PRF_SUSPEND_OTHER = 0,
    COR_PRF_SUSPEND_FOR_GC = 1,
    COR_PRF_SUSPEND_FOR_APPDOMAIN_SHUTDOWN = 2,
    COR_PRF_SUSPEND_FOR_CODE_PITCHING = 3,
    COR_PRF_SUSPEND_FOR_SHUTDOWN = 4,
    COR_PRF_SUSPEND_FOR_INPROC_DEBUGGER = 6,
    COR_PRF_SUSPEND_FOR_GC_PREP = 7,
    COR_PRF_SUSPEND_FOR_REJIT = 8,
    COR_PRF_SUSPEND_FOR_PROFILER = 9
};
enum { COR_PRF_DESKTOP_CLR = 0x1, COR_PRF_CORE_CLR = 0x2 };
enum { COR_PRF_REJIT_BLOCK_INLINING = 0x1, COR_PRF_REJIT_INLINING_CALLBACKS = 0x2 };
enum { COR_PRF_HANDLE_TYPE_WEAK = 0x1, COR_PRF_HANDLE_TYPE_STRONG = 0x2, COR_PRF_HANDLE_TYPE_PINNED = 0x3 };
enum {
    COR_PRF_GC_ROOT_OTHER = 0,
    COR_PRF_GC_ROOT_STACK = 1,
    COR_PRF_GC_ROOT_FINALIZER = 2,
    COR_PRF_GC_ROOT_HANDLE = 3
};
enum {
    COR_PRF_GC_ROOT_PINNING = 0x1,
    COR_PRF_GC_ROOT_WEAKREF = 0x2,
    COR_PRF_GC_ROOT_INTERIOR = 0x4,
    COR_PRF_GC_ROOT_REFCOUNTED = 0x8
};
enum { COR_PRF_FINALIZER_CRITICAL = 0x1 };
enum { COR_PRF_GC_OTHER = 0, COR_PRF_GC_INDUCED = 1 };

/* COR_PRF_MODULE_FLAGS, from GetModuleInfo2. */
enum {
    COR_PRF_MODULE_DISK = 0x00000001,
    COR_PRF_MODULE_NGEN = 0x00000002,
    COR_PRF_MODULE_DYNAMIC = 0x00000004,
    COR_PRF_MODULE_COLLECTIBLE = 0x00000008,
    COR_PRF_MODULE_RESOURCE = 0x00000010,
    COR_PRF_MODULE_FLAT_LAYOUT = 0x00000020,
    COR_PRF_MODULE_WINDOWS_RUNTIME = 0x00000040
};

/* ---- Metadata values (corhdr.h) ---- */
/* CorTypeAttr: visibility, of which the nested kinds are 2..7. */
enum {
    tdVisibilityMask = 0x00000007,
    tdNotPublic = 0x00000000,
    tdPublic = 0x00000001,
    tdNestedPublic = 0x00000002,
    tdNestedPrivate = 0x00000003,
    tdNestedFamily = 0x00000004,
    tdNestedAssembly = 0x00000005,
    tdNestedFamANDAssem = 0x00000006,
    tdNestedFamORAssem = 0x00000007
};
#define IsTdNested(x) (((x) & tdVisibilityMask) >= tdNestedPublic)

/* CorElementType (com_types.h types it as uint32_t). */
enum {
    ELEMENT_TYPE_END = 0x00,
    ELEMENT_TYPE_VOID = 0x01,
    ELEMENT_TYPE_BOOLEAN = 0x02,
    ELEMENT_TYPE_CHAR = 0x03,
    ELEMENT_TYPE_I1 = 0x04,
    ELEMENT_TYPE_U1 = 0x05,
    ELEMENT_TYPE_I2 = 0x06,
    ELEMENT_TYPE_U2 = 0x07,
    ELEMENT_TYPE_I4 = 0x08,
    ELEMENT_TYPE_U4 = 0x09,
    ELEMENT_TYPE_I8 = 0x0a,
    ELEMENT_TYPE_U8 = 0x0b,
    ELEMENT_TYPE_R4 = 0x0c,
    ELEMENT_TYPE_R8 = 0x0d,
    ELEMENT_TYPE_STRING = 0x0e,
    ELEMENT_TYPE_PTR = 0x0f,
    ELEMENT_TYPE_BYREF = 0x10,
    ELEMENT_TYPE_VALUETYPE = 0x11,
    ELEMENT_TYPE_CLASS = 0x12,
    ELEMENT_TYPE_VAR = 0x13,
    ELEMENT_TYPE_ARRAY = 0x14,
    ELEMENT_TYPE_GENERICINST = 0x15,
    ELEMENT_TYPE_TYPEDBYREF = 0x16,
    ELEMENT_TYPE_I = 0x18,
    ELEMENT_TYPE_U = 0x19,
    ELEMENT_TYPE_FNPTR = 0x1b,
    ELEMENT_TYPE_OBJECT = 0x1c,
    ELEMENT_TYPE_SZARRAY = 0x1d,
    ELEMENT_TYPE_MVAR = 0x1e,
    ELEMENT_TYPE_CMOD_REQD = 0x1f,
    ELEMENT_TYPE_CMOD_OPT = 0x20,
    ELEMENT_TYPE_INTERNAL = 0x21,
    ELEMENT_TYPE_MAX = 0x22,
    ELEMENT_TYPE_MODIFIER = 0x40,
    ELEMENT_TYPE_SENTINEL = 0x41,
    ELEMENT_TYPE_PINNED = 0x45
};

/* CorCallingConvention: the first byte of a signature. */
enum {
    IMAGE_CEE_CS_CALLCONV_DEFAULT = 0x0,
    IMAGE_CEE_CS_CALLCONV_C = 0x1,
    IMAGE_CEE_CS_CALLCONV_STDCALL = 0x2,
    IMAGE_CEE_CS_CALLCONV_THISCALL = 0x3,
    IMAGE_CEE_CS_CALLCONV_FASTCALL = 0x4,
    IMAGE_CEE_CS_CALLCONV_VARARG = 0x5,
    IMAGE_CEE_CS_CALLCONV_FIELD = 0x6,
    IMAGE_CEE_CS_CALLCONV_LOCAL_SIG = 0x7,
    IMAGE_CEE_CS_CALLCONV_PROPERTY = 0x8,
    IMAGE_CEE_CS_CALLCONV_UNMANAGED = 0x9,
    IMAGE_CEE_CS_CALLCONV_GENERICINST = 0xa,
    IMAGE_CEE_CS_CALLCONV_NATIVEVARARG = 0xb,
    IMAGE_CEE_CS_CALLCONV_MAX = 0xc,
    IMAGE_CEE_CS_CALLCONV_MASK = 0x0f,
    IMAGE_CEE_CS_CALLCONV_GENERIC = 0x10,
    IMAGE_CEE_CS_CALLCONV_HASTHIS = 0x20,
    IMAGE_CEE_CS_CALLCONV_EXPLICITTHIS = 0x40
};

#endif
