/* state.c - the state one run of a job shares between run.c, which fills it,
 * and verify.c and report.c, which read it: defined here, apart from both,
 * so that neither file depends on the other (iogen.h declares it). */
#include "iogen.h"

struct run_state run;
