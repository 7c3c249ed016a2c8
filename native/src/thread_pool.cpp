#include "hmllm/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hmllm {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, bool caller_works)
    : n_threads_(n_threads < 1 ? 1 : n_threads), caller_works_(caller_works) {
    for (int i = caller_works_ ? 1 : 0; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
    if (!caller_works_) leader_id_ = threads_[0].get_id();
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_flag_ = true;
        stop_.store(true);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
}

// Spins on `ready` (atomics only) for up to kSpinIters pauses, then sleeps on cv until it holds.
// A waker changes the atomics and then calls wake(cv), which takes the mutex before notifying, so
// a thread that checked `ready` under the mutex and went to sleep cannot miss it.
template <class Ready>
void ThreadPool::spin_then_wait(std::condition_variable& cv, Ready ready, bool spin) {
    for (int i = 0; spin && i < kSpinIters; ++i) {
        if (ready()) return;
        cpu_relax();
    }
    if (ready()) return;
    std::unique_lock<std::mutex> lock(mu_);
    cv.wait(lock, ready);
}

void ThreadPool::wake(std::condition_variable& cv) {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv.notify_all();
}

void ThreadPool::run_chunks() {
    for (;;) {
        int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
        if (c >= n_chunks_) break;
        (*fn_)(c);
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    const bool leader = !caller_works_ && index == 0;
    for (;;) {
        spin_then_wait(
            wake_,
            [&] {
                return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen ||
                       (leader && job_pending_.load(std::memory_order_acquire));
            },
            /*spin=*/true);
        if (stop_.load(std::memory_order_acquire)) return;
        if (leader && job_pending_.load(std::memory_order_acquire)) {
            job_pending_.store(false, std::memory_order_relaxed);
            try {
                (*job_)();
            } catch (...) {
                job_error_ = std::current_exception();
            }
            // The job's own steps are all finished; none of them is this thread's to take.
            seen = generation_.load(std::memory_order_acquire);
            job_done_.store(true, std::memory_order_release);
            wake(done_);
            continue;
        }
        seen = generation_.load(std::memory_order_acquire);
        if (each_) (*each_)(index);
        else run_chunks();
        if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) wake(done_);
    }
}

void ThreadPool::dispatch(int first_worker, bool caller_runs, const std::function<void(int64_t)>* fn,
                          const std::function<void(int)>* each, int64_t n_chunks) {
    const int helpers = static_cast<int>(threads_.size()) - first_worker;
    fn_ = fn;
    each_ = each;
    n_chunks_ = n_chunks;
    next_.store(0, std::memory_order_relaxed);
    busy_.store(helpers, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    wake(wake_);
    if (caller_runs) {
        if (each) (*each)(0);
        else run_chunks();
    }
    // A caller that works spins for the last chunks; one that only waits sleeps, as spinning would
    // take a core from the threads doing the work.
    spin_then_wait(done_, [&] { return busy_.load(std::memory_order_acquire) == 0; }, caller_runs);
    fn_ = nullptr;
    each_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n_chunks, const std::function<void(int64_t)>& fn) {
    if (n_chunks <= 0) return;
    const bool on_leader = !caller_works_ && std::this_thread::get_id() == leader_id_;
    const bool caller_runs = caller_works_ || on_leader;
    const int first = on_leader ? 1 : 0;
    if (static_cast<int>(threads_.size()) == first || (n_chunks == 1 && caller_runs)) {
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
        return;
    }
    dispatch(first, caller_runs, &fn, nullptr, n_chunks);
}

void ThreadPool::run(const std::function<void()>& fn) {
    if (caller_works_ || std::this_thread::get_id() == leader_id_) {
        fn();
        return;
    }
    job_ = &fn;
    job_error_ = nullptr;
    job_done_.store(false, std::memory_order_relaxed);
    job_pending_.store(true, std::memory_order_release);
    wake(wake_);
    // The caller (a shared libuv thread) sleeps right away rather than spin beside the workers.
    {
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [&] { return job_done_.load(std::memory_order_acquire); });
    }
    job_ = nullptr;
    if (job_error_) std::rethrow_exception(job_error_);
}

void ThreadPool::on_each_thread(const std::function<void(int)>& fn) {
    if (threads_.empty()) {
        fn(0);
        return;
    }
    dispatch(0, caller_works_, nullptr, &fn, 0);
}

}  // namespace hmllm
