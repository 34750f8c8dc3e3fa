// legacy_scripts.cpp - loads tests/cpp/legacy_scripts/ (path compiled in as
// POLYLIMIT_LEGACY_SCRIPTS).
#include "legacy_scripts.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace pltest {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Loaded {
  std::string source, sha1, name;
  polylimit::scripts::Script script{};
};

}  // namespace

const polylimit::scripts::Script& legacy_script(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Loaded>> loaded;  // the Script's pointers point into these
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second->script;
  const std::string dir = POLYLIMIT_LEGACY_SCRIPTS;
  auto l = std::make_unique<Loaded>();
  l->name = name;
  // As core/cmake/embed_scripts.cmake joins the library's scripts.
  l->source = "#!lua\n" + read_file(dir + "/prelude.lua") + "\n" + read_file(dir + "/" + name + ".lua");
  std::istringstream sums(read_file(dir + "/SHA1SUMS"));
  std::string sha, file;
  while (sums >> sha >> file)
    if (file == name) l->sha1 = sha;
  if (l->sha1.size() != 40) throw std::runtime_error(dir + "/SHA1SUMS has no SHA1 for " + name);
  // The text's own SHA1 is checked where it is computed: ScriptCache refuses
  // a SCRIPT LOAD that answers another SHA1, and script_diff_tests compares
  // them up front.
  l->script = {l->name.c_str(), l->source.c_str(), l->sha1.c_str()};
  return loaded.emplace(name, std::move(l)).first->second->script;
}

polylimit::Argv legacy_args(const std::string& name, const polylimit::Argv& args) {
  const size_t k = name == "gcra" ? 3 : 2;  // values per limit in the library's layout
  if (args.size() < 3 + k) throw std::runtime_error("legacy_args: too few arguments for " + name);
  const size_t extra = (args.size() - 3) % k;  // 1: block_us follows the limits
  if (extra > 1) throw std::runtime_error("legacy_args: " + std::to_string(args.size()) + " arguments for " + name);
  const size_t n = (args.size() - 3 - extra) / k;
  polylimit::Argv old = {args[0], args[1], args[2], "", extra ? args.back() : std::string_view("0")};
  for (size_t i = 0; i < n; ++i) {
    const size_t b = 3 + k * i;
    if (k == 3)
      old.insert(old.end(), {"0", args[b], args[b + 1], args[b + 2]});
    else
      old.insert(old.end(), {args[b], args[b + 1], "0", "0"});
  }
  return old;
}

}  // namespace pltest
