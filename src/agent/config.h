/* config.h: what the agent is asked to do. At start-up it comes from the
 * environment (session.h names the variables); after an attach, from the blob the
 * trigger sent (attach.c). */
#ifndef DNP_CONFIG_H
#define DNP_CONFIG_H

#include <stddef.h>

typedef struct agent_config {
    char events[1024];   /* families or a hex mask (families.h); "" is the default */
    char output[4096];   /* the trace path, already made this process's own */
    int exclusive;       /* the trace must not exist yet */
    char session[4096];  /* session directory, "" for none */
    unsigned flush_ms;   /* background flush period, 0 for the default */
    /* method enter/leave (calls.c) */
    int calls;           /* 0 off, 1 counts and times (fast path), 2 with arguments (slow path),
                            3 counts, times and every call in order (fast path, timeline) */
    int all_code;        /* framework code too: no inlining, no ReadyToRun code */
    char include[1024];  /* comma-separated globs of functions to hook, "" for the default */
    char exclude[1024];  /* comma-separated globs of functions not to hook */
    /* sampling (sampler.c, docs/sampling.md) */
    int sample;           /* SAMPLER_OFF, _CPU, _WALL or _SUSPEND (sampler.h) */
    unsigned sample_rate; /* samples per second per thread, 0 for the default (100) */
} agent_config;

/* Fills cfg from the environment. */
void config_from_env(agent_config *cfg);

/* The trace path for this process: DNPROF_OUTPUT with %p expanded, made unique
 * for a child process of the one it was meant for (DNPROF_ROOT_PID), or
 * dnprof-<pid>.trace in the working directory. *exclusive: must not exist yet. */
void config_output_path(char *out, size_t cap, int *exclusive);

/* The process's command line, arguments separated by spaces. */
void config_cmdline(char *out, size_t cap);

/* DNPROF_SAMPLE's text ("cpu", "wall", "suspend"; "" or "0" off) as agent_config.sample. */
int config_sample_mode(const char *text);

/* DNPROF_FLUSH_MS, or 0 for the default. */
unsigned config_flush_ms(void);

#endif
