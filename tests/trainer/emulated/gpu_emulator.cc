// The fibers, barriers and warp collectives of gpu_emulator.h. A fiber that waits at a barrier
// is resumed only once the barrier's generation has moved on; a scheduling round in which no
// fiber can run while some have not finished is a deadlock (a barrier some thread never reaches).
#include "tests/trainer/emulated/gpu_emulator.h"

#include <algorithm>
#include <boost/context/fiber.hpp>

// AddressSanitizer follows the switches between fiber stacks only when told (its fiber API).
#if defined(__SANITIZE_ADDRESS__)
#define ABLATE_EMULATOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ABLATE_EMULATOR_ASAN 1
#endif
#endif
#ifdef ABLATE_EMULATOR_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#include <cstring>
#include <memory>
#include <vector>

namespace ablate::emulated {
namespace {

namespace ctx = boost::context;

constexpr size_t kStackBytes = 256 * 1024;
constexpr int kLanes = 32;

struct Barrier {
  int expected = 0;
  int arrived = 0;
  uint64_t generation = 0;
  int64_t sum = 0;     // of this round's contributions
  int64_t result = 0;  // the last completed round's sum
};

// Boost.Context's StackAllocator over one of the launch's stacks (allocated once, reused by
// every block).
class OwnStack {
 public:
  explicit OwnStack(char* base) : base_(base) {}
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = base_ + kStackBytes;
    return sc;
  }
  void deallocate(ctx::stack_context&) noexcept {}

 private:
  char* base_;
};

// A cp.async copy not landed yet: its bytes (read at issue: sources are kernel inputs) and
// where they go.
struct PendingCopy {
  void* dst;
  unsigned char bytes[16];
  int size;
};

struct Fiber {
  ctx::fiber handle;     // the suspended fiber (empty while it runs, and once it is done)
  ctx::fiber scheduler;  // while it runs: where it suspends to
  std::unique_ptr<char[]> stack;
  int thread = 0;
  bool done = false;
  const Barrier* waiting = nullptr;  // and the generation it waits to end
  uint64_t waiting_generation = 0;
  std::vector<PendingCopy> open;                 // issued since the last commit
  std::vector<std::vector<PendingCopy>> groups;  // committed, oldest first, not landed
};

// What one warp's lanes publish for a collective. Two sets, used by alternate collectives
// (the barrier's generation parity): a lane still reading one collective's set cannot be
// overtaken, since the next collective of the same parity needs it to arrive first.
struct WarpSlots {
  const __nv_bfloat16* address[kLanes];
  float value[kLanes];
  uint32_t a[kLanes][4];
  uint32_t b[kLanes][2];
  float c[kLanes][4];
};

struct Warp {
  Barrier barrier;
  WarpSlots slots[2];
  WarpSlots& Current() { return slots[barrier.generation % 2]; }
};

struct Block {
  uint3 index;
  bool aborting = false;  // a deadlock was found: every barrier lets its threads through
  int threads = 0;
  unsigned char* smem = nullptr;
  int smem_bytes = 0;
  const std::function<void()>* kernel = nullptr;
  std::vector<Fiber> fibers;
  int current = 0;
  Barrier barrier;
  std::vector<Warp> warps;
  EmulationMode mode;
  std::string error;  // the first misuse seen
};

Block* g_block = nullptr;

// Tells AddressSanitizer about a switch to the stack [bottom, bottom + size) (nothing without
// it). BeforeSwitch with fake == nullptr: the current fiber is ending.
struct StackBounds {
  const void* bottom = nullptr;
  size_t size = 0;
};
StackBounds g_scheduler_stack;  // the launching thread's, learned by each fiber's first switch

void BeforeSwitch([[maybe_unused]] void** fake, [[maybe_unused]] StackBounds to) {
#ifdef ABLATE_EMULATOR_ASAN
  __sanitizer_start_switch_fiber(fake, to.bottom, to.size);
#endif
}

void AfterSwitch([[maybe_unused]] void* fake, [[maybe_unused]] StackBounds* from) {
#ifdef ABLATE_EMULATOR_ASAN
  __sanitizer_finish_switch_fiber(fake, &from->bottom, &from->size);
#endif
}

Fiber& Me() { return g_block->fibers[size_t(g_block->current)]; }

void Fail(const std::string& what) {
  if (g_block->error.empty()) g_block->error = what;
}

// Arrives at `b` with `contribution` and returns once every thread of its scope has arrived;
// `last` says whether this thread completed the round (it runs on before any other).
int64_t Arrive(Barrier& b, int64_t contribution = 0, bool* last = nullptr) {
  if (last != nullptr) *last = false;
  if (g_block->aborting) return 0;
  uint64_t generation = b.generation;
  b.sum += contribution;
  if (++b.arrived == b.expected) {
    b.result = b.sum;
    b.sum = 0;
    b.arrived = 0;
    ++b.generation;
    if (last != nullptr) *last = true;
    return b.result;
  }
  Fiber& me = Me();
  me.waiting = &b;
  me.waiting_generation = generation;
  void* fake = nullptr;
  StackBounds from;
  BeforeSwitch(&fake, g_scheduler_stack);
  me.scheduler = std::move(me.scheduler).resume();
  AfterSwitch(fake, &from);
  me.waiting = nullptr;
  return b.result;
}

Warp& MyWarp() { return g_block->warps[size_t(Me().thread / kLanes)]; }
int MyLane() { return Me().thread % kLanes; }

void CheckShared(const void* p, int bytes, const char* op) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  if (c < g_block->smem || c + bytes > g_block->smem + g_block->smem_bytes) {
    Fail(std::string(op) + ": an address outside the block's shared memory");
  } else if ((c - g_block->smem) % bytes != 0) {
    Fail(std::string(op) + ": a shared-memory address not aligned to " + std::to_string(bytes));
  }
}

