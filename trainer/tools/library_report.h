// What ablate-train can reach at run time on this machine, for the worker's preflight
// (`ablate-worker --check`, worker/preflight.h): the CUDA version this binary was built with, the
// CUDA version the installed driver supports, and where cuBLASLt and NCCL load from, or why not.
// Printed by `ablate-train --libraries`. Loading is done exactly as a run does it (the same
// sonames and fallback directories, in this process's loader environment), so the answer is the
// one a run would get.
#ifndef ABLATE_TRAINER_TOOLS_LIBRARY_REPORT_H_
#define ABLATE_TRAINER_TOOLS_LIBRARY_REPORT_H_

#include <string>

namespace ablate {

// One JSON object (no newline):
//   {"backends": ["cpu", "cuda"],
//    "cuda": {"built": "13.0", "driver": "12.4" | null},              null without the CUDA backend
//    "cublaslt": {"found": true, "path": "/usr/.../libcublasLt.so.13"}
//              | {"found": false, "error": "cannot load cuBLASLt (...); put ..."},  null likewise
//    "nccl": {"found": true, "path": "...", "version": "2.28.3"} | {"found": false, "error": ...}
//          | null when built without NCCL}
// "driver" is null when no NVIDIA driver (libcuda) can be loaded. Loading cuBLASLt maps ~500 MB
// of code: this is for a one-shot check, not for a training process.
std::string LibraryReportJson();

}  // namespace ablate

#endif  // ABLATE_TRAINER_TOOLS_LIBRARY_REPORT_H_
