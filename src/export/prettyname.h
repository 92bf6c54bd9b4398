/* prettyname.h: compiler-generated .NET method names shown as what was written.
 *
 *   Ns.C+<Foo>d__3::MoveNext          -> Ns.C::Foo (async)
 *   Ns.C+<Foo>d__3::get_Current       -> Ns.C::Foo (iterator)
 *   Ns.C+<Foo>d__3::System.Collections.IEnumerator.MoveNext -> Ns.C::Foo (iterator)
 *   Ns.C+<>c::<Main>b__0_0            -> lambda in Ns.C::Main
 *   Ns.C+<>c::<Main>b__0_2            -> lambda 3 in Ns.C::Main
 *   Ns.C::<Main>g__Local|0_0          -> Local (local function in Ns.C::Main)
 *   Ns.Program::<Main>$               -> Ns.Program::Main (top-level statements)
 *
 * Async methods and iterators both compile to a <Foo>d__N class whose MoveNext
 * runs the body; the agent names an iterator's by the interface method it
 * implements (names.c), so MoveNext alone reads "(async)" and every other
 * member "(iterator)" (a trace of an older agent: its iterators' steps read
 * "(async)"). Nested forms (an async lambda, a
 * lambda in a local function) are rewritten from the inside out. A name that is
 * not compiler-generated, or that does not parse, is copied as it is. */
#ifndef DNP_PRETTYNAME_H
#define DNP_PRETTYNAME_H

#include <stddef.h>

#include "stories.h"

/* Writes the readable form of raw into out (len bytes, NUL-terminated, cut short
 * if it does not fit). Returns 1 when the name was rewritten, 0 when copied. */
int dnp_pretty_name(const char *raw, char *out, size_t len);

/* Exception stories with their names (stack, throw site, catcher, each step's
 * function) as the call, sample and allocation reports show them: pass
 * dnp_pretty_story_emit and a dnp_pretty_emit holding the real emit and its ctx
 * to dnp_stories_begin_ordered. */
typedef struct dnp_pretty_emit {
    dnp_story_emit emit;
    void *ctx;
} dnp_pretty_emit;
void dnp_pretty_story_emit(void *ctx, const dnp_story *s, const dnp_stories *all);

#endif
