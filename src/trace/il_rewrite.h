/* il_rewrite.h: the IL rewrite of `--trace` (issue 18 part 3, docs/il.md#the-rewrite):
 * a method body wrapped so that it calls the agent at entry and at every exit,
 * exits by exception included. Pure C over byte buffers (the agent hands in the
 * original body from GetILFunctionBody and the tokens it made; the unit tests
 * and fuzz_il_rewrite hand in anything).
 *
 * The rewritten body (always a fat header, its locals extended by two):
 *
 *       ldc.i4 id; ldc.i8 enter; conv.i; calli int64(int32) unmanaged cdecl; stloc start
 *       (with enter_args: ldc.i4 id; <enter_args' IL>; ldc.i8 enter; conv.i;
 *        calli <enter_sig>; stloc start: the IL pushes more arguments for enter,
 *        read as the call starts: an argument, a field of this)
 *   try {                                        <- the new clause, last (outermost)
 *       the original code: short branches widened, switch and branch targets,
 *       exception clauses moved; each `ret` -> `stloc result; leave END`
 *       (`leave END` when void); a `tail.` prefix dropped (no tail call from a try)
 *   } finally {
 *       ldc.i4 id; ldloc start; ldc.i8 exit; conv.i; calli void(int32, int64) unmanaged cdecl
 *       endfinally
 *   }
 *   END: ldloc result; ret                       (ret when void)
 *
 * A body with `jmp` (which may not leave a try) is refused. */
#ifndef DNP_IL_REWRITE_H
#define DNP_IL_REWRITE_H

#include <stddef.h>
#include <stdint.h>

#define DNP_IL_NO_LOCAL UINT32_MAX
#define DNP_IL_ENTER_ARGS_MAX 32
#define DNP_IL_MAX_PUSHES 8

typedef struct dnp_il_probe {
    uint32_t method_id;    /* the first argument of both probes */
    uint64_t enter_fn;     /* int64_t enter(int32_t id): returns the start */
    uint64_t exit_fn;      /* void exit(int32_t id, int64_t start) */
    uint32_t enter_sig;    /* StandAloneSig tokens of their calli signatures */
    uint32_t exit_sig;
    uint32_t locals_sig;   /* the extended locals (dnp_il_locals_sig), a StandAloneSig token */
    uint32_t start_local;  /* the int64 local */
    uint32_t result_local; /* the return value's local, DNP_IL_NO_LOCAL when void */
    /* IL that pushes enter's arguments after the id (no branch, no ret: ldarg,
     * ldfld, ldind), enter_args_len bytes of it (0: none), enter_pushes values
     * (at most DNP_IL_MAX_PUSHES); enter_sig is then a signature that takes them */
    uint8_t enter_args[DNP_IL_ENTER_ARGS_MAX];
    uint32_t enter_args_len, enter_pushes;
} dnp_il_probe;

/* The calli signatures of the probes (II.23.2.3, unmanaged cdecl), for
 * IMetaDataEmit::GetTokenFromSig. */
extern const uint8_t dnp_il_enter_sig[4];
extern const uint8_t dnp_il_exit_sig[5];
/* int64 enter(int32 id, int32 a, int32 b, int32 c): three more int32 arguments */
extern const uint8_t dnp_il_enter_3i4_sig[7];

/* A compressed unsigned integer of a signature (II.23.2) at *p, before end,
 * into *v, *p moved past it; -1 when it is cut short or malformed. */
int dnp_sig_uint(const uint8_t **p, const uint8_t *end, uint32_t *v);

/* An ARRAY's sizes and lower bounds (II.23.2.13), after its rank: 0 with *p
 * past them, -1 when cut short. */
int dnp_sig_skip_bounds(const uint8_t **p, const uint8_t *end);

/* Where the return type of method signature sig[0, n) lies, custom modifiers
 * left out: *off, *len; *is_void for void. -1 with one line in err when the
 * signature cannot be read or the return type cannot be a local (typedref). */
int dnp_sig_return_type(const uint8_t *sig, size_t n, size_t *off, size_t *len, int *is_void, char *err,
                        size_t errlen);

/* The locals signature old[0, old_len) (old_len 0: the method had none) with
 * an int64 and, when ret_len > 0, the type ret[0, ret_len) appended. Returns
 * its size in out, or -1 (unreadable, too many locals, cap too small). The
 * new locals' indices go into *start_local and *result_local (DNP_IL_NO_LOCAL
 * when ret_len is 0). */
long dnp_il_locals_sig(const uint8_t *old, size_t old_len, const uint8_t *ret, size_t ret_len, uint8_t *out,
                       size_t cap, uint32_t *start_local, uint32_t *result_local);

/* An upper bound of the rewritten size of body[0, n) (0 when it does not parse). */
size_t dnp_il_rewrite_bound(const uint8_t *body, size_t n);

/* Rewrites body[0, n) into out. Returns the new body's size, or -1 with one
 * line in err saying why the method cannot be rewritten. */
long dnp_il_rewrite(const uint8_t *body, size_t n, const dnp_il_probe *p, uint8_t *out, size_t cap, char *err,
                    size_t errlen);

#endif
