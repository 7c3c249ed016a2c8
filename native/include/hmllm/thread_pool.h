// Worker threads created once per session. Work is split into more chunks than threads and
// handed out through an atomic counter, so on a big.LITTLE phone the faster cores simply take
// more chunks instead of everyone waiting for the slowest core.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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

    // Runs fn(thread_index) once on every thread that runs chunks (to set priority or affinity).
    void on_each_thread(const std::function<void(int)>& fn);

private:
    void worker(int index);
    void run_chunks();

    int n_threads_;
    bool caller_works_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable wake_, done_;
    uint64_t generation_ = 0;
    int busy_ = 0;
    bool stop_ = false;
    const std::function<void(int64_t)>* fn_ = nullptr;
    const std::function<void(int)>* each_ = nullptr;
    int64_t n_chunks_ = 0;
    std::atomic<int64_t> next_{0};
};

}  // namespace hmllm
