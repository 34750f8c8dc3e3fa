// legacy_scripts.h - the frozen scripts of tests/cpp/legacy_scripts/ (the
// library's scripts before the script-cost work), run with the KEYS and ARGV
// the current library builds: the baseline of the differential test and of
// the script benchmark.
#pragma once

#include <memory>
#include <string>

#include "scripts_generated.h"
#include "transport/transport.h"

namespace pltest {

// The frozen script of an algorithm (by the library script's name:
// "sliding_log", ...), joined as core/cmake/embed_scripts.cmake joins the
// library's, with its SHA1 from SHA1SUMS. Throws std::runtime_error when a
// file or its SHA1 is missing. A text that no longer matches SHA1SUMS is
// refused when it is loaded: ScriptCache checks the SHA1 SCRIPT LOAD answers.
const polylimit::scripts::Script& legacy_script(const std::string& name);

// The library's ARGV for script `name` in the frozen scripts' layout: op,
// cost, now_us, an unused token, block_us (0 for none), then four values per
// limit: limit, window_us, capacity, interval_us. The values the library no
// longer sends are the ones the frozen script of that algorithm never reads
// (GCRA's limit; the others' capacity and interval): they go as "0". The
// result views `args` and string literals only.
polylimit::Argv legacy_args(const std::string& name, const polylimit::Argv& args);

// A Transport that forwards to `inner` what its subclass does not change.
// No run_script_async: the base class's answer (false) sends async calls
// through run_script, so a subclass's run_script sees them too.
// No one_node() either (false): no keys calls, which the frozen scripts do
// not know, reach a subclass.
class ForwardingTransport : public polylimit::Transport {
 public:
  explicit ForwardingTransport(std::unique_ptr<polylimit::Transport> inner) : inner_(std::move(inner)) {}

  polylimit::ReplyPtr run_script(const polylimit::scripts::Script& script, const polylimit::Argv& keys,
                                 const polylimit::Argv& args) override {
    return inner_->run_script(script, keys, args);
  }
  std::vector<polylimit::ReplyPtr> run_scripts(const polylimit::scripts::Script& script,
                                               const std::vector<polylimit::ScriptCall>& calls,
                                               const polylimit::Durability& durable = {},
                                               std::vector<polylimit::Ack>* acks = nullptr) override {
    return inner_->run_scripts(script, calls, durable, acks);
  }
  polylimit::ReplyPtr run_command(std::string_view key, const polylimit::Argv& argv) override {
    return inner_->run_command(key, argv);
  }
  long noscript_reloads() const override { return inner_->noscript_reloads(); }
  void close() override { inner_->close(); }
  long evicting_nodes() override { return inner_->evicting_nodes(); }
  long connect_attempts() override { return inner_->connect_attempts(); }
  int command_timeout_ms() const override { return inner_->command_timeout_ms(); }

 protected:
  std::unique_ptr<polylimit::Transport> inner_;
};

// A Transport that sends each script call to `inner` with the frozen script
// of the same name in place of the library's and its arguments translated by
// legacy_args: everything else (keys, EVALSHA and NOSCRIPT handling, reply
// decoding) is the library's.
class LegacyTransport : public ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;

  polylimit::ReplyPtr run_script(const polylimit::scripts::Script& script, const polylimit::Argv& keys,
                                 const polylimit::Argv& args) override {
    polylimit::Argv old = legacy_args(script.name, args);
    return inner_->run_script(legacy_script(script.name), keys, old);
  }
  std::vector<polylimit::ReplyPtr> run_scripts(const polylimit::scripts::Script& script,
                                               const std::vector<polylimit::ScriptCall>& calls,
                                               const polylimit::Durability& durable = {},
                                               std::vector<polylimit::Ack>* acks = nullptr) override {
    std::vector<polylimit::ScriptCall> old = calls;
    for (polylimit::ScriptCall& c : old) c.args = legacy_args(script.name, c.args);
    return inner_->run_scripts(legacy_script(script.name), old, durable, acks);
  }
};

}  // namespace pltest
