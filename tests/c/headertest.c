/* redlimit.h must compile as strict C99 with every warning an error. */
#include "redlimit.h"

int headertest_c(void);
int headertest_c(void) {
    rl_client_options co = RL_CLIENT_OPTIONS_INIT;
    rl_limiter_options lo = RL_LIMITER_OPTIONS_INIT;
    rl_stats st = RL_STATS_INIT;
    rl_decision d;
    rl_error e;
    (void)d;
    (void)e;
    lo.algorithm = RL_ALG_GCRA;
    lo.burst = 5;
    lo.failure_policy = RL_FAIL_LOCAL;
    return (int)co.version + (int)lo.version + (int)st.version + RL_VERSION_NUMBER;
}
