/* com_types.h: the COM and profiling-API scalar types, as CoreCLR's PAL defines them
 * on Linux x86-64 (pal_mstypes.h, corprof.idl, cor.h, corhdr.h). Written here, not copied.
 *
 * STDMETHODCALLTYPE is empty on Linux: every interface method is a plain SysV
 * function whose first argument is the object pointer. WCHAR is UTF-16. */
#ifndef DNP_COM_TYPES_H
#define DNP_COM_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <uchar.h>

typedef int32_t HRESULT;
typedef uint32_t ULONG;
typedef int32_t LONG;
typedef uint32_t DWORD;
typedef uint32_t UINT;
typedef int32_t BOOL;
typedef uint8_t BYTE;
typedef uint16_t USHORT;
typedef uint64_t ULONG64;
typedef uint64_t UINT64;
typedef uintptr_t UINT_PTR;
typedef size_t SIZE_T;
typedef char16_t WCHAR;
typedef const WCHAR *LPCWSTR;
typedef WCHAR *LPWSTR;
typedef const BYTE *LPCBYTE;
typedef BYTE COR_SIGNATURE;
typedef COR_SIGNATURE *PCOR_SIGNATURE;
typedef const COR_SIGNATURE *PCCOR_SIGNATURE;
typedef uint32_t CorElementType;

typedef struct GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;
typedef GUID IID;
typedef GUID CLSID;
typedef const GUID *REFGUID;
typedef const IID *REFIID;
typedef const CLSID *REFCLSID;
typedef const GUID *LPCGUID;

/* Profiling API IDs: opaque, pointer-sized. */
typedef UINT_PTR AppDomainID;
typedef UINT_PTR AssemblyID;
typedef UINT_PTR ModuleID;
typedef UINT_PTR ClassID;
typedef UINT_PTR FunctionID;
typedef UINT_PTR ThreadID;
typedef UINT_PTR ObjectID;
typedef UINT_PTR GCHandleID;
typedef UINT_PTR ReJITID;
typedef UINT_PTR ProcessID;
typedef UINT_PTR ContextID;
typedef UINT_PTR COR_PRF_ELT_INFO;
typedef UINT_PTR COR_PRF_FRAME_INFO;
typedef UINT_PTR EVENTPIPE_PROVIDER;
typedef UINT_PTR EVENTPIPE_EVENT;
typedef UINT_PTR EVENTPIPE_SESSION;

typedef union FunctionIDOrClientID {
    FunctionID functionID;
    UINT_PTR clientID;
} FunctionIDOrClientID;

/* Metadata tokens (cor.h): the top byte is the table. */
typedef uint32_t mdToken;
typedef mdToken mdModule, mdTypeRef, mdTypeDef, mdFieldDef, mdMethodDef, mdParamDef,
    mdInterfaceImpl, mdMemberRef, mdCustomAttribute, mdPermission, mdSignature, mdEvent,
    mdProperty, mdModuleRef, mdTypeSpec, mdAssembly, mdAssemblyRef, mdFile, mdExportedType,
    mdManifestResource, mdGenericParam, mdMethodSpec, mdGenericParamConstraint, mdString,
    mdCPToken;
typedef void *HCORENUM;

enum {
    mdtModule = 0x00000000,
    mdtTypeRef = 0x01000000,
    mdtTypeDef = 0x02000000,
    mdtFieldDef = 0x04000000,
    mdtMethodDef = 0x06000000,
    mdtMemberRef = 0x0a000000,
    mdtSignature = 0x11000000,
    mdtModuleRef = 0x1a000000,
    mdtTypeSpec = 0x1b000000,
    mdtAssemblyRef = 0x23000000,
    mdtExportedType = 0x27000000,
    mdtMethodSpec = 0x2b000000,
    mdtString = 0x70000000,
    mdTokenNil = 0
};
#define DNP_TOKEN_TYPE(tk) ((uint32_t)(tk) & 0xff000000u)

/* COM result codes used here. */
#define S_OK ((HRESULT)0)
#define S_FALSE ((HRESULT)1)
#define E_NOTIMPL ((HRESULT)0x80004001)
#define E_NOINTERFACE ((HRESULT)0x80004002)
#define E_POINTER ((HRESULT)0x80004003)
#define E_FAIL ((HRESULT)0x80004005)
#define E_OUTOFMEMORY ((HRESULT)0x8007000E)
#define E_INVALIDARG ((HRESULT)0x80070057)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111)
#define HRESULT_INSUFFICIENT_BUFFER ((HRESULT)0x8007007A)
#define CORPROF_E_DATAINCOMPLETE ((HRESULT)0x80131351)
#define CORPROF_E_UNSUPPORTED_CALL_SEQUENCE ((HRESULT)0x80131363)
#define CORPROF_E_INCONSISTENT_WITH_FLAGS ((HRESULT)0x80131374)
#define CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER ((HRESULT)0x8013136F)
#define CORPROF_E_PROFILER_ALREADY_ACTIVE ((HRESULT)0x80131366)
#define SUCCEEDED(hr) ((HRESULT)(hr) >= 0)
#define FAILED(hr) ((HRESULT)(hr) < 0)

/* Enumerations passed by value in callbacks (corprof.idl). Plain ints. */
typedef int32_t COR_PRF_JIT_CACHE;
typedef int32_t COR_PRF_TRANSITION_REASON;
typedef int32_t COR_PRF_SUSPEND_REASON;
typedef int32_t COR_PRF_GC_REASON;
typedef int32_t COR_PRF_GC_ROOT_KIND;
typedef int32_t COR_PRF_GC_ROOT_FLAGS;
typedef int32_t COR_PRF_RUNTIME_TYPE;
typedef int32_t COR_PRF_SNAPSHOT_INFO;
typedef int32_t COR_PRF_HANDLE_TYPE;
typedef int32_t COR_PRF_REJIT_FLAGS;
typedef int32_t COR_PRF_FINALIZER_FLAGS;

enum { COR_PRF_TRANSITION_CALL = 0, COR_PRF_TRANSITION_RETURN = 1 };

/* Structures that cross the interface by pointer (corprof.idl). */
typedef struct COR_PRF_FUNCTION_ARGUMENT_RANGE {
    UINT_PTR startAddress;
    ULONG length;
} COR_PRF_FUNCTION_ARGUMENT_RANGE;

typedef struct COR_PRF_FUNCTION_ARGUMENT_INFO {
    ULONG numRanges;
    ULONG totalArgumentSize;
    COR_PRF_FUNCTION_ARGUMENT_RANGE ranges[1];
} COR_PRF_FUNCTION_ARGUMENT_INFO;

#endif
