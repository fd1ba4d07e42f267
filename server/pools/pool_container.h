// A Slurm pool's pilots may run their worker inside a container image (`container:` in the pools
// file): with pyxis (`srun --container-image=IMAGE --container-mounts=...`, enroot underneath) or
// with Apptainer (`srun apptainer exec --nv --bind ... IMAGE`). This file holds the key's values,
// the checks of each value (pure; the pools file reader positions the errors) and the launcher
// words that go between `srun` and the worker's own command line.
//
//   container:
//     runtime: pyxis                 # or apptainer
//     image: /shared/ablate.sqsh     # pyxis: a squashfs file or a registry image (nvcr.io#a/b:t);
//                                    # apptainer: a .sif file or a URI (docker://, oras://, ...)
//     mounts: [/data:/data:ro]       # SRC:DST[:ro|rw] (or PATH for PATH:PATH), absolute paths
//     args: []                       # passed to srun (pyxis) or to `apptainer exec`
//
// The worker's work_dir, and data_dir and token_file when set, are mounted at their own path
// unless a mount already covers them, so its outbox and results live on the node, not in the
// container. Apptainer gets --nv when the pool has GPUs (pyxis's enroot hooks add them by
// themselves).
//
// Core logic: no I/O.
#ifndef ABLATE_SERVER_POOLS_POOL_CONTAINER_H_
#define ABLATE_SERVER_POOLS_POOL_CONTAINER_H_

#include <string>
#include <string_view>
#include <vector>

namespace ablate {

enum class ContainerRuntime { kNone, kPyxis, kApptainer };

inline constexpr std::string_view kContainerRuntimes[] = {"pyxis", "apptainer"};

struct PoolContainerConfig {
  ContainerRuntime runtime = ContainerRuntime::kNone;  // kNone: the worker runs on the node
  std::string image;
  std::vector<std::string> mounts;  // as written, each passing ContainerMountProblem
  std::vector<std::string> args;    // extra words for srun (pyxis) or apptainer exec
};

// "pyxis" / "apptainer" → the runtime; kNone for anything else.
ContainerRuntime ParseContainerRuntime(std::string_view text);

// "" when `image` is usable by `runtime` (not kNone), else the problem in words: a file given by
// a relative path (pilots start in whatever folder the coordinator runs in, on another node), or
// for apptainer neither an absolute path nor a URI.
std::string ContainerImageProblem(ContainerRuntime runtime, std::string_view image);

// "" when `mount` is PATH or SRC:DST or SRC:DST:ro|rw with absolute paths and no comma (both
// runtimes split their mount lists on commas), else the problem in words.
std::string ContainerMountProblem(std::string_view mount);

// The words between `srun` and the worker's argv: for pyxis `--container-image=IMAGE
// [--container-mounts=A,B] ARGS...`; for apptainer `apptainer exec [--nv] [--bind A ...] ARGS...
// IMAGE`; nothing for kNone. `own_paths` (the worker's folders and files) are added as PATH:PATH
// mounts, after the configured ones, unless one of those already mounts a folder at or above it.
std::vector<std::string> ContainerLaunchWords(const PoolContainerConfig& container, bool with_gpus,
                                              const std::vector<std::string>& own_paths);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOL_CONTAINER_H_
