/* catchup.h: what an attached agent records of the state it arrived in. */
#ifndef DNP_CATCHUP_H
#define DNP_CATCHUP_H

/* Records Existing{AppDomain,Assembly,Module,Thread} for what exists now and a
 * note saying the start-up was not seen. Call inside ProfilerAttachComplete. */
void catchup_record(void);

#endif