float Bf16(uint32_t bits16) {
  uint32_t f = bits16 << 16;
  float x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}

float Low(uint32_t pair) { return Bf16(pair & 0xffffu); }
float High(uint32_t pair) { return Bf16(pair >> 16); }

uint32_t PairAt(const __nv_bfloat16* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

uint32_t PairOf(const __nv_bfloat16& lo, const __nv_bfloat16& hi) {
  uint16_t l, h;
  std::memcpy(&l, &lo, 2);
  std::memcpy(&h, &hi, 2);
  return uint32_t(l) | (uint32_t(h) << 16);
}

void Ldsm(uint32_t (&r)[4], const __nv_bfloat16* p, bool trans) {
  CheckShared(p, 16, "ldmatrix");
  Warp& w = MyWarp();
  WarpSlots& s = w.Current();
  int lane = MyLane();
  s.address[lane] = p;
  Arrive(w.barrier);
  if (g_block->aborting) {
    r[0] = r[1] = r[2] = r[3] = 0;
    return;
  }
  int row = lane / 4, col = 2 * (lane % 4);
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat16* const* rows = s.address + 8 * i;  // row j of matrix i at rows[j]
    r[i] = trans ? PairOf(rows[col][row], rows[col + 1][row]) : PairAt(rows[row] + col);
  }
}

// Runs fiber f until it next suspends or ends.
void Resume(Fiber& f) {
  void* fake = nullptr;
  StackBounds from;
  BeforeSwitch(&fake, StackBounds{f.stack.get(), kStackBytes});
  f.handle = std::move(f.handle).resume();
  AfterSwitch(fake, &from);
}

