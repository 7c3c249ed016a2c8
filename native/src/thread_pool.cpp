#include "hmllm/thread_pool.h"

namespace hmllm {

ThreadPool::ThreadPool(int n_threads, bool caller_works)
    : n_threads_(n_threads < 1 ? 1 : n_threads), caller_works_(caller_works) {
    for (int i = caller_works_ ? 1 : 0; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
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
    for (;;) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        const auto* each = each_;
        lock.unlock();
        if (each) (*each)(index);
        else run_chunks();
        lock.lock();
        if (--busy_ == 0) done_.notify_one();
    }
}

void ThreadPool::parallel_for(int64_t n_chunks, const std::function<void(int64_t)>& fn) {
    if (n_chunks <= 0) return;
    if (threads_.empty() || (n_chunks == 1 && caller_works_)) {
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        fn_ = &fn;
        each_ = nullptr;
        n_chunks_ = n_chunks;
        next_.store(0, std::memory_order_relaxed);
        busy_ = static_cast<int>(threads_.size());
        ++generation_;
    }
    wake_.notify_all();
    if (caller_works_) run_chunks();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return busy_ == 0; });
    fn_ = nullptr;
}

void ThreadPool::on_each_thread(const std::function<void(int)>& fn) {
    if (!threads_.empty()) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            each_ = &fn;
            busy_ = static_cast<int>(threads_.size());
            ++generation_;
        }
        wake_.notify_all();
    }
    if (caller_works_ || threads_.empty()) fn(0);
    if (!threads_.empty()) {
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [&] { return busy_ == 0; });
        each_ = nullptr;
    }
}

}  // namespace hmllm
