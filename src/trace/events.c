/* events.c: the event table (generated from events.def), the field types, the
 * family words, and the display names of the enumerations and HRESULTs the
 * runtime passes to callbacks. */
#include "trace_format.h"

/* ---- field types ---- */

const uint8_t dnp_field_nvalues[DNP_FT_COUNT] = {
#define X(name, nvalues) nvalues,
    DNP_FIELD_TYPES(X)
#undef X
};

const char *const dnp_field_type_names[DNP_FT_COUNT] = {
#define X(name, nvalues) #name,
    DNP_FIELD_TYPES(X)
#undef X
};

const char *const dnp_family_words[DNP_FAM_COUNT] = {
#define X(id, word) word,
    DNP_FAMILIES(X)
#undef X
};

/* ---- the event table (the walkers of DNP__SEQ, trace_format.h) ---- */

#define DNP__NF_A(t, n) +1 DNP__NF_B
#define DNP__NF_B(t, n) +1 DNP__NF_A
#define DNP__NF_A_END
#define DNP__NF_B_END

#define DNP__FT_A(t, n) DNP_FT_##t, DNP__FT_B
#define DNP__FT_B(t, n) DNP_FT_##t, DNP__FT_A
#define DNP__FT_A_END
#define DNP__FT_B_END

#define DNP__FN_A(t, n) #n, DNP__FN_B
#define DNP__FN_B(t, n) #n, DNP__FN_A
#define DNP__FN_A_END
#define DNP__FN_B_END

#define DNP_F(type, name) (type, name)

/* Every event fits the fixed arrays of dnp_event_info and dnp_trace_event, and
 * its fields by name (DNP_V) count the values the wire holds. */
