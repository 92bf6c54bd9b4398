/* otlp.h: a window as an OTLP profiles request (otlp_encode.c), for the
 * OTLP sink (sink_otlp.c). */
#ifndef DNP_OTLP_H
#define DNP_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"
#include "windows_cli.h"

#define OTLP_MAX_ATTRS 96

/* A resource attribute: a string, or (str NULL) an integer. */
typedef struct otlp_attr {
    const char *key, *str;
    int64_t num;
} otlp_attr;

/* The window's profiles (each pprof's sample types, one Profile each) as
 * one ExportProfilesServiceRequest of opentelemetry-proto's
 * collector/profiles/v1development: one ResourceProfiles (attrs), one
 * ScopeProfiles (dnprof and its version), the dictionary they share. The
 * request into out (emptied first). 0, or -1 with one line in err (a
 * profile that does not read, no memory). */
int otlp_encode(const otlp_attr *attrs, size_t nattrs, const window_file *w, dnp_pb *out, char *err, size_t errlen);

/* The backend's answer (an ExportProfilesServiceResponse, n bytes, not
 * trusted): 0 when its partial_success rejected nothing, else -1 with why
 * (one line, with the backend's message). */
int otlp_reply_rejected(const uint8_t *p, size_t n, char *why, size_t whylen);

#endif
