/* stop_signal.h: a program ended by Ctrl-C (SIGINT), SIGQUIT, SIGTERM or
 * SIGHUP dies by the signal, with no Shutdown and no exit handler; the agent
 * writes what it holds first (docs/agent.md, "Shutdown may never come"). */
#ifndef DNP_STOP_SIGNAL_H
#define DNP_STOP_SIGNAL_H

/* Goes between the runtime's handlers of SIGINT, SIGQUIT, SIGTERM and SIGHUP and the signal's
 * course, once, at start-up (not after an attach): a signal the program
 * ignores stays ignored. 0, or -1 (said why; nothing else changes). */
int stop_signal_install(void);

#endif