#define DNP_EVENT(name_, family_, nest_, fields_)                                   \
    _Static_assert((0 DNP__SEQ(DNP__NF, fields_)) <= DNP_MAX_FIELDS, #name_ ": too many fields"); \
    _Static_assert(DNP_NV_##name_ <= DNP_MAX_VALUES, #name_ ": too many values");     \
    _Static_assert((int)DNP_VN_##name_ == (int)DNP_NV_##name_, #name_ ": fields by name miscounted");
#include "events.def"
#undef DNP_EVENT

const dnp_event_info dnp_events[DNP_EV_COUNT] = {
#define DNP_EVENT(name_, family_, nest_, fields_)                                   \
    [DNP_EV_##name_] = {                                                            \
        .name = #name_,                                                             \
        .family = DNP_FAM_##family_,                                                \
        .nest = DNP_NEST_##nest_,                                                   \
        .nfields = 0 DNP__SEQ(DNP__NF, fields_),                                    \
        .nvalues = DNP_NV_##name_,                                                  \
        .field_types = {DNP__SEQ(DNP__FT, fields_)},                                \
        .field_names = {DNP__SEQ(DNP__FN, fields_)},                                \
    },
#include "events.def"
#undef DNP_EVENT
};

#undef DNP_F

/* ---- enumerations the runtime passes (corprof.idl) ----
 * By value; NULL for a value with no name. */

static const char *const gc_reasons[] = {"COR_PRF_GC_OTHER", "COR_PRF_GC_INDUCED"};
static const char *const suspend_reasons[] = {
    [0] = "COR_PRF_SUSPEND_OTHER",
    [1] = "COR_PRF_SUSPEND_FOR_GC",
    [2] = "COR_PRF_SUSPEND_FOR_APPDOMAIN_SHUTDOWN",
    [3] = "COR_PRF_SUSPEND_FOR_CODE_PITCHING",
    [4] = "COR_PRF_SUSPEND_FOR_SHUTDOWN",
    [6] = "COR_PRF_SUSPEND_FOR_INPROC_DEBUGGER",
    [7] = "COR_PRF_SUSPEND_FOR_GC_PREP",
    [8] = "COR_PRF_SUSPEND_FOR_REJIT",
    [9] = "COR_PRF_SUSPEND_FOR_PROFILER",
};
static const char *const jit_cache_results[] = {"COR_PRF_CACHED_FUNCTION_FOUND", "COR_PRF_CACHED_FUNCTION_NOT_FOUND"};
static const char *const transition_reasons[] = {"COR_PRF_TRANSITION_CALL", "COR_PRF_TRANSITION_RETURN"};

#define NAME_OF(names, v) ((v) < sizeof names / sizeof *names ? names[v] : NULL)

const char *dnp_gc_reason_name(uint64_t v) {
    return NAME_OF(gc_reasons, v);
}

const char *dnp_suspend_reason_name(uint64_t v) {
    return NAME_OF(suspend_reasons, v);
}

const char *dnp_jit_cache_name(uint64_t v) {
    return NAME_OF(jit_cache_results, v);
}

const char *dnp_transition_reason_name(uint64_t v) {
    return NAME_OF(transition_reasons, v);
}

#undef NAME_OF

/* HRESULTs a profiler meets (winerror.h, corerror.xml), sorted by value. */
#define DNP_HRESULTS(X)                                                       \
    X(0x00000000u, S_OK)                                                      \
    X(0x00000001u, S_FALSE)                                                   \
    X(0x80004001u, E_NOTIMPL)                                                 \
    X(0x80004002u, E_NOINTERFACE)                                             \
    X(0x80004003u, E_POINTER)                                                 \
    X(0x80004004u, E_ABORT)                                                   \
    X(0x80004005u, E_FAIL)                                                    \
    X(0x8000FFFFu, E_UNEXPECTED)                                              \
    X(0x80040110u, CLASS_E_NOAGGREGATION)                                     \
    X(0x80040111u, CLASS_E_CLASSNOTAVAILABLE)                                 \
    X(0x80070002u, COR_E_FILENOTFOUND)                                        \
    X(0x80070005u, E_ACCESSDENIED)                                            \
    X(0x8007000Eu, E_OUTOFMEMORY)                                             \
    X(0x80070057u, E_INVALIDARG)                                              \
    X(0x8007007Au, HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER))             \
    X(0x80131350u, CORPROF_E_FUNCTION_NOT_COMPILED)                           \
    X(0x80131351u, CORPROF_E_DATAINCOMPLETE)                                  \
    X(0x80131354u, CORPROF_E_FUNCTION_NOT_IL)                                 \
    X(0x80131355u, CORPROF_E_NOT_MANAGED_THREAD)                              \
    X(0x80131356u, CORPROF_E_CALL_ONLY_FROM_INIT)                             \
    X(0x8013135Bu, CORPROF_E_NOT_YET_AVAILABLE)                               \
    X(0x8013135Cu, CORPROF_E_TYPE_IS_PARAMETERIZED)                           \
    X(0x8013135Du, CORPROF_E_FUNCTION_IS_PARAMETERIZED)                       \
    X(0x8013135Eu, CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD)                \
    X(0x8013135Fu, CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX)                     \
    X(0x80131360u, CORPROF_E_STACKSNAPSHOT_UNSAFE)                            \
    X(0x80131361u, CORPROF_E_STACKSNAPSHOT_ABORTED)                           \
    X(0x80131362u, CORPROF_E_LITERALS_HAVE_NO_ADDRESS)                        \
    X(0x80131363u, CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)                       \
    X(0x80131364u, CORPROF_E_ASYNCHRONOUS_UNSAFE)                             \
    X(0x80131365u, CORPROF_E_CLASSID_IS_ARRAY)                                \
    X(0x80131366u, CORPROF_E_CLASSID_IS_COMPOSITE)                            \
    X(0x80131367u, CORPROF_E_PROFILER_DETACHING)                              \
    X(0x80131368u, CORPROF_E_PROFILER_NOT_ATTACHABLE)                         \
    X(0x80131369u, CORPROF_E_UNRECOGNIZED_PIPE_MSG_FORMAT)                    \
    X(0x8013136Au, CORPROF_E_PROFILER_ALREADY_ACTIVE)                         \
    X(0x8013136Bu, CORPROF_E_PROFILEE_INCOMPATIBLE_WITH_TRIGGER)              \
    X(0x8013136Cu, CORPROF_E_IPC_FAILED)                                      \
    X(0x8013136Du, CORPROF_E_PROFILEE_PROCESS_NOT_FOUND)                      \
    X(0x8013136Eu, CORPROF_E_CALLBACK3_REQUIRED)                              \
    X(0x8013136Fu, CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER)              \
    X(0x80131370u, CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT)            \
    X(0x80131371u, CORPROF_E_RUNTIME_UNINITIALIZED)                           \
    X(0x80131372u, CORPROF_E_IMMUTABLE_FLAGS_SET)                             \
    X(0x80131373u, CORPROF_E_PROFILER_NOT_YET_INITIALIZED)                    \
    X(0x80131374u, CORPROF_E_INCONSISTENT_WITH_FLAGS)                         \
    X(0x80131375u, CORPROF_E_PROFILER_CANCEL_ACTIVATION)                      \
    X(0x80131376u, CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE)                    \
    X(0x80131378u, CORPROF_E_DEBUGGING_DISABLED)                              \
    X(0x80131379u, CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC)               \
    X(0x8013137Au, CORPROF_E_MODULE_IS_DYNAMIC)                               \
    X(0x8013137Bu, CORPROF_E_CALLBACK4_REQUIRED)                              \
    X(0x8013137Cu, CORPROF_E_REJIT_NOT_ENABLED)                               \
    X(0x8013137Eu, CORPROF_E_FUNCTION_IS_COLLECTIBLE)                         \
    X(0x80131380u, CORPROF_E_CALLBACK6_REQUIRED)                              \
    X(0x80131382u, CORPROF_E_CALLBACK7_REQUIRED)                              \
    X(0x80131383u, CORPROF_E_REJIT_INLINING_DISABLED)                         \
    X(0x80131384u, CORDIAGIPC_E_BAD_ENCODING)                                 \
    X(0x80131385u, CORDIAGIPC_E_UNKNOWN_COMMAND)                              \
    X(0x80131386u, CORDIAGIPC_E_UNKNOWN_MAGIC)                                \
    X(0x80131387u, CORDIAGIPC_E_UNKNOWN_ERROR)                                \
    X(0x80131388u, CORPROF_E_SUSPENSION_IN_PROGRESS)                          \
    X(0x80131522u, COR_E_TYPELOAD)

static const struct {
    uint32_t hr;
    const char *name;
} hresults[] = {
#define X(value, name) {value, #name},
    DNP_HRESULTS(X)
#undef X
};

const char *dnp_hresult_name(uint32_t hr) {
    size_t lo = 0, hi = sizeof hresults / sizeof hresults[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hresults[mid].hr == hr)
            return hresults[mid].name;
        if (hresults[mid].hr < hr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
