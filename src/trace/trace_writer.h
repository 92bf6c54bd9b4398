/* trace_writer.h: writing a trace file (the agent's side of the format).
 *
 * Records are encoded into a caller's buffer with dnp_rec_encode(); whole chunks
 * are appended to the file with dnp_writer_append(), which is thread-safe and
 * writes each chunk with one write(2) so that a killed process leaves, at worst,
 * one torn chunk at the end. */
#ifndef DNP_TRACE_WRITER_H
#define DNP_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* Largest encoded record without a tail: tag, size, and up to 2 + DNP_MAX_VALUES varints. */
#define DNP_REC_MAX (2 + DNP_VARINT_MAX * (3 + DNP_MAX_VALUES))

/* Encodes one record: tag, body size, the n values as varints, then tail bytes.
 * Returns the bytes written to out, which must hold DNP_REC_MAX + tail_len. */
size_t dnp_rec_encode(uint8_t *out, uint8_t tag, const uint64_t *vals, unsigned n,
                      const void *tail, size_t tail_len);

typedef struct dnp_writer dnp_writer;

/* Creates the trace at path and writes its header. exclusive: fail if it exists
 * (O_EXCL) instead of replacing it. Never writes through a symbolic link: a link
 * at path is replaced by the trace (written beside it, renamed over it). The file
 * is created 0600, narrowed by the umask, never wider. On failure returns NULL and
 * puts a one-line reason naming the path in err. */
dnp_writer *dnp_writer_open(const char *path, int exclusive, uint64_t pid, char *err, size_t errlen);

/* Creates a file the agent writes (a trace, a heap snapshot) as traces are
 * created: never through a symbolic link (a link at path is replaced by a file
 * written beside it and renamed over it), 0600 narrowed by the umask.
 * exclusive: path must not exist. Returns the fd, or -1 with errno (ELOOP: a
 * link that could not be replaced). */
int dnp_file_create(const char *path, int exclusive);

/* Appends one chunk. Thread-safe. Returns 0, or a negative errno; after the first
 * failure the writer stays failed and every later call returns that error, and
 * a regular file is cut back to its last whole chunk. */
int dnp_writer_append(dnp_writer *w, uint32_t thread, uint64_t base_ns, const uint8_t *payload,
                      size_t len);

/* The errno of the first failure, 0 if none. */
int dnp_writer_error(const dnp_writer *w);
uint64_t dnp_writer_bytes(const dnp_writer *w);

/* Closes the file and frees the writer (NULL-tolerant). */
void dnp_writer_free(dnp_writer *w);

#endif
