// Lock rules as annotations (STYLE.md) for code built without abseil: the trainer builds alone on
// GPU machines (cmake -S trainer), so it cannot use absl/base/thread_annotations.h. Clang checks
// the attributes with -Wthread-safety (AblateCommon.cmake turns it on for clang builds); they are
// empty on other compilers. Header-only, compiler-only (common/portable.cmake's part of common/).
//
// libstdc++'s std::mutex carries no capability attribute, so clang cannot check members guarded
// by one; AnnotatedMutex is a std::mutex that it can. Code that has abseil uses absl::Mutex.
#ifndef ABLATE_COMMON_THREAD_ANNOTATIONS_H_
#define ABLATE_COMMON_THREAD_ANNOTATIONS_H_

#include <mutex>

#if defined(__clang__)
#define ABLATE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ABLATE_THREAD_ANNOTATION(x)
#endif

#define ABLATE_CAPABILITY(x) ABLATE_THREAD_ANNOTATION(capability(x))
#define ABLATE_SCOPED_CAPABILITY ABLATE_THREAD_ANNOTATION(scoped_lockable)
#define ABLATE_GUARDED_BY(x) ABLATE_THREAD_ANNOTATION(guarded_by(x))
#define ABLATE_PT_GUARDED_BY(x) ABLATE_THREAD_ANNOTATION(pt_guarded_by(x))
#define ABLATE_ACQUIRE(...) ABLATE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ABLATE_RELEASE(...) ABLATE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ABLATE_EXCLUSIVE_LOCKS_REQUIRED(...) \
  ABLATE_THREAD_ANNOTATION(exclusive_locks_required(__VA_ARGS__))

namespace ablate {

// A std::mutex the analysis knows as a capability. Not recursive; not copyable.
class ABLATE_CAPABILITY("mutex") AnnotatedMutex {
 public:
  AnnotatedMutex() = default;
  AnnotatedMutex(const AnnotatedMutex&) = delete;
  AnnotatedMutex& operator=(const AnnotatedMutex&) = delete;

  void Lock() ABLATE_ACQUIRE() { mu_.lock(); }
  void Unlock() ABLATE_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds an AnnotatedMutex for its scope (as std::lock_guard).
class ABLATE_SCOPED_CAPABILITY AnnotatedMutexLock {
 public:
  explicit AnnotatedMutexLock(AnnotatedMutex* mu) ABLATE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~AnnotatedMutexLock() ABLATE_RELEASE() { mu_->Unlock(); }
  AnnotatedMutexLock(const AnnotatedMutexLock&) = delete;
  AnnotatedMutexLock& operator=(const AnnotatedMutexLock&) = delete;

 private:
  AnnotatedMutex* const mu_;
};

}  // namespace ablate

#endif  // ABLATE_COMMON_THREAD_ANNOTATIONS_H_
