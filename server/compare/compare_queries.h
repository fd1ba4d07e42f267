// Builds the comparison, records and export views of the store: the one place that turns stored
// runs into CompareSweepResponse, ListRecordsResponse and ExportedRun messages, shared by the gRPC
// handlers (server/rpc/ablate_service_compare.cc, thin) and the dashboard's HTTP API. The
// statistics themselves are server/stats (pure); this file only gathers rows and fills messages.
// Messages only: the comparison room links no gRPC.
//
// Which runs count. A variant's statistics use its succeeded runs only; queued, running, failed
// and cancelled runs appear in VariantComparison.counts but not in n. A succeeded run that never
// reached the target stays in n, adds to the loss statistics, and is left out of the time
// statistics, whose mean would otherwise be biased low by a lower bound (server/stats/
// variant_stats.h; CompareSweepResponse.method says the same to readers).
//
// Verdicts (server/stats/verdict.h has the rules in full):
//   baseline                      "baseline"; every variant of a sweep without one: "no baseline"
//   per metric (MetricDelta)      "faster"/"slower" (time) or "better"/"worse" (loss) when the
//                                 Holm-corrected Welch p < 0.05 and not underpowered; else
//                                 "underpowered" (fewer than 3 values on a side), "no data",
//                                 "never reached" (time: no run of the variant reached the
//                                 target), or "no difference"
//   VariantComparison.verdict     both metrics: the significant words joined, time first
//                                 ("faster, worse"), else the more cautious metric verdict
//
// Own runs of a record preset (ListRecords): succeeded runs of any sweep whose variant's config
// hash equals the preset's canonical config at some scale (full, small, tiny; seed excluded from
// the hash), i.e. the preset with no change at all, grouped by scale and hardware. Hardware is
// "cpu" for sweeps with gpus_per_run = 0, else "<gpus_per_run>x <model>" with the first GPU model
// of the worker that ran the succeeded attempt ("unknown GPU" when that worker is gone). Groups
// are also split by the sweep's dataset. Only groups like the record (full scale, a FineWeb
// dataset, target 3.28, 8 GPUs of a known model) get a ratio to the published time
// (like_for_like); the others say why not (not_comparable, e.g. "tiny scale, dataset
// debian-text, cpu").
//
// Blocks, the split and the confound check (CompareSweep): each variant carries steps to target
// and ms/step beside time, with their deltas and verdicts against the baseline, and its runs'
// nodes and hardware in dispatch order. The baseline and the ablations that do its work per step
// (DoesBaselineWork: only knobs that leave a step's work alone, StepWork, or a script ablation
// declared `same_work: true`) are checked for equal ms/step
// (server/stats/confound.h); when they differ, every ablation's time verdict is
// kConfoundedTimeVerdict and its combined verdict "confounded; steps: ...". A sequential sweep's
// time verdicts are its stopping rule's (server/stats/sequential_rule.h).
//
// Thread-safe as the Store is. Errors are the store's: NOT_FOUND for an unknown sweep, UNAVAILABLE
// and the like for database trouble.
#ifndef ABLATE_SERVER_COMPARE_COMPARE_QUERIES_H_
#define ABLATE_SERVER_COMPARE_COMPARE_QUERIES_H_

#include <cstdint>
#include <span>

#include "ablate/v1/client.pb.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/compare/run_outcome.h"
#include "server/core/model.h"
#include "server/stats/variant_stats.h"
#include "server/store/store.h"

namespace ablate {

// Whether variant `v` does its baseline's work per step, so that the confound check compares its
// ms/step with the baseline's: declared so (`v.same_work`, a script ablation's `same_work: true`),
// or every entry of its diff_json is a knob change that leaves a step's work alone
// (trainer/config/step_work.h). A script variant's changes (script, args, env, ...) are not
// knobs, so without the declaration it does not; neither does a variant whose diff is unreadable.
bool DoesBaselineWork(const Variant& v);

// Per-variant statistics of sweep `sweep_id`, baseline first, each ablation against the baseline,
// with verdicts and the method paragraph.
// `with`: imported sweeps (Sweep.imported) whose every variant is appended as an ablation named
// "<variant>@imported-<id>" and compared with this sweep's baseline the same way (Welch, Holm over
// all ablations, never paired by seed), with VariantComparison.imported set. Their time to
// target and ms/step are compared only when the importer's --hardware equals this sweep's own
// hardware; otherwise those verdicts are kNotComparableVerdict and only loss and steps are
// tested. They join neither the confound check nor the sequential rule. INVALID_ARGUMENT when a
// `with` sweep is not imported, has another target, or there are more than 8.
absl::StatusOr<v1::CompareSweepResponse> BuildSweepComparison(const Store& store, int64_t sweep_id,
                                                              std::span<const int64_t> with = {});

// Every published record, oldest first, each record with a preset beside this cluster's own
// runs of that preset.
absl::StatusOr<v1::ListRecordsResponse> BuildRecordsTable(const Store& store);

// Calls `emit` once per run of the sweep, in run id order, with the run (summary, attempts, full
// config with its seed) and every stored point of its current (or latest) attempt in step order.
// Stops early, returning OK, when `emit` returns false (the reader went away).
absl::Status ExportSweepRuns(const Store& store, int64_t sweep_id,
                             absl::FunctionRef<bool(const v1::ExportedRun&)> emit);

}  // namespace ablate

#endif  // ABLATE_SERVER_COMPARE_COMPARE_QUERIES_H_
