/* report_recorded.c: what a trace says was recorded (its config events), as
 * the calls report's JSON gives it (report.h). */
#include <stdio.h>

#include "calltree.h"
#include "export.h"
#include "report.h"
#include "settings.h"

/* "recorded": what the trace's config events say was recorded, or null: the
 * calls options (CallsConfig), the sampling (SampleConfig), the allocation
 * sampling (AllocSampling). */
void report_json_recorded(const dnp_calltree *ct, FILE *out) {
    if (!ct->has_config && !ct->sample_mode && !ct->alloc_source && !ct->calls_clock) {
        fputs(",\"recorded\":null", out);
        return;
    }
    const char *sep = "";
    fputs(",\"recorded\":{", out);
    if (ct->has_config) {
        fprintf(out, "\"mode\":%llu,\"allCode\":%s,\"include\":", (unsigned long long)ct->mode,
                ct->all_code ? "true" : "false");
        dnp_export_json_str(out, ct->include && *ct->include ? ct->include : NULL, 0);
        fputs(",\"exclude\":", out);
        dnp_export_json_str(out, ct->exclude && *ct->exclude ? ct->exclude : NULL, 0);
        sep = ",";
    }
    if (ct->calls_clock) {
        fprintf(out, "%s\"callsSampling\":{\"clock\":\"%s\",\"rateHz\":%llu,\"samples\":%llu,\"inAgent\":%llu,"
                "\"outside\":%llu}", sep, ct->calls_clock == DNP_SAMPLE_WALL ? "wall" : "cpu",
                (unsigned long long)ct->calls_rate, (unsigned long long)ct->calls_samples,
                (unsigned long long)ct->calls_in_agent, (unsigned long long)ct->calls_outside);
        sep = ",";
    }
    if (ct->sample_mode) {
        fprintf(out, "%s\"sample\":{\"mode\":\"%s\",\"rateHz\":%llu,\"periodNs\":%llu}", sep,
                report_sample_word(ct->sample_mode), (unsigned long long)ct->sample_rate,
                (unsigned long long)ct->sample_period_ns);
        sep = ",";
    }
    if (ct->async_stacks) {
        fprintf(out, "%s\"async\":{\"view\":\"%s\",\"resumes\":%llu,\"unknownCallers\":%llu}", sep,
                ct->physical ? "physical" : "logical", (unsigned long long)ct->async_resumes,
                (unsigned long long)ct->async_unknown);
        sep = ",";
    }
    if (ct->alloc_source)
        fprintf(out, "%s\"alloc\":{\"source\":\"%s\",\"meanBytes\":%llu}", sep,
                ct->alloc_source == 1 ? "AllocationSampled" : ct->alloc_source == 2 ? "AllocationTick" : "?",
                (unsigned long long)ct->alloc_mean_bytes);
    fputc('}', out);
}
