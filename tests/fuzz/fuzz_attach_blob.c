/* fuzz_attach_blob.c: the attach blob's parser (src/trace/attach_blob.c), which
 * the agent runs on what arrives in InitializeForAttach. A blob it accepts
 * must encode again to a blob that parses to the same fields. Seeds:
 * tests/fuzz/corpus/attach_blob; dictionary: tests/fuzz/attach_blob.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach_blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dnp_attach_blob b, again;
    char err[256];
    /* A copy of exactly size bytes: a read past the end is ASan's to see. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    err[0] = 0;
    if (dnp_attach_blob_parse(copy, size, &b, err, sizeof err) == 0) {
        static uint8_t buf[DNP_BLOB_MAX];
        long n = dnp_attach_blob_encode(&b, buf, sizeof buf);
        if (n < 0 || dnp_attach_blob_parse(buf, (size_t)n, &again, err, sizeof err) != 0 ||
            memcmp(&b, &again, sizeof b) != 0) {
            fprintf(stderr, "fuzz_attach_blob: an accepted blob does not round-trip (%s)\n", n < 0 ? "encode" : err);
            abort();
        }
    } else if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "fuzz_attach_blob: a refusal without one line of reason\n");
        abort();
    }
    free(copy);
    return 0;
}
