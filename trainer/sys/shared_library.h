// A shared library opened at run time (dlopen) with its entry points resolved by name. The
// trainer reaches cuBLASLt and NCCL this way instead of linking them, so that ablate-train starts
// and trains on the CPU on machines that have neither.
#ifndef ABLATE_TRAINER_SYS_SHARED_LIBRARY_H_
#define ABLATE_TRAINER_SYS_SHARED_LIBRARY_H_

#include <memory>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

class SharedLibrary {
 public:
  // Opens the first of `candidates` (file names or paths, as dlopen takes them) that loads.
  // Error: "cannot load <what> (<dlerror of each candidate>); <hint>".
  static Result<std::unique_ptr<SharedLibrary>> OpenFirst(const std::vector<std::string>& candidates,
                                                          const std::string& what,
                                                          const std::string& hint);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The candidate that loaded.
  const std::string& path() const { return path_; }

  // Points `fn` at the symbol `name`. Error: "<path> has no symbol <name>". `Fn` must be the
  // symbol's real type (use decltype of the header's declaration).
  template <class Fn>
  Status Resolve(const char* name, Fn* fn) const {
    *fn = reinterpret_cast<Fn>(Symbol(name));
    if (*fn == nullptr) return Error{path_ + " has no symbol " + name, ""};
    return {};
  }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* Symbol(const char* name) const;

  void* handle_;
  std::string path_;
};

// `soname` alone (the loader's search path), then `dir`/`soname` when `dir` is not empty.
std::vector<std::string> LibraryCandidates(const std::string& soname, const std::string& dir);

}  // namespace ablate

#endif  // ABLATE_TRAINER_SYS_SHARED_LIBRARY_H_
