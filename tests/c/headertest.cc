// polylimit.h must compile as C++ with every warning an error.
#include "polylimit.h"

int headertest_cxx();
int headertest_cxx() {
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  return static_cast<int>(co.version + lo.version) + POLYLIMIT_VERSION_NUMBER;
}
