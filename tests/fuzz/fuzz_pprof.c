/* fuzz_pprof.c: the pprof reader (src/export/pprof_read.c) and, on what it
 * reads, the OTLP encoder (src/cli/otlp_encode.c): the front end's code for
 * dnprof run/push --otlp, which reads each window's pprof back. The input is
 * a profile, gzip'd or not. Checks: a profile read is whole (its indexes
 * within its tables, as the encoder relies on), encodes, and the request
 * holds the dictionary's zero items. Seeds: tests/fuzz/corpus/pprof (windows
 * of the Scenarios program); dictionary: tests/fuzz/pprof.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dnp_pprof_data d;
    char err[256];
    /* the input as a backend's answer to a push, too */
    char why[256] = "";
    if (otlp_reply_rejected(data, size, why, sizeof why) != 0 && (!why[0] || strchr(why, '\n'))) {
        fprintf(stderr, "fuzz_pprof: an answer refused without one line saying why\n");
        abort();
    }
    if (dnp_pprof_read(data, size, &d, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) {
            fprintf(stderr, "fuzz_pprof: refused without one line saying why\n");
            abort();
        }
        return 0;
    }
    for (size_t i = 0; i < d.nsamples; i++)
        if (d.stack_at[i] > d.stack_at[i + 1]) {
            fprintf(stderr, "fuzz_pprof: a sample's stack out of order\n");
            abort();
        }
    dnp_pprof_data_free(&d);
    static window_file w;
    w.pid = 42;
    w.index = 1;
    w.start_ns = 1796221343803492758ull;
    w.duration_ns = 1000000000ull;
    w.nprof = 1;
    w.prof[0] = (window_profile){"cpu", (uint8_t *)data, size};
    otlp_attr attrs[2] = {{"service.name", "fuzz", 0}, {"process.pid", NULL, 42}};
    dnp_pb out = {0};
    if (otlp_encode(attrs, 2, &w, &out, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_pprof: a profile read did not encode: %s\n", err);
        abort();
    }
    free(out.p);
    return 0;
}
