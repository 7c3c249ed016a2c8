// Worker threads created once per session. Work is split into more chunks than threads and
// handed out through an atomic counter, so on a big.LITTLE phone the faster cores simply take
// more chunks instead of everyone waiting for the slowest core.
//
// Decode runs ~150 parallel steps per token, each a few tens of microseconds, so a hand-off that
// sleeps (a futex wake, on a VM an inter-processor interrupt) costs as much as the step. Threads
// therefore spin for a short while (kSpinIters) on an atomic before they sleep on a condition
// variable, as ggml's thread pool does; and with an owned pool, run() moves a whole forward pass
// onto thread 0 (the leader), which then hands out steps to the others without waking anyone,
// so the caller sleeps once per pass instead of once per step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hmllm {

class ThreadPool {
public:
    // With caller_works, n_threads counts the calling thread, which runs chunks too (1 means no
    // extra threads). Without it the pool owns all n_threads, so they can be pinned and
    // prioritised once, and the caller (e.g. a shared libuv worker) only waits.
    explicit ThreadPool(int n_threads, bool caller_works = true);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls fn(chunk) for every chunk in [0, n_chunks) across the pool; returns when all are done.
    void parallel_for(int64_t n_chunks, const std::function<void(int64_t)>& fn);

    // Runs fn to completion where parallel_for is cheapest: on the caller when it works, else on
    // the leader thread, whose parallel_for calls it joins as a worker. The caller blocks; an
    // exception thrown by fn is rethrown here.
    void run(const std::function<void()>& fn);

    // Runs fn(thread_index) once on every thread that runs chunks (to set priority or affinity).
    void on_each_thread(const std::function<void(int)>& fn);

    // How many cpu_relax() an idle thread spins before it sleeps on the condition variable:
    // long enough to bridge the leader's serial work between two steps of one forward pass, so
    // that those hand-offs stay an atomic load, and short enough that a thread idle between
    // requests is asleep within ~0.1 ms. Counted in pauses, not read from a clock (no clock
    // call, no yield in the loop). Measured in Gemma 3 270M decode with 2 threads on the
    // x86_64 VM, where a PAUSE and the load take ~21 ns: of 11712 waits in 64 tokens, 1445-1792 slept
    // after 1024 pauses (21 us), 1065 after 2048, 228 after 3072, ~100 after 4096 (85 us): a
    // gap of 50-60 us recurs several times per token. aarch64's YIELD is cheaper, so the
    // same count spins for less time there.
    static constexpr int kSpinIters = 4096;

private:
    void worker(int index);
    void run_chunks();
    // One step for the threads waiting in worker() (all of them, or all but the leader when it
    // dispatches: first_worker 1): publish, join in if the caller runs chunks, wait for the rest.
    void dispatch(int first_worker, bool caller_runs, const std::function<void(int64_t)>* fn,
                  const std::function<void(int)>* each, int64_t n_chunks);
    template <class Ready>
    void spin_then_wait(std::condition_variable& cv, Ready ready, bool spin);
    void wake(std::condition_variable& cv);

    int n_threads_;
    bool caller_works_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable wake_, done_;
    bool stop_flag_ = false;
    std::atomic<bool> stop_{false};
    // The current step: published by a release store of generation_, read after an acquire load.
    std::atomic<uint64_t> generation_{0};
    const std::function<void(int64_t)>* fn_ = nullptr;
    const std::function<void(int)>* each_ = nullptr;
    int64_t n_chunks_ = 0;
    std::atomic<int64_t> next_{0};
    std::atomic<int> busy_{0};
    // The leader's job (run()), published the same way through job_pending_.
    const std::function<void()>* job_ = nullptr;
    std::exception_ptr job_error_;
    std::atomic<bool> job_pending_{false}, job_done_{false};
    std::thread::id leader_id_;
};

}  // namespace hmllm
