// error_code.h - the code (and message) of the polylimit::Error a call throws.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "polylimit/errors.h"

namespace pltest {

// Runs f, which must throw polylimit::Error; a call that does not throw is a
// test failure (and kInternal).
inline polylimit::ErrorCode code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const polylimit::Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no error";
  return polylimit::ErrorCode::kInternal;
}

}  // namespace pltest