// Runs one block to the end; false on a deadlock.
bool RunBlock(Block& block) {
  for (Fiber& f : block.fibers) {
    f.done = false;
    f.waiting = nullptr;
    f.open.clear();
    f.groups.clear();
    Fiber* self = &f;
    f.handle =
        ctx::fiber(std::allocator_arg, OwnStack(f.stack.get()), [self](ctx::fiber&& scheduler) {
          AfterSwitch(nullptr, &g_scheduler_stack);
          self->scheduler = std::move(scheduler);
          (*g_block->kernel)();
          self->done = true;
          BeforeSwitch(nullptr, g_scheduler_stack);
          return std::move(self->scheduler);
        });
  }
  for (;;) {
    bool ran = false;
    for (size_t i = 0; i < block.fibers.size(); ++i) {
      Fiber& f = block.fibers[i];
      if (f.done) continue;
      bool blocked = f.waiting != nullptr && f.waiting->generation == f.waiting_generation;
      if (blocked && !block.aborting) continue;
      ran = true;
      block.current = int(i);
      Resume(f);
      if (block.mode.schedule == Schedule::kLowestFirst) break;  // scan again from thread 0
    }
    if (ran) continue;
    if (std::all_of(block.fibers.begin(), block.fibers.end(),
                    [](const Fiber& f) { return f.done; })) {
      return !block.aborting;
    }
    // A deadlock: every barrier now lets its threads through, so each thread runs to its end
    // (collectives return without reading other lanes' slots); the launch reports it.
    block.aborting = true;
  }
}

}  // namespace

std::string Launch(dim3 grid, int threads, int smem_bytes, const std::function<void()>& kernel,
                   EmulationMode mode) {
  if (threads <= 0 || threads % kLanes != 0) return "threads must be a positive multiple of 32";
  Block block;
  block.threads = threads;
  block.smem_bytes = smem_bytes;
  std::vector<unsigned char> smem(size_t(smem_bytes) + 128);
  uintptr_t base = reinterpret_cast<uintptr_t>(smem.data());
  block.smem = smem.data() + (128 - base % 128) % 128;  // 128-byte aligned, as the GPU's
  block.kernel = &kernel;
  block.mode = mode;
  block.fibers.resize(size_t(threads));
  for (int i = 0; i < threads; ++i) {
    block.fibers[size_t(i)].thread = i;
    block.fibers[size_t(i)].stack.reset(new char[kStackBytes]);
  }
  block.warps.resize(size_t(threads / kLanes));
  for (Warp& w : block.warps) w.barrier.expected = kLanes;
  g_block = &block;
  std::string error;
  for (unsigned z = 0; z < grid.z && error.empty(); ++z) {
    for (unsigned y = 0; y < grid.y && error.empty(); ++y) {
      for (unsigned x = 0; x < grid.x && error.empty(); ++x) {
        block.index = uint3{x, y, z};
        block.barrier = Barrier{threads};
        block.aborting = false;
        for (Warp& w : block.warps) w.barrier = Barrier{kLanes};
        std::memset(block.smem, 0xAB, size_t(smem_bytes));  // stale bytes, never zeros
        std::string where = "block (" + std::to_string(x) + ", " + std::to_string(y) + ", " +
                            std::to_string(z) + ")";
        if (!RunBlock(block)) error = where + ": deadlock (a barrier not every thread reaches)";
        if (error.empty() && !block.error.empty()) error = where + ": " + block.error;
      }
    }
  }
  g_block = nullptr;
  return error;
}

int EmulatedPrimitives::Thread() { return Me().thread; }
uint3 EmulatedPrimitives::Block() { return g_block->index; }
unsigned char* EmulatedPrimitives::Smem() { return g_block->smem; }
void EmulatedPrimitives::Sync() { Arrive(g_block->barrier); }
int EmulatedPrimitives::SyncCount(bool pred) { return int(Arrive(g_block->barrier, pred ? 1 : 0)); }

float EmulatedPrimitives::ShflXor(float v, int lane_mask) {
  Warp& w = MyWarp();
  WarpSlots& s = w.Current();
  int lane = MyLane();
  s.value[lane] = v;
  Arrive(w.barrier);
  return g_block->aborting ? v : s.value[lane ^ lane_mask];
}

