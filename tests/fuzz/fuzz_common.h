/* fuzz_common.h: what the libFuzzer harnesses share (docs/testing.md#fuzzing).
 *
 * The readers take a path: the input is written to a memfd once per run and
 * read back through /proc/self/fd/N, a regular file that can be read twice (the
 * streamed reports rewind it). The front end's commands are called in process,
 * as dnprof.c calls them, with stdout on /dev/null and their messages quiet
 * (fz_quiet); FUZZ_VERBOSE=1 in the environment keeps the messages. */
#ifndef DNP_FUZZ_COMMON_H
#define DNP_FUZZ_COMMON_H

#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct {
    int file_fd, verbose;
    FILE *devnull, *real_stderr;
    char path[64];
} fz = {-1, 0, NULL, NULL, ""};

/* Once, from LLVMFuzzerInitialize. */
static void fz_init(void) {
    fz.file_fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    fz.devnull = fopen("/dev/null", "we");
    fz.real_stderr = stderr;
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fz.file_fd < 0 || !fz.devnull || out < 0) {
        perror("fuzz: setting up");
        abort();
    }
    snprintf(fz.path, sizeof fz.path, "/proc/self/fd/%d", fz.file_fd);
    fflush(stdout);
    dup2(out, STDOUT_FILENO);
    close(out);
    const char *v = getenv("FUZZ_VERBOSE");
    fz.verbose = v && *v == '1';
}

/* Chunked formats (trace, heap snapshot) guard each chunk's payload with a
 * CRC-32, which a mutation almost always breaks: the reader would stop at the
 * first chunk and the fuzzer never get past it. So each chunk's CRC is set to
 * what its payload has, walking the chunks as the readers do (from the
 * header_size at byte 12, payload_size at byte 4 of a chunk header and the CRC
 * at byte 8), but for a CRC of 0 in the input, kept to reach the readers'
 * checksum failures. Returns a copy to free(). */
#include "trace_format.h"
static uint8_t *fz_fix_crcs(const uint8_t *data, size_t size, size_t chunk_header) {
    uint8_t *d = malloc(size ? size : 1);
    if (!d)
        abort();
    memcpy(d, data, size);
    if (size < 16)
        return d;
    size_t at = dnp_get_u32le(d + 12);
    while (at <= size && size - at >= chunk_header) {
        uint32_t len = dnp_get_u32le(d + at + 4);
        if (len > size - at - chunk_header)
            break;
        if (dnp_get_u32le(d + at + 8) != 0)
            dnp_put_u32le(d + at + 8, dnp_crc32(d + at + chunk_header, len));
        at += chunk_header + len;
    }
    return d;
}

/* The input as the file at fz.path. */
static void fz_set_file(const uint8_t *data, size_t size) {
    if (ftruncate(fz.file_fd, 0) != 0 || (size && pwrite(fz.file_fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz: writing the input");
        abort();
    }
}

/* The commands' messages (fprintf(stderr, ...)) go nowhere while they run: the
 * stream is swapped, not fd 2, which libFuzzer (its own copy of stderr, taken at
 * start) and the sanitizers (fd 2) still write their reports to. */
static void fz_quiet(int on) {
    if (!fz.verbose)
        stderr = on ? fz.devnull : fz.real_stderr;
}

/* A front-end command, as dnprof.c's run_command calls it (getopt reset). */
static int fz_cmd(int (*fn)(int, char **), char **argv) {
    int argc = 0;
    while (argv[argc])
        argc++;
    opterr = 0;
    optind = 0; /* GNU getopt: start over, forgetting a half-read argument */
    int rc = fn(argc, argv);
    fflush(stdout);
    clearerr(stdout);
    return rc;
}

#endif
