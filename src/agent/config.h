/* config.h: what the agent reads from its environment (session.h names it). */
#ifndef DNP_CONFIG_H
#define DNP_CONFIG_H

#include <stddef.h>

/* The trace path for this process: DNPROF_OUTPUT with %p expanded, made unique
 * for a child process of the one it was meant for (DNPROF_ROOT_PID), or
 * dnprof-<pid>.trace in the working directory. *exclusive: must not exist yet. */
void config_output_path(char *out, size_t cap, int *exclusive);

/* The process's command line, arguments separated by spaces. */
void config_cmdline(char *out, size_t cap);

/* DNPROF_FLUSH_MS, or 0 for the default. */
unsigned config_flush_ms(void);

#endif