namespace {

void Issue(void* dst, const void* src, bool valid, int size) {
  PendingCopy copy{dst, {}, size};
  if (valid) std::memcpy(copy.bytes, src, size_t(size));  // else zeros
  if (g_block->mode.landing == CopyLanding::kAtIssue) {
    std::memcpy(dst, copy.bytes, size_t(size));
  } else {
    Me().open.push_back(copy);
  }
}

// Lands the oldest committed groups until at most `keep` are pending.
void Land(size_t keep) {
  std::vector<std::vector<PendingCopy>>& groups = Me().groups;
  size_t land = groups.size() > keep ? groups.size() - keep : 0;
  for (size_t g = 0; g < land; ++g) {
    for (const PendingCopy& c : groups[g]) std::memcpy(c.dst, c.bytes, size_t(c.size));
  }
  groups.erase(groups.begin(), groups.begin() + std::ptrdiff_t(land));
}

}  // namespace

void EmulatedPrimitives::CpAsync16(void* dst, const void* src, bool valid) {
  CheckShared(dst, 16, "cp.async");
  if (valid && reinterpret_cast<uintptr_t>(src) % 16 != 0) Fail("cp.async: unaligned source");
  Issue(dst, src, valid, 16);
}

void EmulatedPrimitives::CpAsync4(void* dst, const void* src, bool valid) {
  CheckShared(dst, 4, "cp.async");
  Issue(dst, src, valid, 4);
}

void EmulatedPrimitives::Commit() {
  Fiber& me = Me();
  me.groups.push_back(std::move(me.open));
  me.open.clear();
}

void EmulatedPrimitives::WaitAllButOne() { Land(1); }
void EmulatedPrimitives::WaitAll() { Land(0); }

void EmulatedPrimitives::Ldsm4(uint32_t (&r)[4], const __nv_bfloat16* p) { Ldsm(r, p, false); }
void EmulatedPrimitives::Ldsm4T(uint32_t (&r)[4], const __nv_bfloat16* p) { Ldsm(r, p, true); }

// Every lane publishes its fragments and accumulator; the lane that completes the round rebuilds
// A (16×16) and B (16×8) from the PTX layouts and writes every lane's four outputs.
void EmulatedPrimitives::Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  Warp& w = MyWarp();
  WarpSlots& s = w.Current();
  int lane = MyLane();
  std::memcpy(s.a[lane], a, sizeof(s.a[lane]));
  s.b[lane][0] = b0;
  s.b[lane][1] = b1;
  std::memcpy(s.c[lane], c, sizeof(s.c[lane]));
  bool last = false;
  Arrive(w.barrier, 0, &last);
  if (last) {
    float am[16][16], bm[16][8];
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, k2 = 2 * (l % 4);
      const uint32_t* f = s.a[l];
      am[g][k2] = Low(f[0]), am[g][k2 + 1] = High(f[0]);
      am[g + 8][k2] = Low(f[1]), am[g + 8][k2 + 1] = High(f[1]);
      am[g][k2 + 8] = Low(f[2]), am[g][k2 + 9] = High(f[2]);
      am[g + 8][k2 + 8] = Low(f[3]), am[g + 8][k2 + 9] = High(f[3]);
      bm[k2][g] = Low(s.b[l][0]), bm[k2 + 1][g] = High(s.b[l][0]);
      bm[k2 + 8][g] = Low(s.b[l][1]), bm[k2 + 9][g] = High(s.b[l][1]);
    }
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, n2 = 2 * (l % 4);
      for (int e = 0; e < 4; ++e) {
        int row = g + (e / 2) * 8, col = n2 + e % 2;
        float sum = 0.f;
        for (int k = 0; k < 16; ++k) sum += am[row][k] * bm[k][col];
        s.c[l][e] += sum;
      }
    }
  }
  std::memcpy(c, s.c[lane], sizeof(s.c[lane]));
}

}  // namespace ablate::emulated
