/* pprof.h: profiles in pprof's format (github.com/google/pprof, proto/profile.proto),
 * gzip-compressed as `go tool pprof`, Pyroscope and Grafana read them.
 *
 * Generic: a profile is weighted stacks. The caller names the sample types (one
 * value per type in every sample, e.g. "samples"/"count" and "alloc_space"/
 * "bytes"), then adds stacks of function names, innermost frame first, each with
 * its values. Functions and locations are interned (one location per function:
 * managed code has no stable addresses to give). Any profile of dnprof's can be
 * one: a call tree (calls, sampled allocations), CPU samples.
 *
 * The encoding is written here (a varint encoder for the handful of messages a
 * profile needs) rather than taken from protobuf-c: the format is stable and
 * small, and the front end keeps no generated code or library dependency for
 * it. Compression is zlib's. */
#ifndef DNP_PPROF_H
#define DNP_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "calltree.h"
#include "export.h"

typedef struct dnp_pprof dnp_pprof;

typedef struct dnp_pprof_type {
    const char *type, *unit; /* "alloc_space", "bytes" */
} dnp_pprof_type;

/* A new profile with ntypes sample types (at most 8); period_type may be NULL.
 * NULL when out of memory. */
dnp_pprof *dnp_pprof_new(const dnp_pprof_type *types, size_t ntypes, const dnp_pprof_type *period_type,
                         int64_t period);
/* Adds one sample: frames innermost first, values[ntypes]. 0, or -1 (no memory). */
int dnp_pprof_add(dnp_pprof *p, const char *const *frames, size_t nframes, const int64_t *values);
/* Optional: when the profile was taken and how long, in ns (0: unknown). */
void dnp_pprof_set_time(dnp_pprof *p, int64_t time_nanos, int64_t duration_nanos);
/* A comment on the whole profile (`go tool pprof -comments`); at most 4 are kept. */
void dnp_pprof_add_comment(dnp_pprof *p, const char *text);
/* The program, as the profile's first mapping (what go tool pprof shows as its
 * "File:"): from the trace's command line, "web.dll" for "dotnet web.dll ...",
 * else the executable's name. Before the first sample; NULL or "": nothing. */
void dnp_pprof_set_program(dnp_pprof *p, const char *cmdline);
/* Which sample type a viewer shows first (its index). */
void dnp_pprof_set_default(dnp_pprof *p, size_t type_index);
/* Writes the gzip-compressed profile. 0, or -1 with errno set. */
int dnp_pprof_write(dnp_pprof *p, FILE *out);
/* data[0..len) gzip-compressed to out (flushed). 0, or -1 with errno set. */
int dnp_gzip_write(const void *data, size_t len, FILE *out);
void dnp_pprof_free(dnp_pprof *p);

/* The uncompressed encoding, for tests: a malloc'd buffer in *out (free it). */
int dnp_pprof_encode(dnp_pprof *p, uint8_t **out, size_t *len);

/* A call tree as a pprof profile: each node with a weight of its own is one
 * sample, its path the stack. A --calls tree gives "calls"/"count" and
 * "time"/"nanoseconds"; a --sample tree "samples"/"count" (each stack's own
 * samples) and "cpu" or "wall"/"nanoseconds", its period the sampling period;
 * a weighted tree gives "samples"/"count" and its weight
 * in its unit (alloc_space/bytes for sampled allocations). */
int dnp_export_pprof(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);

/* ---- reading one back ---- */

/* A pprof profile read back, to be written again in another format (OTLP,
 * src/cli/otlp_encode.c): the fields dnprof's own profiles use (above), with
 * ids of mappings, locations and functions from 1 to their count (as
 * dnprof, go and most writers give them) and the first line of a location.
 * String indexes are checked against the table, ids against the tables. */
typedef struct dnp_pprof_str {
    const char *p; /* into the data's raw bytes; not NUL-terminated */
    size_t n;
} dnp_pprof_str;

typedef struct dnp_pprof_data {
    uint8_t *raw; /* the uncompressed profile */
    dnp_pprof_str *strs;
    size_t nstrs;
    uint64_t types[8][2]; /* sample types: type and unit, string indexes */
    size_t ntypes;
    uint64_t period_type[2];
    int64_t period, time_nanos, duration_nanos;
    uint64_t *map_file; /* mapping id - 1 -> its file's string index */
    size_t nmaps;
    uint64_t (*locs)[2]; /* location id - 1 -> {mapping id or 0, function id or 0} */
    size_t nlocs;
    uint64_t (*funcs)[3]; /* function id - 1 -> {name, system name, file name} string indexes */
    size_t nfuncs;
    uint64_t *stack;     /* every sample's location ids, innermost first, one after another */
    size_t *stack_at;    /* sample i's are stack[stack_at[i] .. stack_at[i + 1]) */
    int64_t *values;     /* sample i's are values[i * ntypes ...] */
    size_t nsamples;
} dnp_pprof_data;

/* Reads a profile (gzip-compressed or not, at most 256 MiB uncompressed)
 * into d. 0, or -1 with one line in err (d then holds nothing to free). */
int dnp_pprof_read(const uint8_t *data, size_t len, dnp_pprof_data *d, char *err, size_t errlen);
void dnp_pprof_data_free(dnp_pprof_data *d);

/* gz (a gzip stream) uncompressed into *out (malloc'd), at most max bytes:
 * 0; -1 corrupt or cut short; -2 larger than max, or no memory. */
int dnp_gunzip(const uint8_t *gz, size_t len, size_t max, uint8_t **out, size_t *outlen);

#endif
