/* stack.c: stack snapshots of the current thread (stack.h). */
#include "stack.h"

#include "agent.h"

void stack_push(stack_snapshot *s, FunctionID fn) {
    if (s->n < STACK_MAX_FRAMES)
        s->f[s->n++] = fn;
    else
        s->more++;
}

static HRESULT on_frame(FunctionID fn, UINT_PTR ip, COR_PRF_FRAME_INFO info, ULONG32 size, BYTE *ctx, void *data) {
    (void)ip, (void)info, (void)size, (void)ctx;
    if (fn) /* 0: native code between managed frames */
        stack_push(data, fn);
    return S_OK;
}

int stack_take(stack_snapshot *s) {
    s->n = s->more = 0;
    if (FAILED(INFO_CALL(DoStackSnapshot, 0, on_frame, 0 /* COR_PRF_SNAPSHOT_DEFAULT */, s, NULL, 0))) {
        s->n = s->more = 0;
        return -1;
    }
    return 0;
}
