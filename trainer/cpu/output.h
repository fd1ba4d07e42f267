// Whether an op overwrites its output or adds to it. Backward ops accumulate by default; the
// model asks for kOverwrite where the destination would otherwise have to be zeroed first.
#ifndef ABLATE_TRAINER_CPU_OUTPUT_H_
#define ABLATE_TRAINER_CPU_OUTPUT_H_

namespace ablate::cpu {

enum class Output { kOverwrite, kAdd };

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_OUTPUT_H_
