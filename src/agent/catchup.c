/* catchup.c: an attached agent did not see the program start. At
 * ProfilerAttachComplete it records what already exists: app domains,
 * assemblies, modules (ICorProfilerInfo3::EnumModules) and managed threads
 * (ICorProfilerInfo4::EnumThreads) with their OS names, as Existing* events, so
 * that an attach trace stands alone. The calls are made inside the callback,
 * so they are synchronous (docs/design-notes.md#synchronous-calls). */
#include "catchup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callbacks.h"

/* ICorProfilerModuleEnum and ICorProfilerThreadEnum (corprof.idl; com.h). */
typedef struct module_enum_vtbl {
    DNP_ENUM_SLOTS(ICorProfilerModuleEnum, ModuleID)
} module_enum_vtbl;
struct ICorProfilerModuleEnum {
    const module_enum_vtbl *lpVtbl;
};

typedef struct thread_enum_vtbl {
    DNP_ENUM_SLOTS(ICorProfilerThreadEnum, ThreadID)
} thread_enum_vtbl;
struct ICorProfilerThreadEnum {
    const thread_enum_vtbl *lpVtbl;
};

#define MAX_SEEN 4096

typedef struct id_set {
    UINT_PTR ids[MAX_SEEN];
    size_t n;
} id_set;

/* Adds id; 1 when it is new, 0 when seen (or the set is full). */
static int id_set_add(id_set *s, UINT_PTR id) {
    for (size_t i = 0; i < s->n; i++)
        if (s->ids[i] == id)
            return 0;
    if (s->n == MAX_SEEN)
        return 0;
    s->ids[s->n++] = id;
    return 1;
}

static int family_on(int family) {
    return (g_agent.events.families & (1u << family)) != 0;
}

static unsigned catchup_modules(void) {
    ICorProfilerModuleEnum *en = NULL;
    if (FAILED(INFO_CALL(EnumModules, &en)) || !en)
        return 0;
    id_set *domains = calloc(1, sizeof *domains), *assemblies = calloc(1, sizeof *assemblies);
    unsigned count = 0;
    ModuleID ids[64];
    ULONG got = 0;
    /* Next gives S_FALSE with the last, shorter batch. */
    while (domains && assemblies && SUCCEEDED(en->lpVtbl->Next(en, 64, ids, &got)) && got > 0 &&
           got <= 64) {
        for (ULONG i = 0; i < got; i++) {
            ModuleID module = ids[i];
            AssemblyID assembly = 0;
            AppDomainID domain = 0;
            ModuleID manifest = 0;
            LPCBYTE base = NULL;
            ULONG len = 0;
            if (FAILED(INFO_CALL(GetModuleInfo, module, &base, 0, &len, NULL, &assembly)))
                assembly = 0;
            if (assembly == (AssemblyID)0xFFFFFFFD /* PROFILER_PARENT_UNKNOWN */)
                assembly = 0;
            if (assembly && FAILED(INFO_CALL(GetAssemblyInfo, assembly, 0, &len, NULL, &domain,
                                             &manifest)))
                domain = 0;
            if (domain && id_set_add(domains, domain) && family_on(DNP_FAM_APPDOMAINS))
                REC(ExistingAppDomain, APPDOMAIN(domain, 1));
            if (assembly && id_set_add(assemblies, assembly) && family_on(DNP_FAM_ASSEMBLIES))
                REC(ExistingAssembly, ASSEMBLY(assembly, 1), APPDOMAIN(domain, 1));
            if (family_on(DNP_FAM_MODULES))
                REC(ExistingModule, MODULE(module, 1), ASSEMBLY(assembly, 1));
            count++;
        }
    }
    free(domains);
    free(assemblies);
    en->lpVtbl->Release(en);
    return count;
}

/* The OS name of a thread of this process ("" if gone). */
static size_t thread_name(DWORD tid, char *out, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", (unsigned)tid);
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        n = 0;
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == 0))
        n--;
    out[n] = 0;
    return (size_t)n;
}

static unsigned catchup_threads(void) {
    if (!AGENT_HAS_INFO(EnumThreads) || !family_on(DNP_FAM_THREADS))
        return 0;
    ICorProfilerThreadEnum *en = NULL;
    if (FAILED(INFO_CALL(EnumThreads, &en)) || !en)
        return 0;
    unsigned count = 0;
    ThreadID ids[64];
    ULONG got = 0;
    while (SUCCEEDED(en->lpVtbl->Next(en, 64, ids, &got)) && got > 0 && got <= 64) {
        for (ULONG i = 0; i < got; i++) {
            DWORD tid = 0;
            char name[64];
            size_t len = 0;
            if (SUCCEEDED(INFO_CALL(GetThreadInfo, ids[i], &tid)) && tid)
                len = thread_name(tid, name, sizeof name);
            REC(ExistingThread, ids[i], tid, len ? rec_string(name, len) : 0);
            count++;
        }
    }
    en->lpVtbl->Release(en);
    return count;
}

void catchup_record(void) {
    unsigned modules = catchup_modules();
    unsigned threads = catchup_threads();
    rec_note(0, "attached to a running process: %u modules and %u managed threads existed; what "
                "happened before the attach was not seen",
             modules, threads);
}
