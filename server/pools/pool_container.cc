// Container launchers for pilots: the checks of `container:` values and srun's extra words.
#include "server/pools/pool_container.h"

#include <algorithm>
#include <cctype>

namespace ablate {
namespace {

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t colon; (colon = s.find(':', start)) != std::string_view::npos; start = colon + 1) {
    parts.push_back(s.substr(start, colon - start));
  }
  parts.push_back(s.substr(start));
  return parts;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "docker:", "oci-archive:", "library:": a URI scheme as Apptainer reads image sources.
bool HasScheme(std::string_view image) {
  size_t colon = image.find(':');
  if (colon == 0 || colon == std::string_view::npos || !std::isalpha(uint8_t(image[0]))) {
    return false;
  }
  return std::all_of(image.begin(), image.begin() + colon, [](char c) {
    return std::islower(uint8_t(c)) || std::isdigit(uint8_t(c)) || c == '-' || c == '+' || c == '.';
  });
}

// Where `mount` appears inside the container ("/data" for "/srv/data:/data:ro").
std::string_view MountDestination(std::string_view mount) {
  std::vector<std::string_view> parts = SplitColons(mount);
  return parts.size() == 1 ? parts[0] : parts[1];
}

// Whether a mount at `dest` makes `path` visible at the same place.
bool Covers(std::string_view dest, std::string_view path) {
  while (dest.size() > 1 && dest.back() == '/') dest.remove_suffix(1);
  if (dest == "/" || dest == path) return true;
  return path.size() > dest.size() && path.substr(0, dest.size()) == dest &&
         path[dest.size()] == '/';
}

// The configured mounts, then `own_paths` that none of them covers (each once).
std::vector<std::string> AllMounts(const PoolContainerConfig& c,
                                   const std::vector<std::string>& own_paths) {
  std::vector<std::string> mounts = c.mounts;
  for (const std::string& path : own_paths) {
    if (path.empty()) continue;
    bool covered = std::any_of(mounts.begin(), mounts.end(), [&](const std::string& m) {
      return Covers(MountDestination(m), path);
    });
    if (!covered) mounts.push_back(path + ":" + path);
  }
  return mounts;
}

}  // namespace

ContainerRuntime ParseContainerRuntime(std::string_view text) {
  if (text == "pyxis") return ContainerRuntime::kPyxis;
  if (text == "apptainer") return ContainerRuntime::kApptainer;
  return ContainerRuntime::kNone;
}

std::string ContainerImageProblem(ContainerRuntime runtime, std::string_view image) {
  if (image.empty()) return "must not be empty";
  if (image[0] == '/') return "";
  if (runtime == ContainerRuntime::kApptainer) {
    if (HasScheme(image)) return "";
    return "'" + std::string(image) +
           "' is neither an absolute path to an image file (.sif, the same on every node) nor a "
           "URI such as docker://... or oras://...";
  }
  bool file_like = image[0] == '.' || image[0] == '~' || EndsWith(image, ".sqsh") ||
                   EndsWith(image, ".sqfs") || EndsWith(image, ".squashfs");
  if (!file_like) return "";  // a registry image: ubuntu:22.04, nvcr.io#nvidia/pytorch:24.01-py3
  return "'" + std::string(image) +
         "' is a relative path: give the squashfs file by its absolute path (the same on every "
         "node)";
}

std::string ContainerMountProblem(std::string_view mount) {
  const std::string quoted = "'" + std::string(mount) + "'";
  if (mount.find(',') != std::string_view::npos) {
    return quoted + " contains a comma (the runtimes split mount lists on commas)";
  }
  std::vector<std::string_view> parts = SplitColons(mount);
  if (parts.size() > 3) return quoted + " is not SRC:DST[:ro|rw]";
  for (size_t i = 0; i < std::min<size_t>(parts.size(), 2); ++i) {
    if (parts[i].empty() || parts[i][0] != '/') {
      return quoted + ": '" + std::string(parts[i]) + "' is not an absolute path (SRC:DST[:ro|rw])";
    }
  }
  if (parts.size() == 3 && parts[2] != "ro" && parts[2] != "rw") {
    return quoted + ": unknown mount option '" + std::string(parts[2]) + "'; use ro or rw";
  }
  return "";
}

std::vector<std::string> ContainerLaunchWords(const PoolContainerConfig& c, bool with_gpus,
                                              const std::vector<std::string>& own_paths) {
  std::vector<std::string> words;
  std::vector<std::string> mounts = AllMounts(c, own_paths);
  switch (c.runtime) {
    case ContainerRuntime::kNone:
      return words;
    case ContainerRuntime::kPyxis: {
      words.push_back("--container-image=" + c.image);
      std::string list;
      for (const std::string& m : mounts) list += (list.empty() ? "" : ",") + m;
      if (!list.empty()) words.push_back("--container-mounts=" + list);
      words.insert(words.end(), c.args.begin(), c.args.end());
      return words;
    }
    case ContainerRuntime::kApptainer:
      words = {"apptainer", "exec"};
      if (with_gpus) words.push_back("--nv");
      for (const std::string& m : mounts) words.insert(words.end(), {"--bind", m});
      words.insert(words.end(), c.args.begin(), c.args.end());
      words.push_back(c.image);
      return words;
  }
  return words;
}

}  // namespace ablate
