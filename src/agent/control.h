/* control.h: the attached agent's control channel (docs/design-notes.md#ipc: a channel of the
 * profiler's own between its UI and its DLL). A unix socket in a private
 * directory the trigger named (0700, owned by this user), 0600, one per process:
 * <dir>/agent.<pid>.sock. A thread of the agent's own (signals blocked) serves
 * it; lines of text in, lines of text out (attach_blob.h has the words):
 *
 *   detach  -> "ok detaching" and ICorProfilerInfo3::RequestProfilerDetach,
 *              then, to every client still connected, "detached <events>"
 *              once the runtime said ProfilerDetachSucceeded and the trace is
 *              complete
 *   status  -> "ok recording <events> <trace path>"
 *
 * Only clients of this user (or root) are served (SO_PEERCRED). */
#ifndef DNP_CONTROL_H
#define DNP_CONTROL_H

/* Whether dir is a directory of this user that no one else can enter: 0, or
 * -1 after saying why. */
int control_dir_check(const char *dir);

/* Creates the socket in dir and starts the thread. 0, or -1 after saying why. */
int control_start(const char *dir);

/* The same for an agent loaded at start-up, in /tmp/dnprof-<uid> (made if
 * missing), as <dir>/run.<pid>.sock: it serves heap snapshots (heap.h); a
 * detach is refused. 0, or -1 (quietly). */
int control_start_run(void);

/* Tells every connected client final (a line, without its newline), closes
 * them and the socket, removes it, and joins the thread: afterwards no code of
 * this module runs. NULL-safe to call when control_start was never called. */
void control_stop(const char *final);

#endif
