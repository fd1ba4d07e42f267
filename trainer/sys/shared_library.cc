// dlopen/dlsym behind SharedLibrary: the one place the trainer touches the dynamic loader.
#include "trainer/sys/shared_library.h"

#include <dlfcn.h>

namespace ablate {

Result<std::unique_ptr<SharedLibrary>> SharedLibrary::OpenFirst(
    const std::vector<std::string>& candidates, const std::string& what, const std::string& hint) {
  std::string tried;
  for (const std::string& path : candidates) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); handle != nullptr) {
      return std::unique_ptr<SharedLibrary>(new SharedLibrary(handle, path));
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why != nullptr ? why : path);
  }
  return Error{"cannot load " + what + " (" + tried + "); " + hint, ""};
}

SharedLibrary::~SharedLibrary() { dlclose(handle_); }

void* SharedLibrary::Symbol(const char* name) const { return dlsym(handle_, name); }

std::vector<std::string> LibraryCandidates(const std::string& soname, const std::string& dir) {
  std::vector<std::string> out = {soname};
  if (!dir.empty()) out.push_back(dir + "/" + soname);
  return out;
}

}  // namespace ablate
