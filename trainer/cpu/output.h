// Whether an op overwrites its output or adds to it (backward ops accumulate by default; the
// model asks for kOverwrite where the destination would otherwise have to be zeroed first), and
// whether a stream op rounds what it writes to bf16. Shared by the CPU and CUDA twins.
#ifndef ABLATE_TRAINER_CPU_OUTPUT_H_
#define ABLATE_TRAINER_CPU_OUTPUT_H_

namespace ablate::cpu {

enum class Output { kOverwrite, kAdd };

// kBf16: a stream mix computes what PyTorch computes on bf16 tensors: its weights rounded to bf16
// before they multiply (a 0-dim fp32 tensor times a bf16 tensor), each product and the sum
// rounded to bf16 (round to nearest even). MODEL.md "Activation dtype".
enum class Rounding { kNone, kBf16 };

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_OUTPUT_H_
