// redlimit.h must compile as C++ with every warning an error.
#include "redlimit.h"

int headertest_cxx();
int headertest_cxx() {
  rl_client_options co = RL_CLIENT_OPTIONS_INIT;
  rl_limiter_options lo = RL_LIMITER_OPTIONS_INIT;
  return static_cast<int>(co.version + lo.version) + RL_VERSION_NUMBER;
}
