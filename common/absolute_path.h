// Paths a user gives on a command line are made absolute once, where the flag is read, against
// the directory the program was started in (issue 41): the worker runs the trainer in a run's own
// folder, scripts run elsewhere again, and a path stored or handed on must mean the same there.
// Pure C++ (common/portable.cmake); the CLI11 side is cli_path_flag.h.
#ifndef ABLATE_COMMON_ABSOLUTE_PATH_H_
#define ABLATE_COMMON_ABSOLUTE_PATH_H_

#include <string>

namespace ablate {

enum class PathKind {
  kFile,     // any path: made absolute
  kProgram,  // a program: a bare name is looked up on $PATH later, so only a path with a '/'
};

// `path` against the current directory, with "." components dropped ("./a" -> "CWD/a"); ".."
// is kept, since a symlink before it makes its meaning the file system's. "" and "-" (standard
// input or output) come back unchanged, and so does a kProgram name without a '/'.
std::string AbsolutePath(const std::string& path, PathKind kind = PathKind::kFile);

}  // namespace ablate

#endif  // ABLATE_COMMON_ABSOLUTE_PATH_H_
