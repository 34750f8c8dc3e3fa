/* polylimit.h must compile as strict C99 with every warning an error. */
#include "polylimit.h"

int headertest_c(void);
int headertest_c(void) {
    polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
    polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
    polylimit_stats st = POLYLIMIT_STATS_INIT;
    polylimit_decision d;
    polylimit_error e;
    (void)d;
    (void)e;
    lo.algorithm = POLYLIMIT_ALG_GCRA;
    lo.burst = 5;
    lo.failure_policy = POLYLIMIT_FAIL_LOCAL;
    return (int)co.version + (int)lo.version + (int)st.version + POLYLIMIT_VERSION_NUMBER;
}
