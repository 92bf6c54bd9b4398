/* say.h: the agent's voice, a leaf of the agent (it calls nothing of it).
 *
 * The agent runs inside someone else's program, and often inside a tool that
 * reads that program's stderr (MSBuild parses the compiler's). So when a front
 * end runs the program (dnprof run: a session directory, trace/session.h), every
 * message goes to this process's session file, agent.<pid>, as a "say" line, and
 * the front end prints it; the program's stderr stays the program's. Without a
 * front end, or when asked (DNP_ENV_STDERR=1), messages go to stderr instead. The session
 * file also carries the agent's state for the front end (pid, trace, started,
 * error, complete). */
#ifndef DNP_SAY_H
#define DNP_SAY_H

/* One line, "dnprof: ..." on stderr or "say ..." in the session file, written at
 * once. Safe from any thread; keeps errno. */
void agent_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Every agent_say line also goes to fd (-1: none): an attach tells its trigger
 * why it failed through a file in the control directory (attach.c). */
void agent_say_copy_to(int fd);

/* While an attached agent records, its lines go to fd only (the log in the
 * control directory that dnprof attach prints), never to the program's stderr;
 * -1 ends that. The caller owns fd. */
void agent_say_front_end(int fd);

/* Opens agent.<pid> in the session directory dir (NULL or "": no front end) and
 * writes the "pid" line. also_stderr: messages go to stderr as well. When the
 * file cannot be created, messages go to stderr. Returns 0, or -1 when dir was
 * given but the file could not be created. */
int say_session_open(const char *dir, int also_stderr);

/* Appends "key value\n" to the session file, if there is one. */
void say_session_line(const char *key, const char *value);

/* Closes the session file (a detach); messages go to stderr again. */
void say_session_close(void);

#endif
