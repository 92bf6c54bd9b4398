/* prof_flags.h: the COR_PRF_* event-mask constants and the masks an attached
 * profiler may set, all made from prof_flags.def. Dependency-free: the agent
 * (through prof_structs.h), the trace library and the front end (through
 * families.h) include it. */
#ifndef DNP_PROF_FLAGS_H
#define DNP_PROF_FLAGS_H

/* The word a flag belongs to: picks one of two expressions. */
#define DNP_PRF_WORD_LOW(low, high) low
#define DNP_PRF_WORD_HIGH(low, high) high

/* COR_PRF_MONITOR_GC, COR_PRF_HIGH_BASIC_GC, ... (unsigned: one is 0x80000000). */
enum dnp_prf_flag {
#define DNP_PRF_FLAG(name, bit, word, after_attach) COR_PRF_##name = bit##u,
#include "prof_flags.def"
#undef DNP_PRF_FLAG
};

enum dnp_prf_mask {
    COR_PRF_MONITOR_NONE = 0u,
    COR_PRF_HIGH_MONITOR_NONE = 0u,
    /* 0x106502FE and 0xF6 in .NET Core: what SetEventMask[2] accepts after an attach. */
    COR_PRF_ALLOWABLE_AFTER_ATTACH = 0u
#define DNP_PRF_FLAG(name, bit, word, after_attach) | DNP_PRF_WORD_##word((after_attach ? bit##u : 0u), 0u)
#include "prof_flags.def"
#undef DNP_PRF_FLAG
    ,
    COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH = 0u
#define DNP_PRF_FLAG(name, bit, word, after_attach) | DNP_PRF_WORD_##word(0u, (after_attach ? bit##u : 0u))
#include "prof_flags.def"
#undef DNP_PRF_FLAG
};

#endif
